"""The demo's week (cli/demo_week.py) as OTel Container Insights sends it: each GPU's DCGM
series every 30 seconds, labelled as CloudWatch's PromQL gives them (tests/realistic/otel.py),
the pod's labels on the samples of the hours a pod holds the GPU; a lost GPU sends nothing."""

from collections.abc import Iterator

from cli.demo_week import GPUS, HOURS, POWER_LIMIT_W, THIS_WEEK, WeekPlan, _behaviour
from lambdas.shared.dcgm import DCGM_POWER, DCGM_UTIL
from tests.prometheus import Sample
from tests.realistic import otel

#: Scrapes land mid-interval, never on an hour's edge (the scraper's phase is its own).
PHASE_S = 15.0


def week_samples(
    cluster: str,
    plan: WeekPlan = THIS_WEEK,
    hours: int = HOURS,
    interval: int = otel.SCRAPE_INTERVAL_S,
) -> Iterator[Sample]:
    """``interval``: the add-on's ``otelContainerInsights.metricResolution`` ("<N>s", 30 s by
    default); a share of an hour is a count of samples over a full hour's, whatever it is."""
    for hour in range(hours):
        for node, gpu in GPUS:
            s = _behaviour(node, gpu, hour, plan)
            if s.power is None:
                continue
            labels = otel.dcgm_promql_labels(cluster, node, gpu, s.pod)
            start = plan.start + hour * 3600 + PHASE_S
            watts = s.power / 100 * POWER_LIMIT_W
            for i in range(3600 // interval):
                at = start + i * interval
                yield DCGM_UTIL, labels, at, s.sm or 0.0
                yield DCGM_POWER, labels, at, watts
