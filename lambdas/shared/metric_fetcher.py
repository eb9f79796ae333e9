"""GetMetricData in full batches: as many queries per call as CloudWatch allows.

One call takes at most 500 queries and returns at most 100,800 datapoints, so N series of P
points need at least max(ceil(N / 500), ceil(N * P / 100800)) calls. Queries are packed in
order under both limits; when the next does not fit, the call's room is first filled with
the queries among the next ``LOOKAHEAD`` that do (a volume's one-entry screens beside another
volume's three-entry math), so every call but the last is full whenever small queries are
near: that reaches the floor for the storage plan (tests/unit/.../test_ebs_plan.py). Packing in
order, rather than sorting the whole plan by size, keeps a resource's series in one or two
neighbouring calls, so results are yielded one batch at a time and memory is bounded by a
batch, not by the fleet.

Each result carries a ``StatusCode`` (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_MetricDataResult.html):
``PartialData`` means more points follow with ``NextToken``, which the fetch follows until
none is returned; ``InternalError`` and ``Forbidden`` mean the points are not the series, so
they are not read as data: the series is returned with ``error`` set and no values, for the
caller to skip its resource.

A query may also be metric math over input series (``math``): CloudWatch reduces them
server-side and returns only the expression's points; the inputs still count as queries
against the 500 and as metrics requested, which is what GetMetricData is billed by.
"""

import re
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from math import ceil as math_ceil
from typing import Any, TypeVar

T = TypeVar("T")

MAX_QUERIES_PER_CALL = 500
MAX_DATAPOINTS_PER_CALL = 100_800
#: How far past a query that does not fit the packer looks for ones that do.
LOOKAHEAD = 32
#: Result statuses whose points are not the series.
FAILED_STATUSES = frozenset({"InternalError", "Forbidden"})
#: us-east-1 list price of GetMetricData: $0.01 per 1,000 metrics requested
#: (https://aws.amazon.com/cloudwatch/pricing/, "API Requests": GetMetricData).
USD_PER_METRIC_REQUESTED = 0.01 / 1000


@dataclass(frozen=True)
class MetricQuery:
    """One series: ``key`` is the caller's, to find the result again."""

    key: tuple[str, ...]
    namespace: str
    metric: str
    dimensions: tuple[tuple[str, str], ...]
    stat: str
    period_s: int
    #: Metric math over ``inputs`` (each written ``{0}``, ``{1}`` ...): only its result is
    #: returned; namespace, metric, dimensions and stat are then unused.
    expression: str = ""
    inputs: tuple["MetricQuery", ...] = ()

    @property
    def metrics(self) -> int:
        """Metrics this query requests: itself, or each of its inputs."""
        return len(self.inputs) if self.expression else 1


def math(
    key: tuple[str, ...], expression: str, inputs: tuple[MetricQuery, ...], period_s: int
) -> MetricQuery:
    """A metric math query, e.g. ``math(key, "FILL({0}, 0) + FILL({1}, 0)", inputs, 3600)``."""
    return MetricQuery(key, "", "", (), "", period_s, expression=expression, inputs=inputs)


_TERM = re.compile(r"FILL\((\w+),\s*(-?[\d.]+)\)|(\w+)")


def sum_terms(expression: str) -> list[tuple[str, float | None]] | None:
    """The ids a sum expression adds (``a + b``, ``FILL(a, 0) + FILL(b, 0)``), each with the
    value FILL gives its missing datapoints (None: unfilled); None if it is not such a sum."""
    terms: list[tuple[str, float | None]] = []
    for text in expression.split("+"):
        match = _TERM.fullmatch(text.strip())
        if not match:
            return None
        filled, value, bare = match.groups()
        terms.append((filled, float(value)) if filled else (bare, None))
    return terms if len(terms) > 1 else None


