"""Malformed alarm events are refused with the handler's named error, one line naming the
field; an alarm whose contributors in ALARM pass CloudWatch's cap says "100+"."""

import copy
import logging
from typing import Any

import pytest

from cdk.alarms.catalog import AlarmSettings, gpu_alarms
from lambdas.notifier.incidents import (
    AlarmEventError,
    Deployment,
    Skipped,
    contributor_cap,
    from_alarm_event,
)
from lambdas.notifier.notification import Incident
from lambdas.shared.events import EventError
from tests.unit.lambdas.notifier.events import (
    AWS_CONTRIBUTOR_EXAMPLE,
    LOW_POWER_QUERY,
    NODE,
    alarm_level,
    as_gpu_contributor,
    low_power_contributor,
)

SETTINGS = AlarmSettings(cluster_name="train")
DEPLOYMENT = Deployment(
    cluster="train",
    region="us-east-1",
    gpu_dashboard="gpu-insights-train-gpu-node",
    alarm_kinds={s.kind: (str(s.severity), s.title) for s in gpu_alarms(SETTINGS)},  # type: ignore[misc]
)


def _alarm_with_reason_data(reason_data: Any) -> dict[str, Any]:
    event = alarm_level(low_power_contributor("desc"))
    event["detail"]["configuration"]["metrics"] = [{"id": "m1", "metricStat": {}}]
    event["detail"]["state"]["reasonData"] = reason_data
    return event


@pytest.mark.parametrize(
    ("event", "named"),
    [
        (_alarm_with_reason_data("[1, 2]"), "detail.state.reasonData is not a string holding"),
        (_alarm_with_reason_data(["x"]), "detail.state.reasonData is not a string holding"),
    ],
)
def test_malformed_reason_data_is_the_named_error(event: dict[str, Any], named: str) -> None:
    """Before: AttributeError ('list' object has no attribute 'get') or TypeError."""
    with pytest.raises(AlarmEventError, match=named):
        from_alarm_event(event, DEPLOYMENT)


def test_reason_data_in_another_wording_leaves_the_reason_sentence_to_speak() -> None:
    event = _alarm_with_reason_data('{"threshold": "x", "recentDatapoints": {"a": 1}}')
    incident = from_alarm_event(event, DEPLOYMENT)
    assert isinstance(incident, Incident)
    assert incident.threshold == "30"  # the sentence's "the threshold (30.0)"


def _muted(start: str, end: str) -> dict[str, Any]:
    event = as_gpu_contributor(
        AWS_CONTRIBUTOR_EXAMPLE,
        "gpu-insights-train-gpu-low-power-shard-3",
        {"ClusterName": "train", "NodeName": NODE, "GpuIndex": "5"},
        LOW_POWER_QUERY,
    )
    event["detail"]["muteDetail"]["muteWindowStart"] = start
    event["detail"]["muteDetail"]["muteWindowEnd"] = end
    return event


def test_a_mute_window_without_a_time_zone_is_the_named_error() -> None:
    """Before: TypeError (can't compare offset-naive and offset-aware datetimes)."""
    with pytest.raises(AlarmEventError, match="muteDetail's window has a time without a time"):
        from_alarm_event(_muted("2026-01-01T10:00:00", "2026-01-01T12:00:00"), DEPLOYMENT)


@pytest.mark.parametrize("resources", ["arn:aws:cloudwatch:x", 5, {"a": 1}, [7]])
def test_resources_not_a_list_of_arns_is_the_named_error(resources: Any) -> None:
    """Before: TypeError ('int' object is not iterable), or the first letter of a string."""
    event = low_power_contributor("desc")
    event["resources"] = resources
    with pytest.raises(AlarmEventError, match="resources is not a list of ARNs"):
        from_alarm_event(event, DEPLOYMENT)


def test_the_alarm_event_error_is_an_event_error() -> None:
    assert issubclass(AlarmEventError, EventError)


def test_an_alarm_past_its_contributor_cap_pages_once_saying_100_plus() -> None:
    """ "If there are more than 100 contributors in ALARM (for example 105), the StateReason
    will be "100+ time series evaluated to ALARM"" ("Limits",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-limits.html).
    Before: skipped ("each GPU in ALARM comes as its own contributor event")."""
    event = alarm_level(low_power_contributor("desc"))
    event["detail"]["state"]["reason"] = "100+ time series evaluated to ALARM"
    incident = from_alarm_event(event, DEPLOYMENT)
    assert isinstance(incident, Incident)
    assert incident.title == "GPU in use but not working: 100+ in ALARM"
    assert incident.what.startswith("GPU in use but not working: 100+ time series are in ALARM.")
    assert "past the first 100 get no page of their own" in incident.what
    # Below the cap the contributors page one by one, and the alarm's own event does not.
    event["detail"]["state"]["reason"] = "95 out of 95 time series evaluated to ALARM"
    assert isinstance(from_alarm_event(event, DEPLOYMENT), Skipped)


