"""Replay metric history through the deployed alarm definitions and say what they would do."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from alarms.evaluator import AlarmState, Transition, evaluate
from alarms.history import Sample
from alarms.model import AlarmSpec
from alarms.series import alarm_values


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


def backtest(
    specs: Sequence[AlarmSpec], samples: Sequence[Sample], *, start: float, end: float
) -> list[BacktestResult]:
    if end <= start:
        raise ValueError("the backtest window ends before it starts")
    results = []
    for spec in specs:
        values = alarm_values(spec.metric, samples, spec.period_s)
        in_window = {t: v for t, v in values.items() if start - spec.period_s * 10 <= t < end}
        results.append(
            BacktestResult(
                spec=spec,
                transitions=evaluate(spec, in_window, start=start, end=end),
                datapoints=len(in_window),
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
