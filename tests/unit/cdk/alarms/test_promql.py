"""OTel mode's PromQL alarms: which alarm becomes one, what it asks of CloudWatch within
AlarmPromQLCriteria's limits, and how many Metrics Insights alarms it takes off the quota."""

from dataclasses import replace
from pathlib import Path

import pytest

from cdk.alarms.catalog import (
    AlarmSettings,
    alarm_sizing,
    deployed_alarms,
    gpu_alarms,
    mode_table,
    promql_alarms,
)
from cdk.alarms.promql import PromQLAlarmError, PromQLQuery, low_power_query

DOCS = Path(__file__).resolve().parents[4] / "docs" / "alarms.md"
OTEL = AlarmSettings(cluster_name="train", promql=True, gpu_instance_type="p4d.24xlarge")


def test_otel_mode_with_the_gpus_power_has_one_low_power_promql_alarm_and_no_shards() -> None:
    low, count = promql_alarms(OTEL)
    assert isinstance(low.metric, PromQLQuery)
    assert isinstance(count.metric, PromQLQuery)
    # Its fleet count: the same breaching series, counted, past 100 contributors in ALARM.
    assert count.metric.query == f"count({low.metric.query}) >= 90"
    assert (count.key, count.counts, count.metric.pending_period_s) == (
        "gpu-low-power-at-cap",
        "gpu-low-power",
        low.metric.pending_period_s,
    )
    assert (low.key, low.kind, low.threshold) == ("gpu-low-power", "gpu-low-power", 120.0)
    assert "< 120" in low.metric.query  # 30% of the A100's 400 W
    assert "120 W (30% of A100's 400 W)" in low.description
    assert not [s for s in gpu_alarms(OTEL) if s.kind == "gpu-low-power"]
    assert [s.key for s in deployed_alarms(OTEL) if s.kind == "gpu-low-power"] == ["gpu-low-power"]


def test_the_alarm_settings_window_sets_the_pending_period() -> None:
    for minutes, pending in ((5, 0), (30, 1500), (60, 3300), (180, 10_500)):
        low, _ = promql_alarms(
            AlarmSettings(**{**OTEL.__dict__, "low_power_window_minutes": minutes})
        )
        assert isinstance(low.metric, PromQLQuery)
        assert low.metric.pending_period_s == pending, minutes


@pytest.mark.parametrize(
    "settings",
    [
        AlarmSettings(cluster_name="train", promql=True),  # OTel, the limit unknown
        AlarmSettings(cluster_name="train", gpu_instance_type="p4d.24xlarge"),  # Classic
    ],
)
def test_without_otel_mode_or_the_gpus_power_the_low_power_alarm_stays_metrics_insights(
    settings: AlarmSettings,
) -> None:
    assert promql_alarms(settings) == []
    assert [s.key for s in gpu_alarms(settings) if s.kind == "gpu-low-power"] == ["gpu-low-power"]


def test_a_fleet_of_one_shard_takes_the_low_power_alarm_off_the_insights_quota() -> None:
    classic = alarm_sizing(AlarmSettings(cluster_name="train", jobs=None), 400)
    otel = alarm_sizing(AlarmSettings(**{**OTEL.__dict__, "jobs": None}), 400)
    # Each with its kinds' fleet count alarms.
    assert (classic.shards, classic.insights_alarms, classic.promql_alarms) == (1, 12, 0)
    assert (otel.shards, otel.insights_alarms, otel.promql_alarms) == (1, 10, 2)
    assert otel.line().endswith(
        "10 Metrics Insights alarms of the default quota of 200 per Region, and 2 PromQL "
        "alarm(s), unsharded"
    )


def test_a_larger_fleet_keeps_the_sharded_low_power_alarm_in_otel_mode() -> None:
    """Every GPU of 401 can be idle at once: a PromQL alarm evaluates at most 500 returned
    series (alarm-limits.html), so past one shard the alarm stays Metrics Insights."""
    otel = AlarmSettings(**{**OTEL.__dict__, "jobs": None})
    sized = alarm_sizing(otel, 10_000)
    assert (sized.shards, sized.insights_alarms, sized.promql_alarms) == (25, 132, 0)
    assert not replace(otel, shards=2).promql_low_power
    assert replace(otel, shards=1).promql_low_power


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"query": "x" * 10_001}, "query is 10001 characters; PromQLCriteria takes 1 to 10000"),
        ({"pending_period_s": 86_401}, "pending_period_s=86401 must be 0 to 86400 seconds"),
        ({"recovery_period_s": -1}, "recovery_period_s=-1 must be 0 to 86400 seconds"),
        ({"evaluation_interval_s": 45}, "evaluation_interval_s=45 must be 10, 20, 30"),
        ({"evaluation_interval_s": 7200}, "evaluation_interval_s=7200 must be 10, 20, 30"),
    ],
)
def test_what_cloudwatch_would_refuse_is_named(change: dict, problem: str) -> None:  # type: ignore[type-arg]
    query = low_power_query("train", 120, 60)
    with pytest.raises(PromQLAlarmError, match=problem.replace("(", r"\(")):
        PromQLQuery(**{**query.__dict__, **change})


def test_the_docs_show_the_catalogs_table_of_alarms_by_mode() -> None:
    assert mode_table() in DOCS.read_text()
