"""Replay metric history through the deployed alarm definitions and say what they would do."""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from cdk.alarms.model import (
    AlarmMetric,
    AlarmSpec,
    BreachCount,
    Difference,
    InsightsQuery,
    MetricStat,
)
from cdk.alarms.promql import PromQLQuery
from cli.backtest.evaluator import (
    EXTRA_PERIODS,
    AlarmState,
    MultiSeriesOutcome,
    Transition,
    evaluate,
    evaluate_contributors,
)
from cli.backtest.history import Sample
from cli.backtest.series import Contributors, Group, alarm_values, periods_with_data


@dataclass(frozen=True)
class BacktestResult:
    spec: AlarmSpec
    transitions: list[Transition]
    datapoints: int
    #: Multi time series alarms: each contributor's state changes, by its GROUP BY values.
    contributors: dict[Group, list[Transition]] = field(default_factory=dict)
    #: The GROUP BY dimensions that name a contributor (ClusterName, NodeName, GpuIndex).
    contributor_names: tuple[str, ...] = ()
    #: Evaluations that would be PARTIAL_DATA (over 500 series or 10,000 metrics).
    partial_evaluations: int = 0
    #: The most series one evaluation returned.
    most_series: int = 0
    #: Distinct series (GPUs) evaluated at least once.
    evaluated: int = 0
    #: Dimension sets the history gives this alarm's metric that its query cannot match
    #: (a SCHEMA takes exactly its dimensions): why an alarm read no datapoints.
    unmatched_dimensions: tuple[tuple[str, ...], ...] = ()

    def named(self, group: Group) -> str:
        return ", ".join(f"{k}={v}" for k, v in zip(self.contributor_names, group, strict=True))

    @property
    def contributors_alarmed(self) -> list[Group]:
        """Contributors that went into ALARM at least once, in order."""
        return sorted(
            g for g, ts in self.contributors.items() if any(t.new is AlarmState.ALARM for t in ts)
        )

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


class SampleIndex:
    """Samples by namespace and metric, and by the values of a query's WHERE dimensions, so
    each of many sharded alarms reads only its own samples (one pass each, not one per alarm)."""

    def __init__(self, samples: Sequence[Sample]) -> None:
        self._by_metric: dict[tuple[str, str], list[Sample]] = defaultdict(list)
        for s in samples:
            self._by_metric[(s.namespace, s.metric)].append(s)
        self._parts: dict[
            tuple[str, str, tuple[str, ...]], dict[tuple[str | None, ...], list[Sample]]
        ] = {}

    def _metric(self, namespace: str, metric: str) -> list[Sample]:
        return self._by_metric.get((namespace, metric), [])

    def unmatched(self, metric: AlarmMetric) -> tuple[tuple[str, ...], ...]:
        """The history's dimension sets of a Metrics Insights query's metric that are not
        its SCHEMA (a sample without ``Shard`` matches no per-GPU alarm query)."""
        if isinstance(metric, BreachCount):
            metric = metric.query
        if not isinstance(metric, InsightsQuery):
            return ()
        wanted = tuple(sorted(metric.schema))
        found = {
            tuple(sorted(k for k, _ in s.dimensions))
            for s in self._metric(metric.namespace, metric.metric)
        }
        return tuple(sorted(d for d in found if d != wanted))

    def for_metric(self, metric: AlarmMetric) -> list[Sample]:
        if isinstance(metric, BreachCount):
            metric = metric.query
        if isinstance(metric, MetricStat):
            return self._metric(metric.namespace, metric.metric)
        if isinstance(metric, Difference):
            return [
                *self._metric(metric.minuend.namespace, metric.minuend.metric),
                *self._metric(metric.subtrahend.namespace, metric.subtrahend.metric),
            ]
        keys = tuple(k for k, _ in metric.where)
        part_key = (metric.namespace, metric.metric, keys)
        if part_key not in self._parts:
            parts: dict[tuple[str | None, ...], list[Sample]] = defaultdict(list)
            for s in self._metric(metric.namespace, metric.metric):
                dims = dict(s.dimensions)
                parts[tuple(dims.get(k) for k in keys)].append(s)
            self._parts[part_key] = parts
        return self._parts[part_key].get(tuple(v for _, v in metric.where), [])


def backtest(
    specs: Sequence[AlarmSpec], samples: Sequence[Sample], *, start: float, end: float
) -> list[BacktestResult]:
    if end <= start:
        raise ValueError("the backtest window ends before it starts")
    index = SampleIndex(samples)
    results = []
    for spec in specs:
        metric = spec.metric
        if isinstance(metric, PromQLQuery):  # replayed by cli/backtest/promql_alarm.py
            raise ValueError(f"{spec.key} is a PromQL alarm: replay it with promql_alarm.replay")
        reach = spec.evaluation_periods + EXTRA_PERIODS  # the first evaluation's range
        earliest = start - start % spec.period_s - spec.period_s * reach
        in_window = [s for s in index.for_metric(metric) if earliest <= s.timestamp < end]
        series = alarm_values(metric, in_window, spec.period_s)
        if isinstance(series, Contributors):
            outcome = evaluate_contributors(spec, series, start=start, end=end)
            # Said only when nothing matched: the exporter's own cluster-wide copies of the
            # metric never match a per-GPU query, and are no mistake.
            unmatched = () if in_window else index.unmatched(metric)
            results.append(_multi(spec, series, outcome, unmatched))
            continue
        results.append(
            BacktestResult(
                spec=spec,
                transitions=evaluate(spec, series, start=start, end=end),
                datapoints=periods_with_data(series),
            )
        )
    return results


def _multi(
    spec: AlarmSpec,
    series: Contributors,
    outcome: MultiSeriesOutcome,
    unmatched: tuple[tuple[str, ...], ...],
) -> BacktestResult:
    return BacktestResult(
        unmatched_dimensions=unmatched,
        spec=spec,
        transitions=outcome.transitions,
        datapoints=periods_with_data(series),
        contributors=outcome.contributors,
        contributor_names=series.names,
        partial_evaluations=outcome.partial_evaluations,
        most_series=outcome.most_series,
        evaluated=outcome.evaluated,
    )


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
        if result.spec.multi_series:
            lines.append(
                f"  up to {result.most_series} series per evaluation"
                + (
                    f"; PARTIAL_DATA in {result.partial_evaluations} evaluation(s)"
                    if result.partial_evaluations
                    else ""
                )
            )
        if isinstance(spec.metric, InsightsQuery):
            for dims in result.unmatched_dimensions:
                lines.append(
                    f"  warning: samples of {spec.metric.metric} with dimensions "
                    f"({', '.join(dims)}) match no series of this alarm, whose query takes "
                    f"exactly ({', '.join(spec.metric.schema)})"
                )
        for t in result.transitions:
            if t.old is AlarmState.INSUFFICIENT_DATA and t.new is AlarmState.OK:
                continue  # the first evaluation of a healthy metric: not worth a line
            lines.append(f"  {_when(t.time)}  {t.old} -> {t.new}: {t.reason}")
        for group in result.contributors_alarmed:
            lines.append(f"    contributor {result.named(group)}:")
            for t in result.contributors[group]:
                if t.new is AlarmState.ALARM or t.old is AlarmState.ALARM:
                    lines.append(f"      {_when(t.time)}  {t.old} -> {t.new}: {t.reason}")
    return "\n".join(lines)