def add_series(
    inputs: Sequence[tuple[Sequence[T], Sequence[float], float | None]],
    periods: Sequence[T] = (),
) -> tuple[list[T], list[float]]:
    """A sum's points as metric math computes them, timestamp by timestamp: at each timestamp
    of any input, and at each of the request's ``periods`` (FILL gives a filled input a value
    in every period of the range, so an hour without any datapoint still has a sum of the
    FILL values), the inputs' values, a missing one its FILL value; a timestamp an unfilled
    input lacks has no sum."""
    values = [dict(zip(stamps, vals, strict=True)) for stamps, vals, _ in inputs]
    stamps = sorted({t for series in values for t in series} | set(periods))  # type: ignore[type-var]
    out_t: list[T] = []
    out_v: list[float] = []
    for t in stamps:
        points = [v.get(t, fill) for v, (_, _, fill) in zip(values, inputs, strict=True)]
        if all(p is not None for p in points):
            out_t.append(t)
            out_v.append(sum(p for p in points if p is not None))
    return out_t, out_v


def window_period(start: float, end: float) -> int:
    """One period over the whole window (CloudWatch periods are multiples of 60 s)."""
    return max(60, math_ceil((end - start) / 60) * 60)


def metrics_requested(queries: Iterable[MetricQuery]) -> int:
    return sum(q.metrics for q in queries)


def cost_usd(metrics: int) -> float:
    return metrics * USD_PER_METRIC_REQUESTED


@dataclass
class MetricSeries:
    """Timestamps stay the datetimes boto3 returns (converting millions of them costs more
    than the analysis); values are floats."""

    query: MetricQuery
    timestamps: list[datetime] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    #: Why CloudWatch returned no usable points (a failed ``StatusCode`` and its messages).
    error: str = ""


class MetricDataError(Exception):
    """CloudWatch answered a series with a failed status: its resource cannot be judged."""


def points_per_series(start: float, end: float, period_s: int) -> int:
    return max(1, math_ceil((end - start) / period_s))


def floor_calls(series: int, points: int) -> int:
    """The fewest GetMetricData calls that can return series x points datapoints."""
    if series == 0:
        return 0
    return max(
        math_ceil(series / MAX_QUERIES_PER_CALL),
        math_ceil(series * points / MAX_DATAPOINTS_PER_CALL),
    )


def floor(queries: Iterable[MetricQuery], *, start: float, end: float) -> tuple[int, int]:
    """(calls, datapoints): the least that returns these series, whatever their periods."""
    entries = points = 0
    for query in queries:
        entries += 1 + len(query.inputs)
        points += points_per_series(start, end, query.period_s)
    if not entries:
        return 0, 0
    calls = max(
        math_ceil(entries / MAX_QUERIES_PER_CALL), math_ceil(points / MAX_DATAPOINTS_PER_CALL)
    )
    return calls, points


def floor_of_passes(
    passes: Iterable[Iterable[MetricQuery]], *, start: float, end: float
) -> tuple[int, int]:
    """(calls, datapoints) of fetches made one after another (a later pass is chosen from what
    an earlier one returned, so it cannot share its calls): the sum of each pass's floor."""
    totals = [floor(queries, start=start, end=end) for queries in passes]
    return sum(c for c, _ in totals), sum(p for _, p in totals)


def batches(
    queries: Iterable[MetricQuery], *, start: float, end: float
) -> Iterator[list[MetricQuery]]:
    """Queries in calls under both limits, in order but for the gaps filled from ahead."""
    pending: deque[MetricQuery] = deque()
    stream = iter(queries)
    batch: list[MetricQuery] = []
    points = entries = 0

    def fits(query: MetricQuery) -> bool:
        return (
            entries + 1 + len(query.inputs) <= MAX_QUERIES_PER_CALL
            and points + points_per_series(start, end, query.period_s) <= MAX_DATAPOINTS_PER_CALL
        )

    def add(query: MetricQuery) -> None:
        nonlocal points, entries
        batch.append(query)
        points += points_per_series(start, end, query.period_s)
        entries += 1 + len(query.inputs)

    while True:
        query = pending.popleft() if pending else next(stream, None)
        if query is None:
            break
        if not batch or fits(query):
            add(query)
            continue
        while len(pending) < LOOKAHEAD and (ahead := next(stream, None)) is not None:
            pending.append(ahead)
        for ahead in [q for q in pending if fits(q)]:
            if fits(ahead):
                add(ahead)
                pending.remove(ahead)
        yield batch
        batch, points, entries = [], 0, 0
        add(query)
    if batch:
        yield batch


