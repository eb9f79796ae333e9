"""CloudWatch's alarm evaluation rules, replayed over a history of period values.

At the end of each period the alarm looks at an evaluation range a little longer than its
evaluation periods (N), as CloudWatch does ("Configuring how CloudWatch alarms treat missing
data", Amazon CloudWatch User Guide):

- if the range holds at least N real datapoints, the most recent N real ones decide, and the
  missing-data setting plays no part;
- if it holds none: ``missing`` goes to INSUFFICIENT_DATA, ``ignore`` keeps the state,
  ``breaching`` counts every period as breaching, ``notBreaching`` as not;
- if it holds some but fewer than N: ``breaching`` and ``notBreaching`` fill the gaps;
  ``missing`` decides on the real datapoints alone; ``ignore`` lets them take the alarm to OK
  but not to ALARM (the documented rows ``0 - - - -`` gives OK and ``- - X - -`` keeps the
  state).

ALARM needs M (datapoints to alarm) breaching datapoints among those evaluated.
"""

from dataclasses import dataclass
from enum import StrEnum

from alarms.model import AlarmSpec, MissingData
from alarms.series import Values

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
    spec: AlarmSpec, window: list[float | None], state: AlarmState
) -> tuple[AlarmState, str]:
    n = spec.evaluation_periods
    real = [v for v in window if v is not None]
    if len(real) >= n:
        recent = real[-n:]
        hits = _breaching(spec, recent)
        verdict = AlarmState.ALARM if hits >= spec.datapoints_to_alarm else AlarmState.OK
        return verdict, f"{hits} of the last {n} datapoints {_shown(recent)} breached"
    if not real:
        return _no_data(spec, state)
    return _some_data(spec, real, state)


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


def _some_data(spec: AlarmSpec, real: list[float], state: AlarmState) -> tuple[AlarmState, str]:
    """Fewer real datapoints than evaluation periods: the missing-data setting decides."""
    m = spec.datapoints_to_alarm
    hits = _breaching(spec, real)
    gaps = spec.evaluation_periods - len(real)
    seen = f"{hits} of {len(real)} datapoints {_shown(real)} breached"
    treatment = spec.missing_data
    if treatment is MissingData.BREACHING:
        alarm = hits + gaps >= m
        reason = f"{seen}; {gaps} missing as breaching"
    elif treatment is MissingData.NOT_BREACHING:
        alarm = hits >= m
        reason = f"{seen}; {gaps} missing as not breaching"
    else:  # missing and ignore decide on the real datapoints alone
        alarm = hits >= min(m, len(real))
        reason = seen
        if treatment is MissingData.IGNORE and alarm:
            return state, f"{seen}; too few to change the state (ignore)"
    return (AlarmState.ALARM if alarm else AlarmState.OK), reason


def _shown(values: list[float]) -> str:
    return "[" + ", ".join(f"{v:.4g}" for v in values) + "]"


def evaluate(spec: AlarmSpec, values: Values, *, start: float, end: float) -> list[Transition]:
    """Every state change between start and end, evaluating at each period's end."""
    period = spec.period_s
    first = start - start % period
    span = spec.evaluation_periods + EXTRA_PERIODS
    state = AlarmState.INSUFFICIENT_DATA
    transitions: list[Transition] = []
    t = first
    while t + period <= end:
        window = [values.get(t - i * period) for i in range(span - 1, -1, -1)]
        new, reason = _decide(spec, window, state)
        if new != state:
            transitions.append(Transition(time=t + period, old=state, new=new, reason=reason))
            state = new
        t += period
    return transitions
