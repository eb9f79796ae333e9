import pytest

from cdk.alarms.jobs import JOB_ALARM_KINDS, JobAlarmSettings, job_alarms
from cdk.settings import SettingsError, settings_from_context


def test_each_kind_once_per_job_shard_with_the_shard_in_its_query() -> None:
    alarms = job_alarms("train", JobAlarmSettings())
    assert len(alarms) == 48
    assert {a.kind for a in alarms} == set(JOB_ALARM_KINDS)
    hung = next(a for a in alarms if a.key == "job-hung-shard-05")
    assert ("Shard", "5") in hung.metric.where  # type: ignore[union-attr]
    assert hung.multi_series
    assert (hung.threshold, hung.period_s) == (600, 60)


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("job_hung_minutes", "4", "job_hung_minutes=4 must be 5 to 180"),
        ("job_loss_spike_deviations", "2", "job_loss_spike_deviations=2.0 must be 3 to 1000"),
        ("job_throughput_fraction", "0", "job_throughput_fraction=0.0 must be above 0"),
        ("job_throughput_window_minutes", "12", "must be a multiple of the 5-minute period"),
        ("job_throughput_window_minutes", "45", "up to 30 (the job's median adapts"),
        ("job_step_time_rise_percent", "3", "job_step_time_rise_percent=3 must be 5 to 100"),
        ("job_step_time_rise_minutes", "1", "job_step_time_rise_minutes=1 must be 2 to 30"),
        ("job_goodput_percent", "100", "job_goodput_percent=100 must be 1 to 99"),
        (
            "job_alarms",
            "maybe",
            "setting job_alarms='maybe' is not valid: expected one of true, yes, on, 1 or "
            "false, no, off, 0",
        ),
    ],
)
def test_a_threshold_it_cannot_use_is_refused_in_one_line(key: str, value: str, says: str) -> None:
    with pytest.raises(SettingsError) as refused:
        settings_from_context({"cluster_name": "train", key: value})
    assert says in str(refused.value)
    assert "\n" not in str(refused.value)


def test_fail_slow_pages_a_step_time_10_percent_over_its_baseline_for_3_minutes() -> None:
    """Throughput at the same samples a step is the step time's inverse: a step 10% slower is
    1/1.1 = 0.909 of the usual samples per second, held in every minute of the window."""
    rise = next(
        a for a in job_alarms("train", JobAlarmSettings()) if a.kind == "job-step-time-rise"
    )
    assert rise.metric.metric == "throughput_ratio"  # type: ignore[union-attr]
    assert (rise.threshold, rise.comparison.value) == (0.9091, "LessThanThreshold")
    assert (rise.period_s, rise.evaluation_periods, rise.datapoints_to_alarm) == (60, 3, 3)
    assert rise.comparison.breaches(1 / 1.105, rise.threshold)
    assert not rise.comparison.breaches(1 / 1.09, rise.threshold)


def test_goodput_low_pages_the_hours_mean_goodput_under_the_setting() -> None:
    low = next(
        a
        for a in job_alarms("train", JobAlarmSettings(goodput_percent=60))
        if a.kind == "job-goodput-low"
    )
    assert low.metric.metric == "goodput"  # type: ignore[union-attr]
    assert low.metric.function == "AVG"  # type: ignore[union-attr]
    assert (low.period_s, low.threshold, low.comparison.value) == (3600, 0.6, "LessThanThreshold")
