"""Fetch the history an alarm needs from CloudWatch, read-only, in full GetMetricData batches.

Every series the alarm's metric or query covers is fetched at the alarm's period with the
statistic that matches its function, then the backtest applies the query itself. That works for
any window (Metrics Insights queries themselves only look back three hours) and keeps one
evaluation path for file and CloudWatch history.
"""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdk.alarms.model import AlarmSpec, Difference, InsightsQuery, MetricStat, insights_query
from cli.backtest.history import Dimensions, Sample
from lambdas.shared.metric_fetcher import MetricQuery, fetch

_FUNCTION_STATISTIC = {"MAX": "Maximum", "MIN": "Minimum", "AVG": "Average", "SUM": "Sum"}


class HistoryFetchError(Exception):
    """CloudWatch refused a read; wraps the AWS error."""


@dataclass(frozen=True)
class SeriesRequest:
    namespace: str
    metric: str
    dimensions: Dimensions
    stat: str
    period_s: int


def _stats(spec: AlarmSpec) -> list[MetricStat]:
    metric = spec.metric
    return [metric.minuend, metric.subtrahend] if isinstance(metric, Difference) else []


def _list_series(client: Any, query: InsightsQuery) -> Iterator[Dimensions]:
    where = [{"Name": k, "Value": v} for k, v in query.where]
    for page in client.get_paginator("list_metrics").paginate(
        Namespace=query.namespace, MetricName=query.metric, Dimensions=where
    ):
        for metric in page["Metrics"]:
            dims = frozenset((d["Name"], d["Value"]) for d in metric["Dimensions"])
            if {name for name, _ in dims} == set(query.schema):
                yield dims


def requests_for(client: Any, specs: Sequence[AlarmSpec]) -> list[SeriesRequest]:
    wanted: dict[SeriesRequest, None] = {}
    for spec in specs:
        metric = spec.metric
        stats = [metric] if isinstance(metric, MetricStat) else _stats(spec)
        for stat in stats:
            request = SeriesRequest(
                stat.namespace, stat.metric, frozenset(stat.dimensions), stat.stat, spec.period_s
            )
            wanted[request] = None
        query = insights_query(metric)  # its own, or the one a fleet count reads
        if query is not None:
            for dims in _list_series(client, query):
                request = SeriesRequest(
                    query.namespace,
                    query.metric,
                    dims,
                    _FUNCTION_STATISTIC[query.function],
                    spec.period_s,
                )
                wanted[request] = None
    return list(wanted)


def fetch_samples(
    client: Any, specs: Sequence[AlarmSpec], *, start: float, end: float
) -> list[Sample]:
    """The samples the specs need between start and end, through the shared batched fetcher."""
    try:
        requests = requests_for(client, specs)
        queries = [
            MetricQuery(
                (str(i),), r.namespace, r.metric, tuple(sorted(r.dimensions)), r.stat, r.period_s
            )
            for i, r in enumerate(requests)
        ]
        samples: list[Sample] = []
        for batch in fetch(client, queries, start=start, end=end):
            for series in batch:
                request = requests[int(series.query.key[0])]
                samples.extend(
                    Sample(request.namespace, request.metric, request.dimensions, t.timestamp(), v)
                    for t, v in zip(series.timestamps, series.values, strict=True)
                )
        return samples
    except (ClientError, BotoCoreError) as err:
        raise HistoryFetchError(f"reading metric history from CloudWatch failed: {err}") from err
