"""CloudWatch's evaluation rules, tested against every row and example AWS documents.

Source: Amazon CloudWatch User Guide, "Using Amazon CloudWatch alarms",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html
(awsdocs/amazon-cloudwatch-user-guide, doc_source/AlarmThatSendsEmail.md):

- "Configuring how CloudWatch alarms treat missing data": two tables, evaluation periods 3 and
  an evaluation range of 5; datapoints to alarm 3 in the first, 2 in the second. "0 is a
  non-breaching data point, X is a breaching data point, and - is a missing data point",
  most recent on the right.
- "Avoiding premature transitions to alarm state": "the alarm does not go immediately into
  ALARM state when the data is either - - - - X or - - - X - and Datapoints to Alarm is 3.
  This way, false positives are avoided when the next data point is non-breaching and causes
  the data to be - - - X O or - - X - O. However, if the last few data points are - - X - -,
  the alarm goes into ALARM state even if missing data points are treated as missing. This is
  because alarms are designed to always go into ALARM state when the oldest available
  breaching datapoint during the Evaluation Periods number of data points is at least as old
  as the value of Datapoints to Alarm, and all other more recent data points are breaching or
  missing."
- An earlier revision of the same page (awsdocs/amazon-cloudwatch-user-guide commit
  cd4004cd5ec83877bd1d0dcd2814ffbc5900bcba) listed the row "- - - - X" in both tables as
  "Insufficient data | Retain current state | ALARM | OK": what a premature breaching point
  gives instead of ALARM.
"""

import pytest

from cdk.alarms.model import AlarmSpec, Comparison, MetricStat, MissingData, Severity
from cli.backtest.evaluator import AlarmState, evaluate

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


INS, R = AlarmState.INSUFFICIENT_DATA, None  # R: "Retain current state"
OK, ALARM = AlarmState.OK, AlarmState.ALARM

# (M, row, MISSING, IGNORE, BREACHING, NOT BREACHING), copied from the User Guide's tables.
DOCUMENTED = [
    # "Datapoints to Alarm and Evaluation Periods are both 3"
    (3, "0 - X - X", OK, OK, OK, OK),
    (3, "0 - - - -", OK, OK, OK, OK),
    (3, "- - - - -", INS, R, ALARM, OK),
    (3, "0 X X - X", ALARM, ALARM, ALARM, ALARM),
    (3, "- - X - -", ALARM, R, ALARM, OK),
    # "Datapoints to Alarm is only 2 while Evaluation Periods is 3"
    (2, "0 - X - X", ALARM, ALARM, ALARM, ALARM),
    (2, "0 0 X 0 X", ALARM, ALARM, ALARM, ALARM),
    (2, "0 - X - -", OK, OK, ALARM, OK),
    (2, "- - - - 0", OK, OK, ALARM, OK),
    (2, "- - - X -", ALARM, R, ALARM, OK),
    # The earlier revision's row 5 of both tables
    (3, "- - - - X", INS, R, ALARM, OK),
    (2, "- - - - X", INS, R, ALARM, OK),
]


def _final_state(
    row: str, missing: MissingData, start_state: AlarmState, *, m: int = 3
) -> AlarmState:
    """Evaluate once, at the end of the row's five periods, from a given state."""
    values: dict[float, float] = {
        i * P: (X if c == "X" else OK_VALUE) for i, c in enumerate(row.split()) if c != "-"
    }
    # A history before the row puts the alarm in start_state, when it is OK or ALARM.
    history: dict[float, float] = {}
    if start_state is not AlarmState.INSUFFICIENT_DATA:
        fill = X if start_state is AlarmState.ALARM else OK_VALUE
        history = {-(i + 1) * P: fill for i in range(5)}
    transitions = evaluate(_spec(missing, m=m), {**history, **values}, start=-5 * P, end=5 * P)
    state = AlarmState.INSUFFICIENT_DATA
    for t in transitions:
        state = t.new
    return state


@pytest.mark.parametrize(
    ("m", "row", "missing", "ignore", "breaching", "not_breaching"), DOCUMENTED
)
def test_documented_missing_data_rows(
    m: int,
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
            assert _final_state(row, treatment, start, m=m) is want, (row, treatment, start)


@pytest.mark.parametrize(
    ("row", "alarms"),
    [
        ("- - - - X", False),  # "does not go immediately into ALARM state"
        ("- - - X -", False),  # the same, for Datapoints to Alarm 3
        ("- - - X 0", False),  # "false positives are avoided when the next data point is
        ("- - X - 0", False),  # non-breaching"
        ("- - X - -", True),  # "goes into ALARM state even if missing data points are missing"
    ],
)
def test_documented_premature_transition_examples(row: str, alarms: bool) -> None:
    # The examples speak of "missing"; with "ignore" none of them alarms from INSUFFICIENT_DATA
    # (the tables' ignore column retains the state for - - X - -).
    treatments = [MissingData.MISSING] if alarms else [MissingData.MISSING, MissingData.IGNORE]
    for treatment in treatments:
        state = _final_state(row, treatment, AlarmState.INSUFFICIENT_DATA, m=3)
        assert (state is AlarmState.ALARM) is alarms, (row, treatment, state)


def test_one_breaching_point_alarms_once_it_is_m_periods_old_with_nothing_better_since() -> None:
    # gpu-lost's shape: 2 of 2, one-minute periods, missing treated as missing. A single
    # gpu_healthy=0 after an exporter restart does not page at once; it pages a period later
    # if nothing healthy follows, and not at all if a healthy sample does.
    spec = _spec(MissingData.MISSING, n=2, m=2)
    lone = evaluate(spec, {0: X}, start=0, end=4 * P)
    assert [(t.time, t.new) for t in lone] == [
        (120, AlarmState.ALARM),
        (180, AlarmState.INSUFFICIENT_DATA),  # the point has left the last N=2 periods
    ]
    recovered = evaluate(spec, {0: X, P: OK_VALUE}, start=0, end=2 * P)
    assert [(t.time, t.new) for t in recovered] == [(120, AlarmState.OK)]


def test_m_out_of_n_needs_m_breaching_among_the_last_n() -> None:
    spec = _spec(MissingData.MISSING, n=5, m=3)
    values: dict[float, float] = {
        i * P: v for i, v in enumerate([X, OK_VALUE, X, OK_VALUE, OK_VALUE, X, X, OK_VALUE])
    }
    transitions = evaluate(spec, values, start=0, end=8 * P)
    # Periods end at 60..480; ALARM needs 3 X among the last 5 real datapoints.
    assert [(t.time, t.new) for t in transitions] == [
        # 60: one breaching datapoint, one period old of the three that alarm: premature,
        # so the state stays INSUFFICIENT_DATA (no transition).
        (120, AlarmState.OK),  # X O: fewer real points than N, and one does not breach
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
