"""Which EBS series to fetch, at which period and statistic, from what each rule reads.

The hourly rules (idle days, saturated hours, p99 sizing) read hourly IOPS and throughput:
each is one metric math series (reads + writes, summed by CloudWatch) instead of two. The
others are screened with one point over the window, exactly:

- burst credits: the minimum of the hourly minima is the window's ``Minimum``;
- limit-exceeded checks: no hour has a maximum above 0 iff the window's ``Maximum`` is 0;
- queue length: an hourly average is at most the window's ``Maximum``, so when that is within
  the limit the p95 is too, and the rule cannot fire.

Only a volume whose screen could fire gets those series hourly, in a second pass.
"""

from collections.abc import Mapping, Sequence
from typing import Final

from lambdas.shared.metric_fetcher import MetricQuery, math
from lambdas.storage_analyzer.ebs_analysis import EbsThresholds, Volume, VolumeMetrics, queue_limit

HOURLY: Final = 3600
#: Reads + writes, a missing datapoint of either read as 0 (``FILL(m, 0)``): metric math
#: combines series timestamp by timestamp, so without FILL an hour with reads but no write
#: datapoint would have no total (FILL and arithmetic on time series:
#: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html).
TOTAL: Final = "FILL({0}, 0) + FILL({1}, 0)"
#: The fields read as TOTALs: FILL gives them a value in every hour of the window, the hours
#: before the volume existed too (VolumeMetrics.since cuts those).
FILLED: Final = ("read_ops", "read_bytes")
NAMESPACE: Final = "AWS/EBS"
#: Burst balance exists only for volumes that burst.
BURSTING_TYPES: Final = frozenset({"gp2", "st1", "sc1"})
#: (field of VolumeMetrics, metric of the window screen, its statistic)
SCREENED: Final = (
    ("queue_length", "VolumeQueueLength", "Maximum"),
    ("iops_exceeded", "VolumeIOPSExceededCheck", "Maximum"),
    ("throughput_exceeded", "VolumeThroughputExceededCheck", "Maximum"),
)
#: The statistic each screened field is read at, hourly, when its screen could fire.
HOURLY_STAT: Final = {
    "queue_length": "Average",
    "iops_exceeded": "Maximum",
    "throughput_exceeded": "Maximum",
}


def _metric(volume: Volume, name: str, stat: str, period_s: int, field: str) -> MetricQuery:
    dims = (("VolumeId", volume.volume_id),)
    return MetricQuery((volume.volume_id, field), NAMESPACE, name, dims, stat, period_s)


def _total(volume: Volume, field: str, read: str, write: str) -> MetricQuery:
    inputs = (
        _metric(volume, read, "Sum", HOURLY, field),
        _metric(volume, write, "Sum", HOURLY, field),
    )
    return math((volume.volume_id, field), TOTAL, inputs, HOURLY)


def first_pass(volume: Volume, window_s: int) -> list[MetricQuery]:
    """Hourly IOPS and throughput totals, and the window screens."""
    ops, read_bytes = FILLED
    queries = [
        _total(volume, ops, "VolumeReadOps", "VolumeWriteOps"),
        _total(volume, read_bytes, "VolumeReadBytes", "VolumeWriteBytes"),
    ]
    queries += [_metric(volume, m, s, window_s, f) for f, m, s in SCREENED]
    if volume.volume_type in BURSTING_TYPES:
        queries.append(_metric(volume, "BurstBalance", "Minimum", window_s, "burst_balance"))
    return queries


def could_fire(volume: Volume, screened: VolumeMetrics, t: EbsThresholds) -> list[str]:
    """The screened fields whose window point cannot settle the rule: they need hours."""
    fields = []
    if screened.queue_length and max(screened.queue_length) > queue_limit(volume, t):
        fields.append("queue_length")
    fields += [f for f in ("iops_exceeded", "throughput_exceeded") if any(getattr(screened, f))]
    return fields


def second_pass(volume: Volume, fields: list[str]) -> list[MetricQuery]:
    names = {f: m for f, m, _ in SCREENED}
    return [_metric(volume, names[f], HOURLY_STAT[f], HOURLY, f) for f in fields]


def passes(
    volumes: Sequence[Volume],
    screened: Mapping[str, VolumeMetrics],
    window_s: int,
    t: EbsThresholds = EbsThresholds(),  # noqa: B008
) -> tuple[list[MetricQuery], list[MetricQuery]]:
    """Every query the rules need, by pass: the first pass of every volume, and the second
    pass of those whose window screens (``screened``, by volume id) could fire."""
    first = [q for v in volumes for q in first_pass(v, window_s)]
    second = [
        q
        for v in volumes
        for q in second_pass(v, could_fire(v, screened.get(v.volume_id, VolumeMetrics()), t))
    ]
    return first, second
