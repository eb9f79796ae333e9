"""What the scheduled handlers take from their EventBridge event: the scheduled time."""

import time
from datetime import UTC, date, datetime
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


def analysis_window(end: float, lookback_days: int) -> tuple[float, float]:
    """``(start, end)`` of an analysis ending at the last whole hour before ``end``: a rerun of
    the same scheduled event, or the same hour by hand, reads the same hours."""
    end -= end % 3600
    return end - lookback_days * 86_400, end


def attributed_day(end: float) -> tuple[float, float, date]:
    """The whole UTC day a run ending at ``end`` attributes: the day before the one ``end``
    falls in (a run at 07:00 attributes yesterday 00:00-24:00, complete in CloudWatch by then),
    as ``(start, end, day)``. Its table is keyed by that day, so the weekly report's Monday to
    Sunday are the week's own GPU-hours, not a window that ends on each of them."""
    day_end = end - end % 86_400
    start = day_end - 86_400
    return start, day_end, datetime.fromtimestamp(start, UTC).date()


#: Times outside these years are refused: no schedule runs then, and near year 1 or 9999 a
#: zone offset overflows ``datetime``.
EARLIEST_YEAR, LATEST_YEAR = 2000, 2199
#: The same bounds as epoch seconds.
EARLIEST_EPOCH = datetime(EARLIEST_YEAR, 1, 1, tzinfo=UTC).timestamp()
LATEST_EPOCH = datetime(LATEST_YEAR + 1, 1, 1, tzinfo=UTC).timestamp()


def check_epoch(seconds: float, what: str) -> float:
    """Epoch seconds in years 2000 to 2199 (so not NaN or infinite), or ValueError naming it."""
    if not EARLIEST_EPOCH <= seconds < LATEST_EPOCH:
        raise ValueError(
            f"{what} {seconds!r} is not epoch seconds in the years {EARLIEST_YEAR} to {LATEST_YEAR}"
        )
    return seconds


def parse_utc(raw: str, what: str) -> datetime:
    """An ISO 8601 time with a zone ("Z" included), in years 2000 to 2199; the error names what
    was being read."""
    try:
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError as err:
        raise ValueError(f"{what} {raw!r} is not an ISO 8601 time") from err
    if parsed.tzinfo is None:
        raise ValueError(f"{what} {raw!r} has no time zone, such as Z")
    if not EARLIEST_YEAR <= parsed.year <= LATEST_YEAR:
        raise ValueError(f"{what} {raw!r} is not in the years {EARLIEST_YEAR} to {LATEST_YEAR}")
    return parsed.astimezone(UTC)
