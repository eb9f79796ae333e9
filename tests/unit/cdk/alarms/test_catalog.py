import math
from dataclasses import replace

import pytest

from cdk.alarms.catalog import (
    AlarmSettings,
    AlarmSettingsError,
    alarm_sizing,
    gpu_alarms,
    low_power_alarm,
)
from cdk.alarms.model import BreachCount, Comparison, InsightsQuery, MissingData, Severity
from cdk.alarms.sizing import CAP_ALARM_SERIES, MAX_CONTRIBUTORS_IN_ALARM


def _by_key(**kwargs: object) -> dict:  # type: ignore[type-arg]
    """The GPU alarms (the job alarms are tests/unit/cdk/alarms/test_jobs.py's)."""
    kwargs = {"jobs": None, **kwargs}
    return {a.key: a for a in gpu_alarms(AlarmSettings(cluster_name="train", **kwargs))}  # type: ignore[arg-type]


def test_exporter_alarms_and_their_defaults() -> None:
    alarms = _by_key()
    assert sorted(alarms) == sorted(
        ["gpu-low-power", "gpu-xid-fatal", "gpu-xid", "gpu-lost", "gpu-ecc-uncorrected",
         "gpu-thermal-throttling", "gpu-power-brake", "gpu-xid-host-log", "gpu-silent",
         # each multi time series kind's fleet count (its contributors' cap)
         "gpu-low-power-at-cap", "gpu-lost-at-cap", "gpu-ecc-uncorrected-at-cap",
         "gpu-thermal-throttling-at-cap", "gpu-power-brake-at-cap", "gpu-silent-at-cap"]
    )  # fmt: skip
    low = alarms["gpu-low-power"]
    assert (low.threshold, low.comparison, low.period_s) == (30.0, Comparison.LESS, 300)
    assert (low.evaluation_periods, low.datapoints_to_alarm) == (12, 12)
    assert low.missing_data is MissingData.NOT_BREACHING
    assert low.severity is Severity.WARNING
    fatal = alarms["gpu-xid-fatal"]
    assert (fatal.period_s, fatal.evaluation_periods, fatal.threshold) == (60, 1, 1)
    assert fatal.severity is Severity.CRITICAL
    thermal = alarms["gpu-thermal-throttling"]
    assert (thermal.evaluation_periods, thermal.threshold) == (6, 0.5)


def test_low_power_query_returns_one_series_per_in_use_gpu() -> None:
    """A multi time series alarm: GROUP BY without LIMIT 1, each series a contributor named
    by ClusterName, NodeName, GpuIndex ("Create an alarm based on a Multi Time Series Metrics
    Insights query",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/multi-time-series-alarm.html)."""
    spec = _by_key()["gpu-low-power"]
    assert isinstance(spec.metric, InsightsQuery)
    assert spec.metric.sql() == (
        'SELECT MAX(gpu_allocated_power_utilization) FROM SCHEMA("GpuInsights", ClusterName, '
        "GpuIndex, NodeName, Shard) WHERE ClusterName = 'train' AND Shard = '0' "
        "GROUP BY ClusterName, NodeName, GpuIndex ORDER BY MAX() ASC"
    )
    assert spec.multi_series
    assert spec.kind == "gpu-low-power"


def test_per_gpu_kinds_get_one_alarm_per_shard_and_none_names_a_node() -> None:
    alarms = gpu_alarms(AlarmSettings(cluster_name="train", shards=25, jobs=None))
    per_gpu = [a for a in alarms if a.multi_series]
    assert not [a for a in per_gpu if a.counts]  # a fleet count is one series
    kinds = {a.kind for a in per_gpu}
    assert kinds == {"gpu-low-power", "gpu-lost", "gpu-ecc-uncorrected",
                     "gpu-thermal-throttling", "gpu-power-brake", "gpu-silent"}  # fmt: skip
    # gpu-silent is one alarm whatever the shards: only silent GPUs have its series.
    assert len(per_gpu) == 5 * 25 + 1
    assert len({a.key for a in alarms}) == len(alarms)
    lost_7 = next(a for a in per_gpu if a.key == "gpu-lost-shard-07")
    assert isinstance(lost_7.metric, InsightsQuery)
    assert ("Shard", "7") in lost_7.metric.where
    assert "shard 7 of 25" in lost_7.description
    assert all(a.metric.group_by == ("ClusterName", "NodeName", "GpuIndex") for a in per_gpu)  # type: ignore[union-attr]


