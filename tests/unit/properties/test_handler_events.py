"""Events the handlers may be given: a scheduled event's time in any shape, or a subscription
payload that is not what it should be. A bad event is refused with the project's own named
error (only that may escape), never a crash deep inside."""

import base64
import gzip
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lambdas.notifier.handler import decode
from lambdas.notifier.messages import parse_log_events
from lambdas.shared.events import EventError, scheduled_time
from lambdas.shared.subscription import SubscriptionPayloadError, decode_subscription


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.text(max_size=200)
        | st.dictionaries(st.text(max_size=8), st.text(max_size=8)).map(json.dumps),
        max_size=6,
    )
)
def test_notifier_counts_what_it_cannot_read(messages: list[str]) -> None:
    payload = {"logStream": "node", "logEvents": [{"message": m} for m in messages]}
    parsed = parse_log_events(payload, cluster="train")
    assert len(parsed.notices) + parsed.unreadable <= len(messages)


def _data(raw: bytes) -> dict[str, Any]:
    return {"awslogs": {"data": base64.b64encode(raw).decode()}}


@pytest.mark.parametrize(
    ("event", "named"),
    [
        ({}, "awslogs"),
        ([], "awslogs"),
        ({"awslogs": {}}, "awslogs.data"),
        ({"awslogs": {"data": 7}}, "awslogs.data"),
        ({"awslogs": {"data": "not base64!"}}, "not base64"),
        (_data(b"not gzip"), "not gzip"),
        (_data(gzip.compress(b"not json")), "not JSON"),
        (_data(gzip.compress(b"\xff\xfe")), "not JSON"),
        (_data(gzip.compress(b"[1]")), "not an object"),
        (_data(gzip.compress(b'{"logEvents": 3}')), "logEvents"),
        (_data(gzip.compress(b'{"logEvents": [3]}')), "logEvents"),
        (_data(gzip.compress(b"{}")[:-4]), "not gzip"),
    ],
)
def test_a_malformed_subscription_event_is_refused_by_name(event: Any, named: str) -> None:
    """Before: KeyError, TypeError, binascii.Error, BadGzipFile, AttributeError."""
    with pytest.raises(SubscriptionPayloadError, match=named):
        decode(event)


#: An XID document as the exporter writes it (agent/gpu_insights_agent/exporter/exporter.py):
#: the fields a subscription payload must carry for the notifier to page.
_XID_DOCUMENT = {
    "XidDescription": "GPU has fallen off the bus",
    "XidSeverity": "fatal",
    "XidSource": "nvml",
    "ClusterName": "train",
    "NodeName": "ip-10-0-12-34.ec2.internal",
    "GpuIndex": "3",
    "XidCode": "79",
    "gpu_xid_errors": 1.0,
    "gpu_xid_fatal_errors": 1.0,
    "_aws": {
        "Timestamp": 1_772_460_000_000,
        "CloudWatchMetrics": [
            {
                "Namespace": "GpuInsights",
                "Dimensions": [["ClusterName", "NodeName", "GpuIndex", "XidCode"]],
                "Metrics": [{"Name": "gpu_xid_errors", "Unit": "Count"}],
            }
        ],
    },
}
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
    max_leaves=6,
)


@st.composite
def _xid_payloads(draw: st.DrawFn) -> tuple[dict[str, Any], int]:
    """A CloudWatch Logs data message of exporter XID documents (GPU i for the i-th), some
    with one field replaced by a generated value; and how many were left whole."""
    events, whole = [], 0
    for i in range(draw(st.integers(0, 6))):
        document = {**_XID_DOCUMENT, "GpuIndex": str(i)}
        if draw(st.booleans()):
            key = draw(st.sampled_from(["XidCode", "NodeName", "GpuIndex", "ClusterName"]))
            document[key] = draw(_json_values)
        else:
            whole += 1
        message = json.dumps(document)
        events.append({"id": str(i), "timestamp": 1_772_460_000_000 + i, "message": message})
    payload = {
        "messageType": "DATA_MESSAGE",
        "logGroup": "/aws/gpu-insights/train/exporter",
        "logStream": "ip-10-0-12-34.ec2.internal",
        "logEvents": events,
    }
    return _data(gzip.compress(json.dumps(payload).encode())), whole


@settings(max_examples=200, deadline=None)
@given(
    st.binary(max_size=200).map(gzip.compress).map(_data).map(lambda e: (e, None))
    | st.binary(max_size=100).map(_data).map(lambda e: (e, None))
    | st.recursive(
        st.none() | st.integers() | st.text(max_size=10),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
        max_leaves=6,
    ).map(lambda v: (_data(gzip.compress(json.dumps(v).encode())), None))
    | _xid_payloads()
)
def test_subscription_payloads_are_decoded_or_refused_by_name(
    case: tuple[dict[str, Any], int | None],
) -> None:
    """Garbage is refused by name; a payload of XID documents gives one notice per whole
    document (GPU 0, 1, ...), and each other one is a notice or a refusal with its reason."""
    event, whole = case
    try:
        payload = decode_subscription(event)
    except SubscriptionPayloadError:
        assert whole is None
        return
    parsed = parse_log_events(payload, cluster="train")
    events = payload.get("logEvents", [])
    assert len(parsed.notices) + parsed.unreadable <= len(events)
    assert all(r.reason for r in parsed.refused)
    if whole is not None:
        assert len(parsed.notices) + parsed.unreadable == len(events)
        assert sum(n.code == 79 and n.severity == "fatal" for n in parsed.notices) >= whole


@settings(max_examples=200, deadline=None)
@given(
    st.none()
    | st.integers()
    | st.text(max_size=40)
    | st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat())
    | st.sampled_from(["9999-12-31T23:00:00-05:00", "0001-01-01T00:00:00+05:00"])
    | st.dictionaries(st.text(max_size=6), st.text(max_size=30))
)
def test_scheduled_time_is_read_or_refused_by_name(raw: Any) -> None:
    for event in (raw, {"time": raw}):
        try:
            when = scheduled_time(event)
        except EventError as err:
            assert "event" in str(err)
            continue
        assert when.tzinfo is not None


def test_eventbridge_times_are_read() -> None:
    assert (
        scheduled_time({"time": "2026-11-30T06:00:00Z"}).isoformat() == "2026-11-30T06:00:00+00:00"
    )
