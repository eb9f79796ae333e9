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
        return parse_utc(raw, "event time")
    except ValueError as err:
        raise EventError(str(err)) from err


def parse_utc(raw: str, what: str) -> datetime:
    """An ISO 8601 time with a zone ("Z" included); the error names what was being read."""
    try:
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError as err:
        raise ValueError(f"{what} {raw!r} is not an ISO 8601 time") from err
    if parsed.tzinfo is None:
        raise ValueError(f"{what} {raw!r} has no time zone, such as Z")
    return parsed.astimezone(UTC)
