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

from dataclasses import dataclass, field
from enum import StrEnum

from cdk.alarms.model import AlarmSpec, MissingData
from cdk.alarms.sizing import MAX_CONTRIBUTORS_IN_ALARM
from cli.backtest.series import Contributors, Group, Values, window

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


def _ranges(spec: AlarmSpec, *, start: float, end: float) -> list[tuple[float, list[float]]]:
    """Each evaluation's time (a period's end) with the period starts its range reads."""
    period = spec.period_s
    span = spec.evaluation_periods + EXTRA_PERIODS
    t = start - start % period
    ranges = []
    while t + period <= end:
        ranges.append((t + period, [t - i * period for i in range(span - 1, -1, -1)]))
        t += period
    return ranges


def evaluate(spec: AlarmSpec, series: Values, *, start: float, end: float) -> list[Transition]:
    """Every state change of a one-series alarm between start and end, evaluating at each
    period's end."""
    state = AlarmState.INSUFFICIENT_DATA
    transitions: list[Transition] = []
    for time, starts in _ranges(spec, start=start, end=end):
        new, reason = _decide(spec, window(series, starts), state)
        if new != state:
            transitions.append(Transition(time=time, old=state, new=new, reason=reason))
            state = new
    return transitions


@dataclass
class MultiSeriesOutcome:
    """A multi time series alarm over a backtest: the alarm's own state changes, each
    contributor's (keyed by its GROUP BY values), and how often it would be PARTIAL_DATA."""

    transitions: list[Transition] = field(default_factory=list)
    contributors: dict[Group, list[Transition]] = field(default_factory=dict)
    partial_evaluations: int = 0
    most_series: int = 0
    #: Distinct series the alarm evaluated at least once.
    evaluated: int = 0


#: A contributor's state reason when its series is no longer returned (CloudWatch's own words).
NO_DATA_FOR_CONTRIBUTOR = "No data was returned for this contributor"


def _contributor_state(verdict: AlarmState) -> AlarmState:
    """A contributor is only ever OK or ALARM: "For Metrics Insights alarms that monitor
    multiple time series, each time series (contributor) can only be in ALARM or OK state,
    never in INSUFFICIENT_DATA state. This is because a time series only exists when data is
    present" (CloudWatch User Guide, "Acting on alarm changes",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Acting_Alarm_Changes.html).
    Where the one-series rules would say INSUFFICIENT_DATA (too few datapoints, the premature
    transition rule), the contributor is not in ALARM, so it is OK."""
    return AlarmState.ALARM if verdict is AlarmState.ALARM else AlarmState.OK


def evaluate_contributors(
    spec: AlarmSpec, series: Contributors, *, start: float, end: float
) -> MultiSeriesOutcome:
    """A multi time series alarm: each series the query returns is a contributor with its own
    state, decided by the same rules as a one-series alarm; the alarm is in ALARM while any
    contributor is ("each returned time series becomes a contributor to the alarm", "Create a
    CloudWatch alarm based on a Metrics Insights query",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Create_Metrics_Insights_Alarm.html).
    Its reason says how many series evaluated to ALARM, "100+" beyond the 100 contributors an
    alarm lists ("Limits",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-limits.html).

    A contributor is OK or ALARM, never INSUFFICIENT_DATA (:func:`_contributor_state`); a new
    one starts OK. A series the query no longer returns (no datapoint in the range) goes to
    OK, whatever the missing-data setting, and leaves the alarm: "If a time series is not
    retrieved by the query anymore, it will transition to OK no matter the treat missing data
    treatment. ... the StateReason specifies that the aforementioned contributor was not found
    with the message, "No data was returned for this contributor"" (same page, "Missing data in
    CloudWatch Metrics Insights alarms"). So a GPU whose exporter stops clears its
    contributor, never pages: silence needs its own detection (the ``gpu-silent`` alarm).
    With no series at all the alarm's missing-data setting decides, as for one series ("At
    alarm level, if the query returns an empty result (no time series at all), the treat
    missing data treatment is applied", same section)."""
    outcome = MultiSeriesOutcome()
    states: dict[Group, AlarmState] = {}
    state = AlarmState.INSUFFICIENT_DATA
    seen: set[Group] = set()
    for time, starts in _ranges(spec, start=start, end=end):
        returned, partial = series.returned(starts)
        seen.update(returned)
        outcome.partial_evaluations += partial
        outcome.most_series = max(outcome.most_series, len(returned))
        now_returned = set(returned)
        for group in [g for g in states if g not in now_returned]:
            old = states.pop(group)
            if old is not AlarmState.OK:
                outcome.contributors[group].append(
                    Transition(time, old, AlarmState.OK, NO_DATA_FOR_CONTRIBUTOR)
                )
        for group in returned:
            old = states.get(group, AlarmState.OK)
            verdict, reason = _decide(spec, window(series.groups[group], starts), old)
            new = _contributor_state(verdict)
            if new != old:
                outcome.contributors.setdefault(group, []).append(
                    Transition(time, old, new, reason)
                )
            states[group] = new
        new, reason = _alarm_state(spec, states, state)
        if new != state:
            outcome.transitions.append(Transition(time, state, new, reason))
            state = new
    outcome.evaluated = len(seen)
    return outcome


def _alarm_state(
    spec: AlarmSpec, states: dict[Group, AlarmState], state: AlarmState
) -> tuple[AlarmState, str]:
    if not states:
        return _no_data(spec, state)
    alarming = sum(s is AlarmState.ALARM for s in states.values())
    if alarming:
        shown = f"{alarming}" if alarming <= MAX_CONTRIBUTORS_IN_ALARM else "100+"
        of = f" out of {len(states)}" if alarming <= MAX_CONTRIBUTORS_IN_ALARM else ""
        return AlarmState.ALARM, f"{shown}{of} time series evaluated to ALARM"
    return AlarmState.OK, f"0 out of {len(states)} time series evaluated to ALARM"
