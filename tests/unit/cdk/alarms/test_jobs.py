import pytest

from cdk.alarms.jobs import JOB_ALARM_KINDS, JobAlarmSettings, job_alarms
from cdk.settings import SettingsError, settings_from_context


def test_each_kind_once_per_job_shard_with_the_shard_in_its_query() -> None:
    alarms = job_alarms("train", JobAlarmSettings())
    assert len(alarms) == 32
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
