"""CloudWatch's alarm evaluation rules, replayed over a history of period values.

At the end of each period the alarm looks at an evaluation range a little longer than its
evaluation periods (N), as CloudWatch does ("Configuring how CloudWatch alarms treat missing
data", Amazon CloudWatch User Guide):

- if the range holds at least N real datapoints, the most recent N real ones decide, and the
  missing-data setting plays no part;
- if it holds none: ``missing`` goes to INSUFFICIENT_DATA, ``ignore`` keeps the state,
  ``breaching`` counts every period as breaching, ``notBreaching`` as not;
- if it holds some but fewer than N: ``breaching`` and ``notBreaching`` fill the gaps;
  with ``missing`` and ``ignore``, M breaching real datapoints alarm, a non-breaching one
  among fewer than M breaching gives OK, and otherwise (every real datapoint breaching, but
  fewer than M) the rule "Avoiding premature transitions to alarm state" decides: ALARM only
  when the oldest breaching datapoint within the last N periods is at least M periods old and
  everything more recent is breaching or missing (``- - X - -`` alarms, ``- - - - X`` does
  not, for M = 3). Short of that, ``missing`` says INSUFFICIENT_DATA and ``ignore`` keeps the
  state; where the rule does alarm, ``ignore`` still keeps the state (the documented rows).

ALARM needs M (datapoints to alarm) breaching datapoints among those evaluated.

Source: Amazon CloudWatch User Guide, "Using Amazon CloudWatch alarms",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html
(sections "Configuring how CloudWatch alarms treat missing data" and "Avoiding premature
transitions to alarm state"); every documented row is a test in tests/unit/alarms.
"""

from dataclasses import dataclass
from enum import StrEnum

from alarms.model import AlarmSpec, MissingData
from alarms.series import AlarmSeries, window

#: Periods the evaluation range holds beyond the evaluation periods (the docs' example range
#: for three evaluation periods is five datapoints).
EXTRA_PERIODS = 2


class AlarmState(StrEnum):
    OK = "OK"
    ALARM = "ALARM"
    INSUFFICIENT_DATA = "INSUFFICIENT_DATA"


@dataclass(frozen=True)
class Transition:
    #: End of the period whose evaluation changed the state (epoch seconds).
    time: float
    old: AlarmState
    new: AlarmState
    reason: str


def _decide(
    spec: AlarmSpec, points: list[float | None], state: AlarmState
) -> tuple[AlarmState, str]:
    n = spec.evaluation_periods
    real = [v for v in points if v is not None]
    if len(real) >= n:
        recent = real[-n:]
        hits = _breaching(spec, recent)
        verdict = AlarmState.ALARM if hits >= spec.datapoints_to_alarm else AlarmState.OK
        return verdict, f"{hits} of the last {n} datapoints {_shown(recent)} breached"
    if not real:
        return _no_data(spec, state)
    return _some_data(spec, points, state)


def _breaching(spec: AlarmSpec, values: list[float]) -> int:
    return sum(spec.comparison.breaches(v, spec.threshold) for v in values)


def _no_data(spec: AlarmSpec, state: AlarmState) -> tuple[AlarmState, str]:
    n = spec.evaluation_periods
    verdicts = {
        MissingData.MISSING: (AlarmState.INSUFFICIENT_DATA, "no datapoints in the range"),
        MissingData.IGNORE: (state, "no datapoints; state kept (ignore)"),
        MissingData.BREACHING: (AlarmState.ALARM, f"no datapoints; {n} missing as breaching"),
        MissingData.NOT_BREACHING: (AlarmState.OK, f"no datapoints; {n} missing as not breaching"),
    }
    return verdicts[spec.missing_data]


def _some_data(
    spec: AlarmSpec, points: list[float | None], state: AlarmState
) -> tuple[AlarmState, str]:
    """Fewer real datapoints than evaluation periods: the missing-data setting decides."""
    m = spec.datapoints_to_alarm
    real = [v for v in points if v is not None]
    hits = _breaching(spec, real)
    gaps = spec.evaluation_periods - len(real)
    seen = f"{hits} of {len(real)} datapoints {_shown(real)} breached"
    if spec.missing_data is MissingData.BREACHING:
        verdict = AlarmState.ALARM if hits + gaps >= m else AlarmState.OK
        return verdict, f"{seen}; {gaps} missing as breaching"
    if spec.missing_data is MissingData.NOT_BREACHING:
        verdict = AlarmState.ALARM if hits >= m else AlarmState.OK
        return verdict, f"{seen}; {gaps} missing as not breaching"
    verdict, reason = _unfilled(spec, points, hits, len(real), seen)
    if verdict is not AlarmState.OK and spec.missing_data is MissingData.IGNORE:
        return state, f"{reason}; too few to change the state (ignore)"
    return verdict, reason


def _unfilled(
    spec: AlarmSpec, points: list[float | None], hits: int, real: int, seen: str
) -> tuple[AlarmState, str]:
    """``missing``: the real datapoints alone, and the premature-transition rule."""
    m = spec.datapoints_to_alarm
    if hits >= m:
        return AlarmState.ALARM, seen
    if hits < real:
        return AlarmState.OK, seen
    age = _oldest_breach_age(spec, points)
    if age >= m:
        return AlarmState.ALARM, f"{seen}; the oldest is {age} periods old, none since is good"
    return (
        AlarmState.INSUFFICIENT_DATA,
        f"{seen}; the oldest is {age} of the {m} periods old that alarm (premature)",
    )


def _oldest_breach_age(spec: AlarmSpec, points: list[float | None]) -> int:
    """How many periods old (the newest period is 1) the oldest breaching datapoint within
    the last N periods is; 0 when none breaches there."""
    recent = points[-spec.evaluation_periods :]
    for i, value in enumerate(recent):
        if value is not None and spec.comparison.breaches(value, spec.threshold):
            return len(recent) - i
    return 0


def _shown(values: list[float]) -> str:
    return "[" + ", ".join(f"{v:.4g}" for v in values) + "]"


def evaluate(spec: AlarmSpec, series: AlarmSeries, *, start: float, end: float) -> list[Transition]:
    """Every state change between start and end, evaluating at each period's end."""
    period = spec.period_s
    first = start - start % period
    span = spec.evaluation_periods + EXTRA_PERIODS
    state = AlarmState.INSUFFICIENT_DATA
    transitions: list[Transition] = []
    t = first
    while t + period <= end:
        values = window(series, [t - i * period for i in range(span - 1, -1, -1)])
        new, reason = _decide(spec, values, state)
        if new != state:
            transitions.append(Transition(time=t + period, old=state, new=new, reason=reason))
            state = new
        t += period
    return transitions
