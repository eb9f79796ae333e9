"""From samples to the one value per period an alarm evaluates, the way CloudWatch computes
it for a metric, a Metrics Insights query, or the ``m1 - FILL(m2, 0)`` expression.

A Metrics Insights query with ``GROUP BY ... ORDER BY FUNC() ASC|DESC`` gives one series per
group (:class:`Contributors`); at each evaluation CloudWatch runs the query over the window it
reads and, where it must cut, ranks the groups by FUNC over that whole window ("The
FUNCTION is used to calculate a single scalar value from each returned time series, and that
value is used to determine the order";
"ORDER BY MAX() DESC orders the results by the maximum data point observed within the time
range", Amazon CloudWatch User Guide, "Metrics Insights query components and syntax",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-metrics-insights-querylanguage.html).
:class:`Contributors` models which series a window returns.
"""

import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from cdk.alarms.model import AlarmMetric, BreachCount, Difference, InsightsQuery, MetricStat
from cdk.alarms.sizing import MAX_METRICS_PER_QUERY, MAX_SERIES_PER_QUERY
from cli.backtest.history import Sample

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


#: A percentile statistic, ``p99`` or ``p99.9`` ("pNN.NN", CloudWatch User Guide, "Statistics
#: definitions", https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Statistics-definitions.html).
_PERCENTILE = re.compile(r"p(\d{1,2}(?:\.\d+)?|100)")


def aggregate(statistic: str, values: Sequence[float]) -> float:
    percentile = _PERCENTILE.fullmatch(statistic)
    if percentile and values:
        # Nearest rank over the period's samples: a period of one sample (a statistic set or
        # a datapoint an hour) is that sample at any percentile.
        ordered = sorted(values)
        rank = math.ceil(float(percentile[1]) / 100 * len(ordered))
        return float(ordered[min(len(ordered), max(1, rank)) - 1])
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
class Contributors:
    """A ``GROUP BY`` query's series, one per group: each is a contributor of a multi time
    series alarm. ``metrics`` counts the metrics (dimension sets) behind each group, for the
    10,000 matched metrics limit."""

    names: tuple[str, ...]
    groups: dict[Group, Values]
    function: str
    descending: bool
    limit: int | None = None
    metrics: dict[Group, int] | None = None

    def returned(self, starts: Sequence[float]) -> tuple[list[Group], bool]:
        """The groups the query returns for a window of period starts, and whether the alarm
        would be PARTIAL_DATA. A group with no datapoint in the window is not returned; of the
        rest, ORDER BY FUNC over the window keeps the first ``limit`` (at most 500)
        ("If you use an ORDER BY clause, then all the metrics being processed are sorted, and
        the 500 that have the highest or lowest values according to your ORDER BY clause are
        returned", "Metrics Insights quotas",
        https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-metrics-insights-limits.html).
        PARTIAL_DATA: more than 500 series or more than 10,000 matched metrics ("Limits",
        https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-limits.html)."""
        scored: list[tuple[float, Group]] = []
        matched = 0
        for group, series in self.groups.items():
            found = [series[t] for t in starts if t in series]
            if found:
                scored.append((aggregate(self.function, found), group))
                matched += (self.metrics or {}).get(group, 1)
        scored.sort(key=lambda item: (-item[0] if self.descending else item[0], item[1]))
        cap = min(self.limit or MAX_SERIES_PER_QUERY, MAX_SERIES_PER_QUERY)
        partial = len(scored) > MAX_SERIES_PER_QUERY or matched > MAX_METRICS_PER_QUERY
        return [group for _, group in scored[:cap]], partial

    def periods(self) -> set[float]:
        return {t for series in self.groups.values() for t in series}


AlarmSeries = Values | Contributors


def window(values: Values, starts: Sequence[float]) -> list[float | None]:
    """The values an evaluation reads for these period starts (None: missing)."""
    return [values.get(t) for t in starts]


def periods_with_data(series: AlarmSeries) -> int:
    return len(series.periods() if isinstance(series, Contributors) else series)


def query_values(query: InsightsQuery, samples: Iterable[Sample], period_s: int) -> AlarmSeries:
    schema = frozenset(query.schema)
    where = set(query.where)
    groups: dict[float, dict[tuple[str, ...], list[float]]] = defaultdict(lambda: defaultdict(list))
    sources: dict[Group, set[frozenset[tuple[str, str]]]] = defaultdict(set)
    matches: dict[frozenset[tuple[str, str]], Group | None] = {}  # per series, not sample
    for s in samples:
        if s.namespace != query.namespace or s.metric != query.metric:
            continue
        if s.dimensions not in matches:
            names = {name for name, _ in s.dimensions}
            dims = dict(s.dimensions)
            ok = names == schema and where <= s.dimensions
            matches[s.dimensions] = tuple(dims[g] for g in query.group_by) if ok else None
        group = matches[s.dimensions]
        if group is None:
            continue
        groups[_period_of(s.timestamp, period_s)][group].append(s.value)
        sources[group].add(s.dimensions)
    if query.group_by:
        per_group: dict[Group, Values] = defaultdict(dict)
        for start, by_group in groups.items():
            for group, vs in by_group.items():
                per_group[group][start] = aggregate(query.function, vs)
        return Contributors(
            query.group_by,
            dict(per_group),
            query.function,
            descending=query.order == "DESC",
            limit=query.limit,
            metrics={group: len(dims) for group, dims in sources.items()},
        )
    return {
        start: aggregate(query.function, [v for vs in by_group.values() for v in vs])
        for start, by_group in groups.items()
    }


def difference_values(diff: Difference, samples: Sequence[Sample], period_s: int) -> Values:
    first = metric_values(diff.minuend, samples, period_s)
    second = metric_values(diff.subtrahend, samples, period_s)
    return {start: value - second.get(start, 0.0) for start, value in first.items()}


def breach_count_values(count: BreachCount, samples: Sequence[Sample], period_s: int) -> Values:
    """Per period, how many of the query's series breach (what the count expression gives):
    of the series the query returns, at most 500, and ORDER BY ranks the breaching ones
    first (the kinds' orders, cdk/alarms/catalog.py), so the count is the breaching series'
    up to 500. A period where no series has a datapoint has no count."""
    series = query_values(count.query, samples, period_s)
    assert isinstance(series, Contributors)
    breaching: dict[float, int] = defaultdict(int)
    for values in series.groups.values():
        for start, value in values.items():
            breaching[start] += count.breaches(value)
    cap = min(count.query.limit or MAX_SERIES_PER_QUERY, MAX_SERIES_PER_QUERY)
    return {start: float(min(n, cap)) for start, n in breaching.items()}


def alarm_values(metric: AlarmMetric, samples: Sequence[Sample], period_s: int) -> AlarmSeries:
    if isinstance(metric, MetricStat):
        return metric_values(metric, samples, period_s)
    if isinstance(metric, InsightsQuery):
        return query_values(metric, samples, period_s)
    if isinstance(metric, BreachCount):
        return breach_count_values(metric, samples, period_s)
    return difference_values(metric, samples, period_s)
