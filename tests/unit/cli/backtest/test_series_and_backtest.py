"""From samples to alarm decisions, on plain data: the alarms fire on the right GPUs."""

from dataclasses import replace

import pytest

from cdk.alarms.catalog import AlarmSettings, gpu_alarms
from cdk.alarms.model import Difference, InsightsQuery, MetricStat, MissingData
from cli.backtest.engine import backtest, history_end, report
from cli.backtest.evaluator import NO_DATA_FOR_CONTRIBUTOR, AlarmState
from cli.backtest.history import HistoryError, Sample, read_history
from cli.backtest.series import Contributors, Group, Values, difference_values, query_values, window

T0 = 1_764_000_000.0 - 1_764_000_000.0 % 3600


def _gpu(node: str, gpu: str, metric: str, value: float, t: float) -> Sample:
    dims = frozenset(
        {("ClusterName", "train"), ("NodeName", node), ("GpuIndex", gpu), ("Shard", "0")}
    )
    return Sample("GpuInsights", metric, dims, t, value)


SCHEMA = ("ClusterName", "GpuIndex", "NodeName", "Shard")
BY_GPU = ("ClusterName", "NodeName", "GpuIndex")


def test_query_returns_one_series_per_gpu() -> None:
    query = InsightsQuery(
        "GpuInsights", "p", SCHEMA, (("ClusterName", "train"), ("Shard", "0")),
        "MAX", BY_GPU, "ASC",
    )  # fmt: skip
    samples = [
        _gpu("a", "0", "p", 90, T0), _gpu("a", "0", "p", 10, T0 + 60),  # max 90
        _gpu("a", "1", "p", 12, T0), _gpu("a", "1", "p", 14, T0 + 60),  # max 14
        _gpu("b", "0", "p", 50, T0 + 120),
        # Another cluster, and a series with another dimension set: not in the query.
        Sample("GpuInsights", "p", frozenset({("ClusterName", "other"), ("NodeName", "x"),
                                               ("GpuIndex", "0"), ("Shard", "0")}), T0, 1.0),
        Sample("GpuInsights", "p", frozenset({("ClusterName", "train")}), T0, 1.0),
    ]  # fmt: skip
    series = query_values(query, samples, 300)
    assert isinstance(series, Contributors)
    assert series.groups == {
        ("train", "a", "0"): {T0: 90.0},
        ("train", "a", "1"): {T0: 14.0},
        ("train", "b", "0"): {T0: 50.0},
    }
    assert window(series.groups[("train", "a", "1")], [T0 - 300, T0]) == [None, 14.0]
    assert series.returned([T0]) == (
        [("train", "a", "1"), ("train", "b", "0"), ("train", "a", "0")],
        False,
    )


def test_order_by_ranks_each_group_over_the_whole_window_and_limit_cuts() -> None:
    """ "ORDER BY MAX() DESC orders the results by the maximum data point observed within the
    time range" (CloudWatch User Guide, "Metrics Insights query components and syntax",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-metrics-insights-querylanguage.html):
    with LIMIT 1 the query returns the group that ranks first over the window."""
    groups: dict[Group, Values] = {("a",): {0: 5.0, 300: 90.0}, ("b",): {0: 60.0, 300: 20.0}}
    series = Contributors(("NodeName",), groups, "MAX", False, limit=1)
    assert series.returned([0, 300]) == ([("b",)], False)  # MAX over the window: a 90, b 60
    assert series.returned([0]) == ([("a",)], False)  # over the first period alone, a first
    assert Contributors(("NodeName",), groups, "MAX", True, 1).returned([0, 300])[0] == [("a",)]
    # A group with no datapoint in the window is not returned at all.
    assert Contributors(("NodeName",), {("a",): {0.0: 1.0}}, "MAX", False).returned([300]) == (
        [],
        False,
    )


