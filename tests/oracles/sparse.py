"""Fault gauges published only in the hours they are non-zero, and why the alarms cannot tell.

CloudWatch bills a custom metric for each hour it is published
(https://aws.amazon.com/cloudwatch/pricing/: "metrics are prorated by the hour"), and the fault
gauges (uncorrectable ECC counts, throttle flags, pending row remaps) are zero in almost every
hour of a month. Their alarms treat missing data as not breaching
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html#alarms-and-missing-data),
and a zero sample does not breach them either, so a zero can be left out where the alarm would
read the period without it the same way.

The policy the exporter follows (real time, so it cannot wait for the hour to end): a series'
zero samples are held back until the first non-zero sample of the clock hour; then the samples
of that alarm period so far are sent with their own timestamps (EMF takes past timestamps),
and every sample after it to the end of the hour. An all-zero period before it is then missing
instead of zero (both not breaching), and the period holding the first non-zero sample, and
every one after it that hour, has exactly the samples it had. ``tests/unit/cli/backtest/
test_sparse.py`` backtests the alarms over a history with and without the left-out samples.
"""

from collections import defaultdict
from collections.abc import Collection, Iterable

from cli.backtest.history import Dimensions, Sample

HOUR = 3600


def published(
    samples: Iterable[Sample], metrics: Collection[str], *, period_s: int
) -> list[Sample]:
    """The samples the exporter sends: ``metrics``' series only from the start of the period
    of their first non-zero sample in each hour; other metrics' samples all. ``period_s`` is
    the longest period of the alarms on these metrics (it must divide the hour)."""
    kept: list[Sample] = []
    series: dict[tuple[str, str, Dimensions, int], list[Sample]] = defaultdict(list)
    for s in samples:
        if s.metric in metrics:
            series[(s.namespace, s.metric, s.dimensions, int(s.timestamp // HOUR))].append(s)
        else:
            kept.append(s)
    for hour in series.values():
        first = min((s.timestamp for s in hour if s.value != 0), default=None)
        if first is None:
            continue
        since = first - first % period_s
        kept += [s for s in hour if s.timestamp >= since]
    return sorted(kept, key=lambda s: s.timestamp)