def test_alarm_sizing_for_ten_thousand_gpus_fits_the_default_quota() -> None:
    """200 Metrics Insights alarms per account and Region by default ("Limits",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-limits.html)."""
    gpus_only = AlarmSettings(cluster_name="train", jobs=None)
    sizing = alarm_sizing(gpus_only, 10_000)
    assert (sizing.shards, sizing.insights_alarms, sizing.quota) == (25, 132, 200)
    assert sizing.fits_default_quota
    big = alarm_sizing(gpus_only, 20_000)
    assert (big.shards, big.insights_alarms, big.fits_default_quota) == (50, 257, False)
    assert alarm_sizing(gpus_only, 64).insights_alarms == 6 + 6  # and their 6 fleet counts
    # docs/alarms.md's sizing table: 15,200 GPUs is the most that fits without the job alarms.
    most = alarm_sizing(gpus_only, 15_200)
    assert (most.shards, most.insights_alarms, most.fits_default_quota) == (38, 197, True)
    over = alarm_sizing(gpus_only, 15_201)
    assert (over.shards, over.insights_alarms, over.fits_default_quota) == (39, 202, False)
    assert alarm_sizing(gpus_only, 2_000).insights_alarms == 32


def test_the_job_alarms_take_54_of_the_quota_whatever_the_fleet() -> None:
    """Six kinds in eight job alarm shards: 2,000 concurrent jobs are 250 a query; and each
    kind's fleet count, 54 in all."""
    with_jobs = AlarmSettings(cluster_name="train")
    assert alarm_sizing(with_jobs, 64).insights_alarms == 12 + 48 + 6
    ten = alarm_sizing(with_jobs, 10_000)
    assert (ten.insights_alarms, ten.job_alarms, ten.fits_default_quota) == (186, 54, True)
    assert "(54 of them for training jobs)" in ten.line()
    # docs/alarms.md's sizing table: 10,800 GPUs is the most that fits with them.
    most = alarm_sizing(with_jobs, 10_800)
    assert (most.shards, most.insights_alarms, most.fits_default_quota) == (27, 196, True)
    assert not alarm_sizing(with_jobs, 10_801).fits_default_quota


def test_container_insights_fallback_converts_the_share_to_watts() -> None:
    spec = low_power_alarm(
        AlarmSettings(cluster_name="train", exporter=False, gpu_instance_type="p5.48xlarge")
    )
    assert spec.threshold == 210.0  # 30% of the H100's 700 W
    assert isinstance(spec.metric, InsightsQuery)
    assert spec.metric.metric == "pod_gpu_power_draw"
    assert "700 W" in spec.description


