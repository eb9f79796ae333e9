"""A small CloudWatch Metrics Insights evaluator: the query subset the alarms and dashboards use,
run over a metric history, returning the series CloudWatch would return.

``SELECT FUNC(metric) FROM SCHEMA("ns", dim, ...) [WHERE k = 'v' [AND ...]]
[GROUP BY g, ...] [ORDER BY FUNC() ASC|DESC] [LIMIT n]``

As CloudWatch does, SCHEMA matches only series with exactly those dimensions; GROUP BY gives one
series per group, FUNC aggregating every matching datapoint of the group in each period; ORDER
BY ranks the groups by FUNC over each one's datapoints in the time range ("ORDER BY MAX() DESC
orders the results by the maximum data point observed within the time range"), and LIMIT keeps
the first n. A query returns at most 500 series whatever its LIMIT ("Metrics Insights query
components and syntax" and "Metrics Insights quotas", Amazon CloudWatch User Guide,
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-metrics-insights-querylanguage.html,
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-metrics-insights-limits.html).
"""

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from cdk.alarms.sizing import MAX_SERIES_PER_QUERY
from cli.backtest.history import Sample
from cli.backtest.series import Values, aggregate

#: The most series one Metrics Insights query returns.
MAX_SERIES = MAX_SERIES_PER_QUERY

_QUERY = re.compile(
    r"""^\s*SELECT\s+(?P<func>AVG|MAX|MIN|SUM|COUNT)\((?P<metric>[A-Za-z0-9_.\-]+)\)
    \s+FROM\s+SCHEMA\((?P<schema>[^)]*)\)
    (?:\s+WHERE\s+(?P<where>.+?))?
    (?:\s+GROUP\s+BY\s+(?P<group>[A-Za-z0-9_,\s]+?))?
    (?:\s+ORDER\s+BY\s+(?P<ofunc>AVG|MAX|MIN|SUM|COUNT)\(\)\s+(?P<order>ASC|DESC))?
    (?:\s+LIMIT\s+(?P<limit>\d+))?\s*$""",
    re.VERBOSE | re.IGNORECASE,
)
_CONDITION = re.compile(r"^\s*([A-Za-z0-9_]+)\s*=\s*'([^']*)'\s*$")


class InsightsQueryError(ValueError):
    """A query outside the supported subset; the message names the part."""


@dataclass(frozen=True)
class Query:
    namespace: str
    metric: str
    schema: tuple[str, ...]
    where: tuple[tuple[str, str], ...]
    function: str
    group_by: tuple[str, ...] = ()
    order: str | None = None
    limit: int = MAX_SERIES


@dataclass(frozen=True)
class Series:
    #: The GROUP BY values (empty for a query without GROUP BY).
    group: tuple[str, ...]
    values: Values
    #: FUNC over the series' datapoints in the range: what ORDER BY ranks it by.
    score: float


def parse(sql: str) -> Query:
    match = _QUERY.match(sql)
    if match is None:
        raise InsightsQueryError(f"not a supported Metrics Insights query: {sql!r}")
    schema = [part.strip() for part in match["schema"].split(",")]
    namespace = schema[0].strip('"')
    where: list[tuple[str, str]] = []
    if match["where"]:
        for condition in re.split(r"\s+AND\s+", match["where"], flags=re.IGNORECASE):
            found = _CONDITION.match(condition)
            if found is None:
                raise InsightsQueryError(f"unsupported condition {condition!r} in {sql!r}")
            where.append((found[1], found[2]))
    function = match["func"].upper()
    if match["ofunc"] and match["ofunc"].upper() != function:
        raise InsightsQueryError(f"ORDER BY {match['ofunc']}() differs from SELECT in {sql!r}")
    group = tuple(g.strip() for g in match["group"].split(",")) if match["group"] else ()
    # LIMIT: "The maximum value that you can specify is 500" (Metrics Insights query components
    # and syntax): CloudWatch refuses a larger one, so a query that asks for it is no alarm's.
    limit = int(match["limit"]) if match["limit"] else MAX_SERIES
    if not 1 <= limit <= MAX_SERIES:
        raise InsightsQueryError(f"LIMIT {limit} is outside 1 to {MAX_SERIES} in {sql!r}")
    return Query(
        namespace=namespace,
        metric=match["metric"],
        schema=tuple(schema[1:]),
        where=tuple(where),
        function=function,
        group_by=group,
        order=match["order"].upper() if match["order"] else None,
        limit=limit,
    )


def run(query: Query, samples: Iterable[Sample], period_s: int) -> list[Series]:
    """The series the query returns, in its order, at most LIMIT (and 500) of them."""
    schema = frozenset(query.schema)
    wanted = set(query.where)
    buckets: dict[tuple[str, ...], dict[float, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for s in samples:
        if s.namespace != query.namespace or s.metric != query.metric:
            continue
        if {name for name, _ in s.dimensions} != schema or not wanted <= s.dimensions:
            continue
        dims = dict(s.dimensions)
        group = tuple(dims[g] for g in query.group_by)
        buckets[group][s.timestamp - s.timestamp % period_s].append(s.value)
    series = []
    for group, periods in buckets.items():
        values = {t: aggregate(query.function, vs) for t, vs in periods.items()}
        series.append(Series(group, values, aggregate(query.function, list(values.values()))))
    series.sort(key=lambda s: s.group)
    if query.order is not None:
        series.sort(key=lambda s: s.score, reverse=query.order == "DESC")
    return series[: query.limit]


def evaluate(sql: str, samples: Iterable[Sample], period_s: int) -> list[Series]:
    return run(parse(sql), samples, period_s)
