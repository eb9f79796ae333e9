"""CloudWatch's evaluation rules, including the rows AWS documents for missing data
("Configuring how CloudWatch alarms treat missing data": three evaluation periods, three
datapoints to alarm, an evaluation range of five periods)."""

import pytest

from alarms.evaluator import AlarmState, evaluate
from alarms.model import AlarmSpec, Comparison, MetricStat, MissingData, Severity

P = 60
X, OK_VALUE = 10.0, 0.0  # breaching and not breaching against "> 5"


def _spec(missing: MissingData, *, n: int = 3, m: int = 3) -> AlarmSpec:
    return AlarmSpec(
        key="t",
        title="t",
        description="t",
        severity=Severity.WARNING,
        metric=MetricStat("N", "m", (), "Maximum"),
        period_s=P,
        evaluation_periods=n,
        datapoints_to_alarm=m,
        threshold=5,
        comparison=Comparison.GREATER,
        missing_data=missing,
        missing_data_reason="test",
    )


def _final_state(row: str, missing: MissingData, start_state: AlarmState) -> AlarmState:
    """Evaluate once, at the end of the row's five periods, from a given state."""
    values: dict[float, float] = {
        i * P: (X if c == "X" else OK_VALUE) for i, c in enumerate(row.split()) if c != "-"
    }
    # A healthy history before the row puts the alarm in start_state, when it is OK or ALARM.
    history: dict[float, float] = {}
    if start_state is not AlarmState.INSUFFICIENT_DATA:
        fill = X if start_state is AlarmState.ALARM else OK_VALUE
        history = {-(i + 1) * P: fill for i in range(5)}
    transitions = evaluate(_spec(missing), {**history, **values}, start=-5 * P, end=5 * P)
    state = AlarmState.INSUFFICIENT_DATA
    for t in transitions:
        state = t.new
    return state


DOCUMENTED = [
    # row            MISSING            IGNORE        BREACHING        NOT BREACHING
    ("0 - X - X", AlarmState.OK, AlarmState.OK, AlarmState.OK, AlarmState.OK),
    ("0 - - - -", AlarmState.OK, AlarmState.OK, AlarmState.OK, AlarmState.OK),
    ("- - - - -", AlarmState.INSUFFICIENT_DATA, None, AlarmState.ALARM, AlarmState.OK),
    ("0 X X - X", AlarmState.ALARM, AlarmState.ALARM, AlarmState.ALARM, AlarmState.ALARM),
    ("- - X - -", AlarmState.ALARM, None, AlarmState.ALARM, AlarmState.OK),
]


@pytest.mark.parametrize(("row", "missing", "ignore", "breaching", "not_breaching"), DOCUMENTED)
def test_documented_missing_data_rows(
    row: str,
    missing: AlarmState,
    ignore: AlarmState | None,
    breaching: AlarmState,
    not_breaching: AlarmState,
) -> None:
    for start in (AlarmState.OK, AlarmState.ALARM):
        expected = {
            MissingData.MISSING: missing,
            MissingData.IGNORE: ignore or start,  # None: "retain current state"
            MissingData.BREACHING: breaching,
            MissingData.NOT_BREACHING: not_breaching,
        }
        for treatment, want in expected.items():
            assert _final_state(row, treatment, start) is want, (row, treatment, start)


def test_m_out_of_n_needs_m_breaching_among_the_last_n() -> None:
    spec = _spec(MissingData.MISSING, n=5, m=3)
    values: dict[float, float] = {
        i * P: v for i, v in enumerate([X, OK_VALUE, X, OK_VALUE, OK_VALUE, X, X, OK_VALUE])
    }
    transitions = evaluate(spec, values, start=0, end=8 * P)
    # Periods end at 60..480; ALARM needs 3 X among the last 5 real datapoints.
    assert [(t.time, t.new) for t in transitions] == [
        (60, AlarmState.ALARM),  # one datapoint, which breaches: "missing" decides on it alone
        (120, AlarmState.OK),  # X O: fewer real points than N, and not all of them breach
        (420, AlarmState.ALARM),  # X O O X X: 3 of the last 5
        (480, AlarmState.OK),  # O O X X O: 2 of 5
    ]


def test_an_alarm_re_evaluates_its_last_datapoint_while_data_has_stopped() -> None:
    spec = _spec(MissingData.NOT_BREACHING, n=1, m=1)
    transitions = evaluate(spec, {0: X}, start=0, end=10 * P)
    # The lone breaching point stays in the 3-period evaluation range for three evaluations.
    assert [(t.time, t.new) for t in transitions] == [(60, AlarmState.ALARM), (240, AlarmState.OK)]


def test_threshold_edges_follow_the_comparison() -> None:
    for comparison, value, fires in [
        (Comparison.GREATER, 5.0, False),
        (Comparison.GREATER_OR_EQUAL, 5.0, True),
        (Comparison.LESS, 5.0, False),
        (Comparison.LESS_OR_EQUAL, 5.0, True),
        (Comparison.LESS, 4.99, True),
    ]:
        assert comparison.breaches(value, 5.0) is fires
