"""The job alarms as PromQL alarms (OTel mode with the OTLP sink): one per kind, by job, with
the Metrics Insights alarms' thresholds and windows; Classic and the EMF sink keep the shards.
How they page on a real engine: tests/functional/cli/backtest/test_job_promql_alarms.py."""

import pytest

from cdk.alarms.catalog import (
    AlarmSettings,
    alarm_sizing,
    deployed_alarms,
    gpu_alarms,
    promql_alarms,
)
from cdk.alarms.jobs import JOB_ALARM_KINDS, JobAlarmSettings, job_alarms
from cdk.alarms.jobs_promql import promql_job_alarms
from cdk.alarms.model import Comparison
from cdk.alarms.promql import PromQLQuery
from cdk.settings import settings_from_context

OTLP = AlarmSettings(cluster_name="train", promql=True, otlp=True)
DEFAULT = JobAlarmSettings()
BY = '("@resource.k8s.cluster.name", "@resource.k8s.namespace.name", job_name)'


def _queries(settings: JobAlarmSettings = DEFAULT) -> dict[str, PromQLQuery]:
    found = {}
    for spec in promql_job_alarms("train", settings):
        assert isinstance(spec.metric, PromQLQuery)
        found[spec.key] = spec.metric
    return found


def test_each_kind_is_one_promql_alarm_by_job_and_no_job_alarm_is_sharded() -> None:
    deployed = [s for s in deployed_alarms(OTLP) if (s.counts or s.kind) in JOB_ALARM_KINDS]
    assert sorted(s.key for s in deployed) == sorted(
        [*JOB_ALARM_KINDS, *(f"{k}-at-cap" for k in JOB_ALARM_KINDS)]
    )
    assert all(isinstance(s.metric, PromQLQuery) and s.shard is None for s in deployed)
    assert not [s for s in gpu_alarms(OTLP) if (s.counts or s.kind) in JOB_ALARM_KINDS]
    # Off the Metrics Insights quota: the EMF sink's 54 job alarms (and, with the GPU kinds
    # PromQL too, every other) leave it; the six kinds and their counts are 12 PromQL alarms.
    emf = alarm_sizing(AlarmSettings(cluster_name="train", promql=True), 10_000)
    otlp = alarm_sizing(OTLP, 10_000)
    assert (emf.job_alarms, otlp.job_alarms) == (54, 0)
    assert (emf.insights_alarms, otlp.insights_alarms) == (186, 0)
    assert len([s for s in promql_alarms(OTLP) if (s.counts or s.kind) in JOB_ALARM_KINDS]) == 12


@pytest.mark.parametrize(
    "settings",
    [
        AlarmSettings(cluster_name="train"),  # Classic
        AlarmSettings(cluster_name="train", promql=True),  # OTel mode, the EMF sink
        AlarmSettings(cluster_name="train", otlp=True),  # no OTel mode: no PromQL
    ],
)
def test_classic_and_the_emf_sink_keep_todays_sharded_job_alarms_exactly(
    settings: AlarmSettings,
) -> None:
    jobs = [s for s in deployed_alarms(settings) if s.kind in JOB_ALARM_KINDS]
    assert jobs == job_alarms("train", JobAlarmSettings())
    assert len(jobs) == 48


