"""GetMetricData in full batches: as many queries per call as CloudWatch allows.

One call takes at most 500 queries and returns at most 100,800 datapoints, so N series of P
points need at least max(ceil(N / 500), ceil(N * P / 100800)) calls. Queries are packed
greedily under both limits, which reaches that floor when the series share a period, and
results are yielded one batch at a time, so memory is bounded by a batch, not by the fleet.
"""

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

MAX_QUERIES_PER_CALL = 500
MAX_DATAPOINTS_PER_CALL = 100_800


@dataclass(frozen=True)
class MetricQuery:
    """One series: ``key`` is the caller's, to find the result again."""

    key: tuple[str, ...]
    namespace: str
    metric: str
    dimensions: tuple[tuple[str, str], ...]
    stat: str
    period_s: int


@dataclass
class MetricSeries:
    """Timestamps stay the datetimes boto3 returns (converting millions of them costs more
    than the analysis); values are floats."""

    query: MetricQuery
    timestamps: list[datetime] = field(default_factory=list)
    values: list[float] = field(default_factory=list)


def points_per_series(start: float, end: float, period_s: int) -> int:
    return max(1, math.ceil((end - start) / period_s))


def floor_calls(series: int, points: int) -> int:
    """The fewest GetMetricData calls that can return series x points datapoints."""
    if series == 0:
        return 0
    return max(
        math.ceil(series / MAX_QUERIES_PER_CALL),
        math.ceil(series * points / MAX_DATAPOINTS_PER_CALL),
    )


def batches(
    queries: Iterable[MetricQuery], *, start: float, end: float
) -> Iterator[list[MetricQuery]]:
    batch: list[MetricQuery] = []
    points = 0
    for query in queries:
        needed = points_per_series(start, end, query.period_s)
        if batch and (
            len(batch) == MAX_QUERIES_PER_CALL or points + needed > MAX_DATAPOINTS_PER_CALL
        ):
            yield batch
            batch, points = [], 0
        batch.append(query)
        points += needed
    if batch:
        yield batch


def _request(query: MetricQuery, index: int) -> dict[str, Any]:
    return {
        "Id": f"q{index}",
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
    """The series of each batch, in query order, timestamps ascending. AWS errors propagate
    (botocore's ClientError), after the client's own retries (use adaptive mode)."""
    for batch in batches(queries, start=start, end=end):
        series = [MetricSeries(query) for query in batch]
        kwargs: dict[str, Any] = {
            "MetricDataQueries": [_request(q, i) for i, q in enumerate(batch)],
            "StartTime": datetime.fromtimestamp(start, UTC),
            "EndTime": datetime.fromtimestamp(end, UTC),
            "ScanBy": "TimestampAscending",
        }
        while True:
            response = client.get_metric_data(**kwargs)
            for result in response["MetricDataResults"]:
                target = series[int(result["Id"][1:])]
                target.timestamps.extend(result["Timestamps"])
                target.values.extend(result["Values"])
            token = response.get("NextToken")
            if not token:
                break
            kwargs["NextToken"] = token
        yield series
