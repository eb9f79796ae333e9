"""ISO weeks: Monday 00:00 UTC to the next Monday, named YYYY-Www (the ISO year, which at the
turn of the year can differ from the calendar year)."""

from datetime import UTC, date, datetime, timedelta


def iso_week_name(day: date) -> str:
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


def week_start(day: date) -> date:
    return day - timedelta(days=day.isoweekday() - 1)


def report_week(run_time: datetime) -> tuple[date, date]:
    """The last complete ISO week before run_time: (Monday, next Monday)."""
    this_monday = week_start(run_time.astimezone(UTC).date())
    return this_monday - timedelta(days=7), this_monday


def days(start: date, end: date) -> list[date]:
    return [start + timedelta(days=i) for i in range((end - start).days)]


def run_days(start: date, end: date) -> list[date]:
    """The dates of the analyzers' runs that looked at the week: a daily run analyses the UTC
    day before it and files its findings under its own date, so the week's Tuesday to the
    Monday after (whose 06:00 and 07:00 runs come before the report's 08:00 on that Monday,
    cdk/settings.py); the week's own Monday run looked at the week before."""
    return days(start + timedelta(days=1), end + timedelta(days=1))


def epoch(day: date) -> float:
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()
