"""From samples to the one value per period an alarm evaluates, the way CloudWatch computes
it for a metric, a Metrics Insights query, or the ``m1 - FILL(m2, 0)`` expression."""

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

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


def query_values(query: InsightsQuery, samples: Iterable[Sample], period_s: int) -> Values:
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
    values: Values = {}
    for start, by_group in groups.items():
        if query.group_by:
            per_group = [aggregate(query.function, v) for v in by_group.values()]
            values[start] = min(per_group) if query.order == "ASC" else max(per_group)
        else:
            values[start] = aggregate(query.function, [v for vs in by_group.values() for v in vs])
    return values


def difference_values(diff: Difference, samples: Sequence[Sample], period_s: int) -> Values:
    first = metric_values(diff.minuend, samples, period_s)
    second = metric_values(diff.subtrahend, samples, period_s)
    return {start: value - second.get(start, 0.0) for start, value in first.items()}


def alarm_values(metric: AlarmMetric, samples: Sequence[Sample], period_s: int) -> Values:
    if isinstance(metric, MetricStat):
        return metric_values(metric, samples, period_s)
    if isinstance(metric, InsightsQuery):
        return query_values(metric, samples, period_s)
    return difference_values(metric, samples, period_s)
