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


@settings(max_examples=200, deadline=None)
@given(
    st.binary(max_size=200).map(gzip.compress).map(_data)
    | st.binary(max_size=100).map(_data)
    | st.recursive(
        st.none() | st.integers() | st.text(max_size=10),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
        max_leaves=6,
    ).map(lambda v: _data(gzip.compress(json.dumps(v).encode())))
)
def test_subscription_payloads_are_decoded_or_refused_by_name(event: dict[str, Any]) -> None:
    try:
        payload = decode_subscription(event)
    except SubscriptionPayloadError:
        return
    parsed = parse_log_events(payload, cluster="train")
    assert parsed.unreadable >= 0


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
