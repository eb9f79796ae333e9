"""From samples to alarm decisions, on plain data: the alarms fire on the right GPUs."""

import pytest

from alarms.backtest import backtest, report
from alarms.catalog import AlarmSettings, gpu_alarms
from alarms.evaluator import AlarmState
from alarms.history import HistoryError, Sample, read_history
from alarms.model import Difference, InsightsQuery, MetricStat
from alarms.series import difference_values, query_values

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
    assert query_values(query, samples, 300) == {T0: 14.0}


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