def test_over_500_series_or_10000_metrics_is_partial_data_and_keeps_the_worst_500() -> None:
    """ "the EvaluationState will be set to PARTIAL_DATA ... If the Metrics Insights query
    returns more than 500 time series ... matches more than 10,000 metrics" ("Limits",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-limits.html)."""
    groups: dict[Group, Values] = {(str(i),): {0: float(i)} for i in range(501)}
    returned, partial = Contributors(("GpuIndex",), groups, "MAX", False).returned([0])
    assert partial
    assert len(returned) == 500
    assert returned[0] == ("0",)
    assert ("500",) not in returned
    returned, partial = Contributors(("GpuIndex",), dict(list(groups.items())[:500]), "MAX",
                                     False).returned([0])  # fmt: skip
    assert not partial
    assert len(returned) == 500
    many = Contributors(("GpuIndex",), {("0",): {0: 1.0}}, "MAX", False, metrics={("0",): 10_001})
    assert many.returned([0]) == ([("0",)], True)


def test_difference_fills_a_missing_second_series_with_zero() -> None:
    cluster = (("ClusterName", "train"),)
    diff = Difference(MetricStat("N", "a", cluster, "Sum"), MetricStat("N", "b", cluster, "Sum"))
    dims = frozenset(cluster)
    samples = [
        Sample("N", "a", dims, T0, 2), Sample("N", "b", dims, T0, 1),
        Sample("N", "a", dims, T0 + 60, 1),
    ]  # fmt: skip
    assert difference_values(diff, samples, 60) == {T0: 1.0, T0 + 60: 1.0}


def _hours_of(node: str, gpu: str, share: float, hours: float, metric: str) -> list[Sample]:
    return [_gpu(node, gpu, metric, share, T0 + i * 60) for i in range(int(hours * 60))]


def test_low_power_fires_after_the_window_on_the_in_use_idle_gpu_only() -> None:
    specs = [a for a in gpu_alarms(AlarmSettings(cluster_name="train")) if a.key == "gpu-low-power"]
    metric = "gpu_allocated_power_utilization"
    busy = _hours_of("a", "0", 88.0, 3, metric)
    idle = _hours_of("a", "1", 12.0, 3, metric)
    (result,) = backtest(specs, busy + idle, start=T0, end=T0 + 3 * 3600)
    assert [(t.time - T0, t.new) for t in result.transitions] == [
        (300, AlarmState.OK),  # one real datapoint; missing ones count as not breaching
        (3600, AlarmState.ALARM),  # twelve 5-minute periods under 30%
    ]
    (quiet,) = backtest(specs, busy, start=T0, end=T0 + 3 * 3600)
    assert quiet.alarms_raised == 0
    (nothing_in_use,) = backtest(specs, [], start=T0, end=T0 + 3 * 3600)
    assert nothing_in_use.alarms_raised == 0
    # Each GPU is its own contributor: the idle one alarms, and the report names it.
    assert result.contributors_alarmed == [("train", "a", "1")]
    assert result.transitions[-1].reason == "1 out of 2 time series evaluated to ALARM"
    text = report([result], start=T0, end=T0 + 3 * 3600)
    assert "gpu-low-power [warning]" in text
    assert "contributor ClusterName=train, NodeName=a, GpuIndex=1:" in text


def test_a_gap_in_an_idle_gpus_data_delays_the_alarm_not_forever() -> None:
    specs = [a for a in gpu_alarms(AlarmSettings(cluster_name="train")) if a.key == "gpu-low-power"]
    samples = [
        s
        for s in _hours_of("a", "1", 12.0, 3, "gpu_allocated_power_utilization")
        if not T0 + 1800 <= s.timestamp < T0 + 2400  # ten minutes missing
    ]
    (result,) = backtest(specs, samples, start=T0, end=T0 + 3 * 3600)
    first_alarm = next(t for t in result.transitions if t.new is AlarmState.ALARM)
    # The evaluation range reaches back past the gap for twelve real datapoints: the alarm
    # comes ten minutes late, not an hour late.
    assert first_alarm.time - T0 == 3600 + 600


