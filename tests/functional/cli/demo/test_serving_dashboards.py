"""The serving dashboards on the demo's serving week (OTel mode, as ``make demo-otel``'s step 11
reads them): every widget of ``serving`` and of ``serving-deployment`` (typed with the demo's
vLLM Deployment) run on a real Prometheus over the day that ends with the replay, and each
draws. The replicas' series are sampled every minute over the days the dashboards show
(cli/demo/serving.py ``SCRAPED_FROM_DAY``): with one sample an hour, no five-minute rate or
quantile had data, and the deployment's widgets none at all.

Hand figures: a busy replica's first tokens are 0.12 s typical, 99% of them within the
0.25 s bucket (cli/demo/serving.py ``SPREAD``: half at 0.06 s, 49% at 0.12 and 0.24 s), so
the p99 is about that bucket's upper bound, 0.25 s; the idle replica's A10G draws 8% of its
300 W, 24 W."""

import math
from collections.abc import Iterator

import pytest

from cli.demo.command import DEMO_REGION
from cli.demo.dashboards import DashboardView
from cli.demo.exporter import replay_window
from cli.demo.promql import serving
from cli.demo.realistic.serving import IDLE_REPLICA, KSERVE, VLLM
from cli.demo.serving import GPU_WATTS, IDLE, SCRAPED_FROM_DAY, serving_week_samples
from cli.demo.storage import DEMO_CLUSTER
from cli.demo.week import THIS_WEEK
from dashboards.serving import DEPLOYMENT_DASHBOARD, SERVING_DASHBOARD
from gpu_insights_agent.contract.resource_names import dashboard_name
from tests.functional.cli.demo.otel_views import otel_views

pytestmark = pytest.mark.promql_engine

DAY = 86_400


@pytest.fixture(scope="module")
def views() -> Iterator[dict[str, DashboardView]]:
    with serving(serving_week_samples(DEMO_CLUSTER, gpus=True), DEMO_REGION) as client:
        found = otel_views(client)
        yield {v.name: v for v in found}


def _shown(view: DashboardView) -> dict[str, dict[str, float]]:
    return {w.title: {line.label: line.value for line in w.lines} for w in view.widgets}


def test_the_dashboards_day_is_in_the_days_sampled_every_minute() -> None:
    assert replay_window()[1] - DAY >= THIS_WEEK.start + SCRAPED_FROM_DAY * DAY


def test_every_serving_widget_draws_each_model(views: dict[str, DashboardView]) -> None:
    view = views[dashboard_name(DEMO_CLUSTER, SERVING_DASHBOARD)]
    drawn = {w.title: w.series for w in view.widgets}
    # 19 and the drift row's 3 (docs/drift.md).
    assert len(drawn) == 22
    assert [title for title, series in drawn.items() if not series] == []
    shown = _shown(view)
    assert list(shown["Models serving"].values()) == [2.0]
    # None beyond the ten busiest: a 0 drawn, not "no data".
    assert list(shown["Models not drawn (beyond the 10 busiest)"].values()) == [0.0]
    for title in ("Requests a second, 10 models", "Time to first token p99 (s), 10 models"):
        models = {label.split()[-1] for label in shown[title]}
        assert models == {VLLM.model, KSERVE.model}, title
    # 0.2562, not 0.25: a minute's share of a night hour's requests in the bucket is not whole
    # (58.8 of 120 at 0.12 and 0.24 s), so some windows' 99th request falls just past it.
    for p99 in shown["Time to first token p99 (s), 10 models"].values():
        assert round(p99, 4) == 0.2562
    # The day's mean: 5 a second a busy replica in working hours, 2 at night (cli/demo/serving.py
    # DAY_REQUESTS_PER_HOUR, NIGHT_REQUESTS_PER_HOUR); Llama's Deployment has two busy replicas.
    requests = {k.split()[-1]: v for k, v in shown["Requests a second, 10 models"].items()}
    assert requests == {VLLM.model: pytest.approx(6.25), KSERVE.model: pytest.approx(3.125)}
    assert set(shown["Errors (% of finished requests)"].values()) == {0.0}


def test_every_deployment_widget_draws_the_deployments_replicas(
    views: dict[str, DashboardView],
) -> None:
    view = views[dashboard_name(DEMO_CLUSTER, DEPLOYMENT_DASHBOARD)]
    drawn = {w.title: w.series for w in view.widgets}
    assert len(drawn) == 8
    assert [title for title, series in drawn.items() if not series] == []
    shown = _shown(view)
    replicas = {pod.name for pod in VLLM.pods}
    busy = replicas - {IDLE_REPLICA.name}

    def pods(title: str) -> set[str]:
        return {next(p for p in replicas if p in label) for label in shown[title]}

    # The idle replica finished no request: a latency of nothing is no number.
    ttft = shown["Time to first token p99 (s), per replica"]
    assert {p for p in replicas for k, v in ttft.items() if p in k and not math.isnan(v)} == busy
    assert pods("Requests running, per replica") == replicas
    power = {next(p for p in replicas if p in k): v for k, v in shown[
        "GPU power per replica (W, DCGM)"].items()}  # fmt: skip
    assert set(power) == replicas
    assert power[IDLE_REPLICA.name] == pytest.approx(IDLE.power_percent / 100 * GPU_WATTS)
    # The exporter's power against the limit, its GPU attributed to the replica: 8%.
    limit = shown["GPU power against the limit per replica (%, the busiest GPU)"]
    idle = [v for k, v in limit.items() if IDLE_REPLICA.name in k]
    assert idle == [pytest.approx(IDLE.power_percent)]
