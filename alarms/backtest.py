"""Replay metric history through the deployed alarm definitions and say what they would do."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from alarms.evaluator import EXTRA_PERIODS, AlarmState, Transition, evaluate
from alarms.history import Sample
from alarms.model import AlarmSpec
from alarms.series import alarm_values, periods_with_data


@dataclass(frozen=True)
class BacktestResult:
    spec: AlarmSpec
    transitions: list[Transition]
    datapoints: int

    @property
    def alarms_raised(self) -> int:
        return sum(t.new is AlarmState.ALARM for t in self.transitions)

    def time_in_alarm(self, end: float) -> float:
        """Seconds spent in ALARM up to end."""
        total, since = 0.0, None
        for t in self.transitions:
            if t.new is AlarmState.ALARM:
                since = t.time
            elif since is not None:
                total += t.time - since
                since = None
        return total + (end - since if since is not None else 0.0)


def history_end(specs: Sequence[AlarmSpec], samples: Sequence[Sample]) -> float:
    """The default end of a backtest over a history: the end of the period that holds the last
    sample, for the alarm with the longest period, so every alarm evaluates the period that
    holds the last datapoint (a history that ends with a fatal XID raises that alarm)."""
    if not samples:
        raise ValueError("the history holds no samples")
    last = max(s.timestamp for s in samples)
    return max(last - last % spec.period_s + spec.period_s for spec in specs)


def backtest(
    specs: Sequence[AlarmSpec], samples: Sequence[Sample], *, start: float, end: float
) -> list[BacktestResult]:
    if end <= start:
        raise ValueError("the backtest window ends before it starts")
    results = []
    for spec in specs:
        reach = spec.evaluation_periods + EXTRA_PERIODS  # the first evaluation's range
        earliest = start - start % spec.period_s - spec.period_s * reach
        in_window = [s for s in samples if earliest <= s.timestamp < end]
        series = alarm_values(spec.metric, in_window, spec.period_s)
        results.append(
            BacktestResult(
                spec=spec,
                transitions=evaluate(spec, series, start=start, end=end),
                datapoints=periods_with_data(series),
            )
        )
    return results


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M")


def report(results: Sequence[BacktestResult], *, start: float, end: float) -> str:
    lines = [f"Backtest {_when(start)} to {_when(end)} UTC"]
    for result in results:
        spec = result.spec
        hours = result.time_in_alarm(end) / 3600
        lines.append("")
        lines.append(
            f"{spec.key} [{spec.severity}] {spec.title}: raised {result.alarms_raised} time(s), "
            f"{hours:.1f} h in ALARM, {result.datapoints} datapoints"
        )
        for t in result.transitions:
            if t.old is AlarmState.INSUFFICIENT_DATA and t.new is AlarmState.OK:
                continue  # the first evaluation of a healthy metric: not worth a line
            lines.append(f"  {_when(t.time)}  {t.old} -> {t.new}: {t.reason}")
    return "\n".join(lines)