def test_three_gpus_low_in_turn_do_not_make_an_hour_of_low_power() -> None:
    """Each of three GPUs is under 30% for 25 minutes in turn and busy otherwise: some GPU is
    low in every period, but no GPU was low for the hour, so no contributor is under the
    threshold for 12 periods."""
    specs = [a for a in gpu_alarms(AlarmSettings(cluster_name="train")) if a.key == "gpu-low-power"]
    metric = "gpu_allocated_power_utilization"
    samples = []
    for minute in range(180):
        low = (minute // 25) % 3  # GPU 0 for 25 minutes, then GPU 1, then GPU 2, ...
        for gpu in range(3):
            share = 12.0 if gpu == low else 88.0
            samples.append(_gpu("a", str(gpu), metric, share, T0 + minute * 60))
    (result,) = backtest(specs, samples, start=T0, end=T0 + 3 * 3600)
    assert result.alarms_raised == 0
    # The same GPUs with GPU 1 low all the time: the ranking finds it.
    stuck = [s for s in samples if dict(s.dimensions)["GpuIndex"] != "1"] + _hours_of(
        "a", "1", 12.0, 3, metric
    )
    (fired,) = backtest(specs, stuck, start=T0, end=T0 + 3 * 3600)
    assert [(t.time - T0, t.new) for t in fired.transitions][-1] == (3600, AlarmState.ALARM)
    assert fired.contributors_alarmed == [("train", "a", "1")]


def test_more_than_100_gpus_in_alarm_read_100_plus() -> None:
    """ "If there are more than 100 contributors in ALARM (for example 105), the StateReason
    will be "100+ time series evaluated to ALARM"" ("Limits",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-limits.html)."""
    specs = [a for a in gpu_alarms(AlarmSettings(cluster_name="train")) if a.key == "gpu-lost"]
    lost = [
        _gpu(f"n{i // 8}", str(i % 8), "gpu_healthy", 0.0, T0 + m * 60)
        for i in range(105)
        for m in range(5)
    ]
    (result,) = backtest(specs, lost, start=T0, end=T0 + 300)
    assert result.transitions[-1].new is AlarmState.ALARM
    assert result.transitions[-1].reason == "100+ time series evaluated to ALARM"
    assert len(result.contributors_alarmed) == 105
    (few,) = backtest(specs, lost[: 95 * 5], start=T0, end=T0 + 300)
    assert few.transitions[-1].reason == "95 out of 95 time series evaluated to ALARM"


def test_a_gpu_whose_data_stops_leaves_the_alarm() -> None:
    """Low power on GPU 1 for an hour, then the job releases it (no more datapoints)."""
    specs = [a for a in gpu_alarms(AlarmSettings(cluster_name="train")) if a.key == "gpu-low-power"]
    samples = _hours_of("a", "1", 12.0, 1.5, "gpu_allocated_power_utilization")
    (result,) = backtest(specs, samples, start=T0, end=T0 + 3 * 3600)
    assert [(t.time - T0, t.new) for t in result.transitions] == [
        (300, AlarmState.OK),
        (3600, AlarmState.ALARM),
        # The range (14 periods) holds 12 real low datapoints until 6,000 s; then missing
        # periods count as not breaching (a released GPU is not low on power).
        (6300, AlarmState.OK),
    ]


def test_a_lost_gpu_whose_exporter_then_stops_goes_ok_never_insufficient_data() -> None:
    """GPU 0 reports ``gpu_healthy = 0`` for ten minutes, then its exporter stops; GPU 1 goes
    on reporting healthy. A contributor "can only be in ALARM or OK state, never in
    INSUFFICIENT_DATA state", and "If a time series is not retrieved by the query anymore, it
    will transition to OK no matter the treat missing data treatment" (CloudWatch User Guide,
    "Acting on alarm changes" and "Create a CloudWatch alarm based on a Metrics Insights
    query", "Missing data in CloudWatch Metrics Insights alarms"): the lost GPU's contributor
    clears to OK although ``gpu-lost`` treats missing data as missing. Nothing pages about
    the silence itself; that is ``gpu-silent``'s job."""
    specs = [a for a in gpu_alarms(AlarmSettings(cluster_name="train")) if a.key == "gpu-lost"]
    lost = _hours_of("a", "0", 0.0, 10 / 60, "gpu_healthy")
    healthy = _hours_of("a", "1", 1.0, 1, "gpu_healthy")
    (result,) = backtest(specs, lost + healthy, start=T0, end=T0 + 3600)
    transitions = result.contributors[("train", "a", "0")]
    assert [(t.time - T0, t.old, t.new) for t in transitions] == [
        (120, AlarmState.OK, AlarmState.ALARM),
        # At 780 s the range (four one-minute periods) holds one 0 (at 540 s), none in the
        # last two periods: too few to alarm, and a contributor has no third state.
        (780, AlarmState.ALARM, AlarmState.OK),
    ]
    states = {t.new for ts in result.contributors.values() for t in ts}
    assert AlarmState.INSUFFICIENT_DATA not in states
    assert result.transitions[-1].new is AlarmState.OK  # GPU 1 is returned, and OK


def test_a_series_no_longer_returned_goes_ok_with_cloudwatchs_reason() -> None:
    """Even where missing data is breaching, a contributor whose series the query no longer
    returns goes to OK, its reason "No data was returned for this contributor"."""
    (lost_spec,) = [
        a for a in gpu_alarms(AlarmSettings(cluster_name="train")) if a.key == "gpu-lost"
    ]
    spec = replace(lost_spec, missing_data=MissingData.BREACHING)
    lost = _hours_of("a", "0", 0.0, 10 / 60, "gpu_healthy")
    (result,) = backtest([spec], lost, start=T0, end=T0 + 3600)
    left = result.contributors[("train", "a", "0")][-1]
    # Breaching fills the gaps while the range still holds a datapoint (540 s to 779 s); at
    # 840 s the range (four one-minute periods) holds none: the series is not returned.
    assert (left.time - T0, left.old, left.new) == (840, AlarmState.ALARM, AlarmState.OK)
    assert left.reason == NO_DATA_FOR_CONTRIBUTOR == "No data was returned for this contributor"
    # With no series at all, the alarm's own missing-data setting decides.
    assert result.transitions[-1].new is AlarmState.ALARM


def test_the_default_end_evaluates_the_period_holding_the_last_sample() -> None:
    """A history that ends with a fatal XID raises the fatal-XID alarm."""
    specs = gpu_alarms(AlarmSettings(cluster_name="train"))
    healthy = _hours_of("a", "0", 88.0, 1, "gpu_allocated_power_utilization")
    cluster = frozenset({("ClusterName", "train")})
    xid_at = T0 + 3600 - 30  # the history's last sample, half a minute before the hour
    xid = Sample("GpuInsights", "gpu_xid_fatal_errors", cluster, xid_at, 1.0)
    end = history_end(specs, [*healthy, xid])
    assert end == T0 + 3600  # the end of the 1-minute and the 5-minute period holding it
    results = {r.spec.key: r for r in backtest(specs, [*healthy, xid], start=T0, end=end)}
    fatal = results["gpu-xid-fatal"]
    assert [(t.time - T0, t.new) for t in fatal.transitions] == [
        (60, AlarmState.OK),
        (3600, AlarmState.ALARM),
    ]
    assert "raised 1 time(s)" in report([fatal], start=T0, end=end)
    with pytest.raises(ValueError, match="no samples"):
        history_end(specs, [])


def test_history_lines_with_problems_are_named() -> None:
    good = (
        '{"namespace": "N", "metric": "m", "dimensions": {"ClusterName": "c"}, '
        '"timestamp": "2025-11-28T12:00:00Z", "value": 1}'
    )
    assert read_history([good, ""])[0].timestamp == 1_764_331_200.0
    for bad, problem in [
        ("{", "line 2"),
        ('{"namespace": "N", "metric": "m", "timestamp": 1}', "missing value"),
        ('{"namespace": "N", "metric": "m", "timestamp": "2025-11-28T12:00:00", "value": 1}',
         "no time zone"),
        ('{"namespace": "N", "metric": "m", "timestamp": 1, "value": "x"}', "not a finite number"),
        ('{"namespace": "N", "metric": "m", "timestamp": 1, "value": 1, "dimensions": {"a": 1}}',
         "string values"),
    ]:  # fmt: skip
        with pytest.raises(HistoryError, match=problem):
            read_history([good, bad], source="h.jsonl")


def test_samples_without_the_shard_dimension_are_said_not_silently_ignored() -> None:
    """SCHEMA("GpuInsights", ClusterName, GpuIndex, NodeName, Shard) matches only series with
    exactly those dimensions (Metrics Insights, "SCHEMA":
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-metrics-insights-querylanguage.html):
    a history written without Shard reads as no data, and the report says why."""
    specs = [a for a in gpu_alarms(AlarmSettings(cluster_name="train")) if a.key == "gpu-low-power"]
    metric = "gpu_allocated_power_utilization"
    no_shard = [
        Sample(
            "GpuInsights",
            metric,
            frozenset({("ClusterName", "train"), ("NodeName", "a"), ("GpuIndex", "1")}),
            T0 + i * 60,
            12.0,
        )
        for i in range(120)
    ]
    (result,) = backtest(specs, no_shard, start=T0, end=T0 + 2 * 3600)
    assert result.alarms_raised == 0
    assert result.unmatched_dimensions == (("ClusterName", "GpuIndex", "NodeName"),)
    text = report([result], start=T0, end=T0 + 2 * 3600)
    assert (
        "warning: samples of gpu_allocated_power_utilization with dimensions (ClusterName, "
        "GpuIndex, NodeName) match no series of this alarm"
    ) in text
    # With the shard (and the exporter's cluster-wide copy beside it) nothing is said.
    cluster = Sample("GpuInsights", metric, frozenset({("ClusterName", "train")}), T0, 12.0)
    (shard,) = backtest(
        specs, [*_hours_of("a", "1", 12.0, 2, metric), cluster], start=T0, end=T0 + 2 * 3600
    )
    assert shard.alarms_raised == 1
    assert shard.unmatched_dimensions == ()


def test_a_weekend_that_idles_120_gpus_of_a_shard_pages_its_fleet_count_once() -> None:
    """CloudWatch keeps at most 100 contributors of an alarm in ALARM (alarm-limits.html):
    with 120 held GPUs idle in one shard, the fleet count alarm counts 120 breaching series
    in each period and goes into ALARM with the kind's own window; with 80 it stays OK."""
    specs = {a.key: a for a in gpu_alarms(AlarmSettings(cluster_name="train", jobs=None))}
    count = specs["gpu-low-power-at-cap"]
    metric = "gpu_allocated_power_utilization"
    busy = [s for g in range(10) for s in _hours_of("b", str(g), 88.0, 2, metric)]
    end = T0 + 2 * 3600
    for idle, raised in ((120, 1), (80, 0)):
        held = [
            s for g in range(idle) for s in _hours_of(f"n{g // 8}", str(g % 8), 12.0, 2, metric)
        ]
        (result,) = backtest([count], busy + held, start=T0, end=end)
        assert result.alarms_raised == raised, idle
        if raised:
            (alarm,) = [t for t in result.transitions if t.new is AlarmState.ALARM]
            assert alarm.time - T0 == 3600  # twelve 5-minute periods, as gpu-low-power