def test_the_queries_read_the_emitters_otlp_series_with_the_metrics_insights_rank_function() -> (
    None
):
    queries = _queries()
    cluster = '"@resource.k8s.cluster.name"="train"'
    assert queries["job-hung"].query == (
        f'min by {BY} (last_over_time({{__name__="step_overdue_seconds", {cluster}}}[2m])) >= 600'
    )
    assert queries["job-loss-not-finite"].query == (
        f'sum by {BY} (max_over_time({{__name__="loss_not_finite", {cluster}}}[2m])) >= 1'
    )
    assert queries["job-loss-spike"].query == (
        f'max by {BY} (max_over_time({{__name__="loss_deviation", {cluster}}}[2m])) >= 10'
    )
    assert queries["job-throughput-collapsed"].query == (
        f'max by {BY} (max_over_time({{__name__="throughput_ratio", {cluster}}}[5m])) < 0.5'
    )
    # Fail-slow: the fastest rank's newest flush under 1/1.1 of its usual throughput (a step
    # time 10% over its recent median), held for the 3-minute window: 60 s pending.
    assert queries["job-step-time-rise"].query == (
        f'max by {BY} (max_over_time({{__name__="throughput_ratio", {cluster}}}[2m])) < 0.9091'
    )
    # Goodput now: every rank's windows of the last hour, averaged, under 70%, of a job that
    # still flushes (a job that ended has no window in the last 2 minutes).
    assert queries["job-goodput-low"].query == (
        f'avg by {BY} (avg_over_time({{__name__="goodput", {cluster}}}[60m])) < 0.7 '
        f'and avg by {BY} (last_over_time({{__name__="goodput", {cluster}}}[2m]))'
    )
    # Every minute, recovered five minutes after the query stops returning the job.
    assert {(q.evaluation_interval_s, q.recovery_period_s) for q in queries.values()} == {(60, 300)}
    assert {k: q.lookback_s for k, q in queries.items()} == {
        "job-hung": 120,
        "job-loss-not-finite": 120,
        "job-loss-spike": 120,
        "job-throughput-collapsed": 300,
        "job-step-time-rise": 120,
        "job-goodput-low": 3600,
    }


def test_the_settings_thresholds_and_windows_are_the_alarms() -> None:
    """One minute's value pages at once; the throughput window is the pending period and the
    range: 15 minutes are 600 s pending after a whole 5-minute range under, 30 are 1,500."""
    default = _queries()
    assert {k: q.pending_period_s for k, q in default.items()} == {
        "job-hung": 0,
        "job-loss-not-finite": 0,
        "job-loss-spike": 0,
        "job-throughput-collapsed": 600,
        "job-step-time-rise": 60,
        "job-goodput-low": 0,
    }
    changed = _queries(
        JobAlarmSettings(
            hung_minutes=30,
            loss_spike_deviations=4.5,
            throughput_fraction=0.25,
            throughput_window_minutes=30,
            step_time_rise_percent=25,
            step_time_rise_minutes=5,
            goodput_percent=55,
        )
    )
    assert changed["job-step-time-rise"].query.endswith(" < 0.8")
    assert changed["job-step-time-rise"].pending_period_s == 180
    assert " < 0.55 and " in changed["job-goodput-low"].query
    assert changed["job-hung"].query.endswith(" >= 1800")
    assert changed["job-loss-spike"].query.endswith(" >= 4.5")
    assert changed["job-throughput-collapsed"].query.endswith(" < 0.25")
    assert changed["job-throughput-collapsed"].pending_period_s == 1500


def test_each_alarm_keeps_the_kinds_title_severity_and_threshold_and_names_the_job() -> None:
    classic = {s.kind: s for s in job_alarms("train", JobAlarmSettings())}
    for spec in promql_job_alarms("train", JobAlarmSettings()):
        before = classic[spec.key]
        assert (spec.title, spec.severity, spec.threshold, spec.comparison) == (
            before.title,
            before.severity,
            before.threshold,
            before.comparison,
        )
        assert spec.description.endswith(
            "Each contributor (the series' cluster, namespace and job_name labels) names the job."
        )
        assert "Shard" not in spec.description
    hung = next(s for s in promql_job_alarms("train", JobAlarmSettings()) if s.key == "job-hung")
    assert hung.comparison is Comparison.GREATER_OR_EQUAL


def test_the_deployment_settings_make_them_promql_with_otel_mode_and_the_otlp_sink() -> None:
    otel = {"cluster_name": "train", "container_insights_mode": "otel"}
    assert settings_from_context({**otel, "exporter_sink": "otlp"}).alarm_settings().promql_jobs
    # Unset, the sink is OTLP in OTel mode (settings.default_sink); EMF keeps the shards.
    assert settings_from_context(otel).alarm_settings().promql_jobs
    assert not settings_from_context({**otel, "exporter_sink": "emf"}).alarm_settings().promql_jobs
    classic = {"cluster_name": "train", "container_insights_mode": "classic"}
    assert not settings_from_context(classic).alarm_settings().promql_jobs
    assert (
        not settings_from_context({**otel, "exporter_sink": "otlp", "job_alarms": "false"})
        .alarm_settings()
        .promql_jobs
    )
