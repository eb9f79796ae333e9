"""What the scheduled handlers take from their EventBridge event: the scheduled time."""

import time
from datetime import UTC, datetime
from typing import Any


class EventError(ValueError):
    """An event the handler cannot run for; the message names the field."""


def scheduled_time(event: Any) -> datetime:
    """The event's ``time`` (EventBridge schedules set it), or now for a manual invocation;
    a rerun of the same event therefore covers the same period."""
    if not isinstance(event, dict):
        raise EventError(f"the event must be a JSON object, not {type(event).__name__}")
    raw = event.get("time")
    if raw is None:
        return datetime.fromtimestamp(time.time(), UTC)
    if not isinstance(raw, str):
        raise EventError(f"event time {raw!r} is not an ISO 8601 string")
    try:
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError as err:
        raise EventError(f"event time {raw!r} is not an ISO 8601 time") from err
    if parsed.tzinfo is None:
        raise EventError(f"event time {raw!r} has no time zone")
    return parsed.astimezone(UTC)