def test_the_cap_is_read_from_the_reason_only() -> None:
    assert contributor_cap("100+ time series evaluated to ALARM") == "100+"
    assert contributor_cap("95 out of 95 time series evaluated to ALARM") is None
    assert contributor_cap("Threshold Crossed: 100+ ...") is None


def test_a_contributor_event_never_reads_as_the_cap() -> None:
    event = copy.deepcopy(low_power_contributor("desc"))
    event["detail"]["state"]["reason"] = "100+ time series evaluated to ALARM"
    incident = from_alarm_event(event, DEPLOYMENT)
    assert isinstance(incident, Incident)
    assert "100+" not in incident.title


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("muteWindowStart", None, "missing"),
        ("muteWindowEnd", None, "missing"),
        ("muteWindowStart", "soon", "not a time"),
        ("muteWindowEnd", 1767261600, "not a time"),
    ],
)
def test_an_unreadable_mute_window_pages_with_a_warning_naming_the_field(
    field: str, value: Any, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: a window without a readable start or end counted as muted (an info line only),
    and the page was dropped."""
    event = _muted("2026-01-01T10:00:00.000+0000", "2026-01-01T12:00:00.000+0000")
    event["detail"]["state"]["timestamp"] = "2026-01-01T11:00:00.000+0000"
    assert not isinstance(from_alarm_event(event, DEPLOYMENT), Incident)  # read: muted
    if value is None:
        del event["detail"]["muteDetail"][field]
    else:
        event["detail"]["muteDetail"][field] = value
    with caplog.at_level(logging.WARNING):
        assert isinstance(from_alarm_event(event, DEPLOYMENT), Incident)
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert f"detail.muteDetail.{field}" in warning.getMessage()
    assert said in warning.getMessage()


def _alarm_with_reason(reason: str) -> dict[str, Any]:
    event = alarm_level(low_power_contributor("desc"))
    event["detail"]["configuration"]["metrics"] = [{"id": "m1", "metricStat": {}}]
    event["detail"]["state"]["reason"] = reason
    event["detail"]["state"].pop("reasonData", None)
    return event


def _metrics_a_number() -> dict[str, Any]:
    event = alarm_level(low_power_contributor("desc"))
    event["detail"]["configuration"]["metrics"] = 5
    return event


@pytest.mark.parametrize(
    ("event", "named"),
    [
        (_metrics_a_number(), "detail.configuration is not an object with a list of metrics"),
        (
            _alarm_with_reason(
                "Threshold Crossed: 1 out of the last 1 datapoints [5.0 (01/12/25 13:34:00)] was "
                "less than the threshold (abc) (minimum 1 datapoint for OK -> ALARM transition)."
            ),
            "detail.state.reason's threshold 'abc' is not a number",
        ),
        (
            _alarm_with_reason(
                f"Threshold Crossed: {'9' * 5000} out of the last 1 datapoints [5.0 (01/12/25 "
                "13:34:00)] was less than the threshold (30.0)."
            ),
            "detail.state.reason counts 99999999999999999999... \\(5000 digits\\)",
        ),
        (
            _alarm_with_reason_data(
                '{"threshold": 30.0, "recentDatapoints": [' + "1" * 400 + "]}"
            ),
            "detail.state.reasonData holds a number no float holds",
        ),
        (
            _alarm_with_reason_data('{"threshold": ' + "1" * 400 + ', "recentDatapoints": []}'),
            "detail.state.reasonData holds a number no float holds",
        ),
    ],
    ids=["metrics-a-number", "threshold-abc", "count-5000-digits", "point-400-digits",
         "threshold-400-digits"],
)  # fmt: skip
def test_a_malformed_number_is_the_named_error(event: dict[str, Any], named: str) -> None:
    """Before: TypeError ('int' object is not iterable), ValueError (could not convert string
    to float: 'abc'; Exceeds the limit (4300 digits) for integer string conversion) and
    OverflowError (int too large to convert to float)."""
    with pytest.raises(AlarmEventError, match=named):
        from_alarm_event(event, DEPLOYMENT)


def test_the_cap_is_read_wherever_the_reason_holds_it() -> None:
    """Before: only a reason that began with the digits read as the cap."""
    assert contributor_cap("Threshold Crossed: 100+ time series evaluated to ALARM.") == "100+"
    assert contributor_cap("Alarm state: 250+ time series evaluated to ALARM") == "250+"
    assert contributor_cap("1.100+ time series evaluated to ALARM") is None
    event = alarm_level(low_power_contributor("desc"))
    event["detail"]["state"]["reason"] = "Threshold Crossed: 100+ time series evaluated to ALARM"
    incident = from_alarm_event(event, DEPLOYMENT)
    assert isinstance(incident, Incident)
    assert incident.title == "GPU in use but not working: 100+ in ALARM"
