"""From samples to the one value per period an alarm evaluates, the way CloudWatch computes
it for a metric, a Metrics Insights query, or the ``m1 - FILL(m2, 0)`` expression.

A Metrics Insights query with ``GROUP BY ... ORDER BY FUNC() ASC|DESC LIMIT 1`` does not give
one fixed series: at each evaluation CloudWatch runs the query over the window it reads and
ranks the groups by FUNC over that whole window ("The FUNCTION is used to calculate a single
scalar value from each returned time series, and that value is used to determine the order";
"ORDER BY MAX() DESC orders the results by the maximum data point observed within the time
range", Amazon CloudWatch User Guide, "Metrics Insights query components and syntax",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-metrics-insights-querylanguage.html).
:class:`RankedSeries` models that: which GPU the alarm watches depends on the window.
"""

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from alarms.history import Sample
from alarms.model import AlarmMetric, Difference, InsightsQuery, MetricStat

Values = dict[float, float]  # period start -> value; a period with no entry is missing

_STATISTICS: dict[str, Callable[[Sequence[float]], float]] = {
    "Sum": sum,
    "SUM": sum,
    "Maximum": max,
    "MAX": max,
    "Minimum": min,
    "MIN": min,
    "Average": lambda v: sum(v) / len(v),
    "AVG": lambda v: sum(v) / len(v),
    "SampleCount": lambda v: float(len(v)),
    "COUNT": lambda v: float(len(v)),
}


def aggregate(statistic: str, values: Sequence[float]) -> float:
    try:
        return float(_STATISTICS[statistic](values))
    except KeyError:
        raise ValueError(f"statistic {statistic!r} is not supported") from None


def _period_of(timestamp: float, period_s: int) -> float:
    return timestamp - timestamp % period_s


def metric_values(stat: MetricStat, samples: Iterable[Sample], period_s: int) -> Values:
    wanted = frozenset(stat.dimensions)
    buckets: dict[float, list[float]] = defaultdict(list)
    for s in samples:
        if s.namespace == stat.namespace and s.metric == stat.metric and s.dimensions == wanted:
            buckets[_period_of(s.timestamp, period_s)].append(s.value)
    return {start: aggregate(stat.stat, values) for start, values in buckets.items()}


Group = tuple[str, ...]


@dataclass(frozen=True)
class RankedSeries:
    """``GROUP BY ... ORDER BY FUNC() ASC|DESC LIMIT 1``: per-group series, ranked per window."""

    groups: dict[Group, Values]
    function: str
    descending: bool

    def winner(self, starts: Sequence[float]) -> Group | None:
        """The group the query returns for a window of period starts: the one whose FUNC over
        its datapoints in the window ranks first (ties go to the first group in sort order)."""
        best: tuple[float, Group] | None = None
        for group in sorted(self.groups):
            series = self.groups[group]
            found = [series[t] for t in starts if t in series]
            if not found:
                continue  # no datapoint in the window: the query does not return this group
            score = aggregate(self.function, found)
            if best is None or (score > best[0] if self.descending else score < best[0]):
                best = (score, group)
        return None if best is None else best[1]

    def periods(self) -> set[float]:
        return {t for series in self.groups.values() for t in series}


AlarmSeries = Values | RankedSeries


def window(series: AlarmSeries, starts: Sequence[float]) -> list[float | None]:
    """The values an evaluation reads for these period starts (None: missing)."""
    if isinstance(series, RankedSeries):
        group = series.winner(starts)
        values = series.groups[group] if group is not None else {}
    else:
        values = series
    return [values.get(t) for t in starts]


def periods_with_data(series: AlarmSeries) -> int:
    return len(series.periods() if isinstance(series, RankedSeries) else series)


def query_values(query: InsightsQuery, samples: Iterable[Sample], period_s: int) -> AlarmSeries:
    schema = frozenset(query.schema)
    where = set(query.where)
    groups: dict[float, dict[tuple[str, ...], list[float]]] = defaultdict(lambda: defaultdict(list))
    for s in samples:
        if s.namespace != query.namespace or s.metric != query.metric:
            continue
        names = {name for name, _ in s.dimensions}
        if names != schema or not where <= s.dimensions:
            continue
        dims = dict(s.dimensions)
        group = tuple(dims[g] for g in query.group_by)
        groups[_period_of(s.timestamp, period_s)][group].append(s.value)
    if query.group_by:
        per_group: dict[Group, Values] = defaultdict(dict)
        for start, by_group in groups.items():
            for group, vs in by_group.items():
                per_group[group][start] = aggregate(query.function, vs)
        return RankedSeries(dict(per_group), query.function, descending=query.order == "DESC")
    return {
        start: aggregate(query.function, [v for vs in by_group.values() for v in vs])
        for start, by_group in groups.items()
    }


def difference_values(diff: Difference, samples: Sequence[Sample], period_s: int) -> Values:
    first = metric_values(diff.minuend, samples, period_s)
    second = metric_values(diff.subtrahend, samples, period_s)
    return {start: value - second.get(start, 0.0) for start, value in first.items()}


def alarm_values(metric: AlarmMetric, samples: Sequence[Sample], period_s: int) -> AlarmSeries:
    if isinstance(metric, MetricStat):
        return metric_values(metric, samples, period_s)
    if isinstance(metric, InsightsQuery):
        return query_values(metric, samples, period_s)
    return difference_values(metric, samples, period_s)