def _requests(query: MetricQuery, index: int) -> list[dict[str, Any]]:
    if not query.expression:
        return [_request(query, f"q{index}")]
    ids = [f"q{index}i{j}" for j in range(len(query.inputs))]
    inputs = [{**_request(q, ids[j]), "ReturnData": False} for j, q in enumerate(query.inputs)]
    return [
        *inputs,
        {
            "Id": f"q{index}",
            "Expression": query.expression.format(*ids),
            "Period": query.period_s,
            "ReturnData": True,
        },
    ]


def _request(query: MetricQuery, query_id: str) -> dict[str, Any]:
    return {
        "Id": query_id,
        "MetricStat": {
            "Metric": {
                "Namespace": query.namespace,
                "MetricName": query.metric,
                "Dimensions": [{"Name": k, "Value": v} for k, v in query.dimensions],
            },
            "Period": query.period_s,
            "Stat": query.stat,
        },
        "ReturnData": True,
    }


def fetch(
    client: Any, queries: Iterable[MetricQuery], *, start: float, end: float
) -> Iterator[list[MetricSeries]]:
    """The series of each batch, in its order, timestamps ascending; a series CloudWatch
    failed (``InternalError``, ``Forbidden``) has ``error`` set and no points. AWS errors propagate
    (botocore's ClientError), after the client's own retries (use adaptive mode)."""
    for batch in batches(queries, start=start, end=end):
        series = [MetricSeries(query) for query in batch]
        kwargs: dict[str, Any] = {
            "MetricDataQueries": [r for i, q in enumerate(batch) for r in _requests(q, i)],
            "StartTime": datetime.fromtimestamp(start, UTC),
            "EndTime": datetime.fromtimestamp(end, UTC),
            "ScanBy": "TimestampAscending",
        }
        while True:
            response = client.get_metric_data(**kwargs)
            for result in response["MetricDataResults"]:
                target = series[int(result["Id"][1:])]
                status = result.get("StatusCode", "Complete")
                if status in FAILED_STATUSES:
                    messages = "; ".join(m.get("Value", "") for m in result.get("Messages", []))
                    target.error = f"GetMetricData returned {status}" + (
                        f": {messages}" if messages else ""
                    )
                if target.error:
                    target.timestamps, target.values = [], []
                    continue
                target.timestamps.extend(result["Timestamps"])
                target.values.extend(result["Values"])
            token = response.get("NextToken")
            if not token:
                break
            kwargs["NextToken"] = token
        yield series


def listed_dimensions(
    cloudwatch: Any,
    namespace: str,
    metric: str,
    where: dict[str, str],
    *,
    recently_active: bool = False,
) -> Iterator[dict[str, str]]:
    """The dimension sets of every series of ``metric`` that has ``where``'s dimensions (and
    maybe others), each once. Every analyzer finds its series this way, through ListMetrics'
    paginator; a listing that repeats a series (moto lists one per datapoint) yields it once.
    ``recently_active``: only series with data in the last three hours (``RecentlyActive``
    ``PT3H``, the one value ListMetrics takes), not the last two weeks."""
    seen: set[frozenset[tuple[str, str]]] = set()
    recent = {"RecentlyActive": "PT3H"} if recently_active else {}
    pages = cloudwatch.get_paginator("list_metrics").paginate(
        Namespace=namespace,
        MetricName=metric,
        Dimensions=[{"Name": name, "Value": value} for name, value in where.items()],
        **recent,
    )
    for page in pages:
        for listed in page["Metrics"]:
            dims = {d["Name"]: d["Value"] for d in listed["Dimensions"]}
            key = frozenset(dims.items())
            if key not in seen:
                seen.add(key)
                yield dims
