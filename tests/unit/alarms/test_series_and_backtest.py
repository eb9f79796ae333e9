"""From samples to alarm decisions, on plain data: the alarms fire on the right GPUs."""

import pytest

from alarms.backtest import backtest, history_end, report
from alarms.catalog import AlarmSettings, gpu_alarms
from alarms.evaluator import AlarmState
from alarms.history import HistoryError, Sample, read_history
from alarms.model import Difference, InsightsQuery, MetricStat
from alarms.series import RankedSeries, difference_values, query_values, window

T0 = 1_764_000_000.0 - 1_764_000_000.0 % 3600


def _gpu(node: str, gpu: str, metric: str, value: float, t: float) -> Sample:
    dims = frozenset({("ClusterName", "train"), ("NodeName", node), ("GpuIndex", gpu)})
    return Sample("GpuInsights", metric, dims, t, value)


def test_query_takes_each_groups_max_then_the_lowest_group() -> None:
    query = InsightsQuery(
        "GpuInsights", "p", ("ClusterName", "GpuIndex", "NodeName"), (("ClusterName", "train"),),
        "MAX", ("NodeName", "GpuIndex"), "ASC",
    )  # fmt: skip
    samples = [
        _gpu("a", "0", "p", 90, T0), _gpu("a", "0", "p", 10, T0 + 60),  # max 90
        _gpu("a", "1", "p", 12, T0), _gpu("a", "1", "p", 14, T0 + 60),  # max 14: the lowest
        _gpu("b", "0", "p", 50, T0 + 120),
        # Another cluster, and a series with another dimension set: not in the query.
        Sample("GpuInsights", "p", frozenset({("ClusterName", "other"), ("NodeName", "x"),
                                               ("GpuIndex", "0")}), T0, 1.0),
        Sample("GpuInsights", "p", frozenset({("ClusterName", "train")}), T0, 1.0),
    ]  # fmt: skip
    series = query_values(query, samples, 300)
    assert isinstance(series, RankedSeries)
    assert series.groups == {("a", "0"): {T0: 90.0}, ("a", "1"): {T0: 14.0}, ("b", "0"): {T0: 50.0}}
    assert window(series, [T0 - 300, T0]) == [None, 14.0]


def test_order_by_ranks_each_group_over_the_whole_window_not_per_period() -> None:
    """ "ORDER BY MAX() DESC orders the results by the maximum data point observed within the
    time range" (CloudWatch User Guide, "Metrics Insights query components and syntax",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-metrics-insights-querylanguage.html):
    with LIMIT 1 the query returns one whole series, the group that ranks first over the
    window, and not the lowest value of each period."""
    series = RankedSeries(
        {("a", "0"): {0: 5.0, 300: 90.0}, ("b", "0"): {0: 60.0, 300: 20.0}}, "MAX", False
    )
    # MAX over the window: a 90, b 60. ASC returns b's series in full.
    assert window(series, [0, 300]) == [60.0, 20.0]
    # Over the first period alone, a ranks first.
    assert window(series, [0]) == [5.0]
    assert window(RankedSeries(series.groups, "MAX", True), [0, 300]) == [5.0, 90.0]
    # A group with no datapoint in the window is not returned at all.
    assert window(RankedSeries({("a", "0"): {0: 1.0}}, "MAX", False), [300, 600]) == [None, None]


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
    assert "gpu-low-power [warning]" in report([result], start=T0, end=T0 + 3 * 3600)


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
    low in every period, but no GPU was low for the hour, so the query's one series (the GPU
    with the lowest peak over the window) is never under the threshold for 12 periods."""
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
