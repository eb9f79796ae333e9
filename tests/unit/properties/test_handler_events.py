"""Events the handlers may be given: a scheduled event's time in any shape, or a subscription
payload that is not what it should be. A bad event is refused with a named error, never a
crash deep inside."""

import base64
import gzip
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lambdas.shared.events import EventError, scheduled_time
from lambdas.xid_notifier.handler import decode
from lambdas.xid_notifier.messages import parse_log_events


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.text(max_size=200)
        | st.dictionaries(st.text(max_size=8), st.text(max_size=8)).map(json.dumps),
        max_size=6,
    )
)
def test_xid_notifier_counts_what_it_cannot_read(messages: list[str]) -> None:
    payload = {"logStream": "node", "logEvents": [{"message": m} for m in messages]}
    parsed = parse_log_events(payload, cluster="train")
    assert len(parsed.notices) + parsed.unreadable <= len(messages)


@pytest.mark.parametrize(
    "event",
    [
        {},
        {"awslogs": {}},
        {"awslogs": {"data": "not base64!"}},
        {"awslogs": {"data": base64.b64encode(b"not gzip").decode()}},
        {"awslogs": {"data": base64.b64encode(gzip.compress(b"not json")).decode()}},
    ],
)
def test_a_malformed_subscription_event_is_a_clear_error(event: dict[str, Any]) -> None:
    with pytest.raises((KeyError, ValueError, OSError)):
        decode(event)


@settings(max_examples=200, deadline=None)
@given(
    st.none()
    | st.integers()
    | st.text(max_size=40)
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