def test_window_sets_the_evaluation_periods() -> None:
    spec = _by_key(low_power_window_minutes=90, low_power_percent=25)["gpu-low-power"]
    assert (spec.evaluation_periods, spec.threshold) == (18, 25)


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"low_power_percent": 120}, "low_power_percent=120 must be above 0 and below 100"),
        ({"low_power_percent": 0}, "low_power_percent=0"),
        ({"low_power_window_minutes": 3}, "multiple of the 5-minute period"),
        ({"low_power_window_minutes": 62}, "multiple of the 5-minute period"),
        ({"throttle_window_minutes": 240}, "180 minutes"),
        ({"exporter": False}, "gpu_instance_type=None"),
        ({"exporter": False, "gpu_instance_type": "p9.huge"}, "gpu_instance_type='p9.huge'"),
    ],
)
def test_bad_thresholds_are_named(kwargs: dict, problem: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(AlarmSettingsError, match=problem.replace("(", r"\(")):
        AlarmSettings(cluster_name="train", **kwargs)


def test_each_multi_series_kind_has_a_fleet_count_alarm_that_pages_before_the_cap() -> None:
    """Past 100 contributors in ALARM (fewer with many attributes) a kind pages no more GPUs
    one by one (alarm-limits.html): its fleet count alarm counts the kind's breaching series
    over the whole cluster, every shard, and pages at 90, with the kind's severity and
    periods."""
    alarms = {a.key: a for a in gpu_alarms(AlarmSettings(cluster_name="train", shards=25))}
    counts = {a.counts: a for a in alarms.values() if a.counts}
    assert sorted(counts) == sorted(
        ["gpu-low-power", "gpu-lost", "gpu-ecc-uncorrected", "gpu-thermal-throttling",
         "gpu-power-brake", "gpu-silent", "job-hung", "job-loss-not-finite", "job-loss-spike",
         "job-throughput-collapsed", "job-step-time-rise", "job-goodput-low"]
    )  # fmt: skip
    low, kind = counts["gpu-low-power"], alarms["gpu-low-power-shard-07"]
    assert isinstance(low.metric, BreachCount)
    assert (low.key, low.kind, low.shard) == ("gpu-low-power-at-cap",) * 2 + (None,)
    assert (low.threshold, low.comparison) == (CAP_ALARM_SERIES, Comparison.GREATER_OR_EQUAL)
    assert CAP_ALARM_SERIES < MAX_CONTRIBUTORS_IN_ALARM
    assert (low.severity, low.period_s, low.evaluation_periods) == (
        kind.severity,
        kind.period_s,
        kind.evaluation_periods,
    )
    assert low.metric.query.where == (("ClusterName", "train"),)  # every shard
    assert (low.metric.comparison, low.metric.threshold) == (Comparison.LESS, 30.0)
    assert low.metric.expression() == ("SUM(1 - CEIL(FLOOR(FILL(q1, 30) / 30) / 1000000000000000))")
    lost = counts["gpu-lost"]
    assert lost.severity is Severity.CRITICAL
    hung = counts["job-hung"].metric
    assert isinstance(hung, BreachCount)
    assert hung.expression() == "SUM(CEIL(FLOOR(q1 / 600) / 1000000000000000))"


@pytest.mark.parametrize(
    ("comparison", "threshold", "values", "count"),
    [
        # what the expression computes, per series, for each value it may read
        (Comparison.GREATER_OR_EQUAL, 0.5, [0.0, 0.49, 0.5, 0.51, 1.0, -3.0, 4e9], 4),
        (Comparison.LESS, 30.0, [0.0, 12.0, 29.99, 30.0, 95.0, None], 3),
        (Comparison.LESS, 1.0, [0.0, 1.0, 1.0, None, None], 1),
    ],
)
def test_the_count_expression_is_one_per_breaching_series(
    comparison: Comparison, threshold: float, values: list[float | None], count: int
) -> None:
    """The metric math of BreachCount, worked as the reference defines each function
    (using-metric-math.html: FLOOR, CEIL, FILL, a missing value read as 0 in arithmetic,
    SUM over the array), agrees with the comparison it counts, a missing datapoint (None)
    being no breach."""

    def per_series(v: float | None) -> float:
        if comparison is Comparison.GREATER_OR_EQUAL:
            return math.ceil(math.floor((v or 0.0) / threshold) / 10**15)
        filled = threshold if v is None else v
        return 1 - math.ceil(math.floor(filled / threshold) / 10**15)

    assert sum(per_series(v) for v in values) == count
    assert count == sum(v is not None and comparison.breaches(v, threshold) for v in values)


def test_a_count_takes_a_grouped_query_and_a_threshold_it_can_compute() -> None:
    spec = _by_key()["gpu-lost"]
    assert isinstance(spec.metric, InsightsQuery)
    with pytest.raises(ValueError, match="no GROUP BY"):
        BreachCount(replace(spec.metric, group_by=()), Comparison.LESS, 1)
    with pytest.raises(ValueError, match="a count takes >= or < a threshold above 0"):
        BreachCount(spec.metric, Comparison.GREATER, 1)
    with pytest.raises(ValueError, match="a count takes >= or < a threshold above 0"):
        BreachCount(spec.metric, Comparison.LESS, 0)
