"""moto's CloudWatch answers, indexed: the same answers, byte for byte, in a fraction of the time.

moto (5.x, moto/cloudwatch/models.py) answers GetMetricData by scanning every stored datapoint
of the window once for every period of every query, and ListMetrics by comparing each datapoint
with every metric listed so far. The demo's week holds hundreds of thousands of datapoints and
its analyzers ask for thousands of series: those two scans were most of a demo run's time.

Here each query is handed to moto's own ``get_metric_data`` with, as the backend's datapoints,
only those that could match it (its metric name and dimensions, or name and namespace), in the
order moto stores them; moto then filters, buckets and computes exactly as before. Metric math
runs on those results through moto's own parser; Metrics Insights queries (moto sums every
datapoint of each period) go to moto unchanged. ListMetrics keeps moto's rules, the quadratic
comparison replaced by a set of what it compares. tests/unit/cli/demo/test_indexed_cloudwatch.py
holds the answers equal to moto's on data built to reach each rule.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from moto.cloudwatch import models
from moto.cloudwatch.metric_data_expression_parser import parse_expression

#: (name, value) pairs of a datapoint's dimensions, in moto's sort order.
DimsKey = tuple[tuple[Any, Any], ...]


def _dims_key(dimensions: list[Any]) -> DimsKey:
    """What moto compares of a query's and a datapoint's dimensions: ``sorted(...) ==
    sorted(...)`` of moto's ``Dimension`` (its own ``__lt__``), equal where names and values
    are (a stored datapoint's values are never None; GetMetricData requires each Value)."""
    return tuple((d.name, d.value) for d in sorted(dimensions))


class _Index:
    """One GetMetricData call's datapoints by what its queries match on, each list in moto's
    order; the sort of each datapoint's dimensions kept across calls (datapoints never change)."""

    def __init__(self, data: list[Any], keys: dict[int, tuple[Any, DimsKey]]) -> None:
        self._keys = keys
        self._by_name: dict[str, list[Any]] = {}
        for datum in data:
            self._by_name.setdefault(datum.name, []).append(datum)
        self._by_dims: dict[tuple[str, DimsKey], list[Any]] = {}
        self._by_namespace: dict[tuple[str, str], list[Any]] = {}
        self._indexed: set[str] = set()

    def _key(self, datum: Any) -> DimsKey:
        kept = self._keys.get(id(datum))
        if kept is None or kept[0] is not datum:
            kept = self._keys[id(datum)] = (datum, _dims_key(datum.dimensions))
        return kept[1]

    def _index(self, name: str) -> None:
        if name in self._indexed:
            return
        self._indexed.add(name)
        for datum in self._by_name.get(name, []):
            self._by_dims.setdefault((name, self._key(datum)), []).append(datum)
            self._by_namespace.setdefault((name, datum.namespace), []).append(datum)

    def candidates(self, metric_stat: dict[str, Any]) -> list[Any]:
        """The datapoints moto's filter could take for this query, as moto matches: by name and
        sorted dimensions where the query names dimensions (moto then ignores the namespace),
        by name and namespace where it names none."""
        metric = metric_stat["Metric"]
        name = metric["MetricName"]
        self._index(name)
        dimensions = [
            models.Dimension(name=d["Name"], value=d["Value"]) for d in metric.get("Dimensions", [])
        ]
        if dimensions:
            return self._by_dims.get((name, _dims_key(dimensions)), [])
        return self._by_namespace.get((name, metric["Namespace"]), [])


@contextmanager
def _datapoints(backend: Any, data: list[Any]) -> Iterator[None]:
    """The backend's stored datapoints are ``data`` while moto answers one query."""
    backend.get_all_metrics = lambda: data
    try:
        yield
    finally:
        del backend.get_all_metrics


def _get_metric_data(original: Any, keys: dict[int, tuple[Any, DimsKey]]) -> Any:
    def get_metric_data(
        self: Any,
        queries: list[dict[str, Any]],
        start_time: Any,
        end_time: Any,
        scan_by: str = "TimestampAscending",
    ) -> list[dict[str, Any]]:
        stat_queries = [q for q in queries if "MetricStat" in q]
        if not stat_queries:
            return list(original(self, queries, start_time, end_time, scan_by))
        index = _Index(self.get_all_metrics(), keys)
        results, answered = [], []
        for query in stat_queries:
            with _datapoints(self, index.candidates(query["MetricStat"])):
                (result,) = original(self, [{**query, "ReturnData": True}], start_time, end_time,
                                     scan_by)  # fmt: skip
            results.append(result)
            if query.get("ReturnData", True):
                answered.append(dict(result))
        # As moto: metric math over every MetricStat result, then the Metrics Insights queries.
        for query in queries:
            if "Expression" in query and not query["Expression"].startswith("SELECT"):
                values, timestamps = parse_expression(query["Expression"], results)
                answered.append(
                    {
                        "id": query["Id"],
                        "label": query.get("Label") or query["Id"],
                        "values": values,
                        "timestamps": timestamps,
                        "status_code": "Complete",
                    }
                )
        insights = [q for q in queries if q.get("Expression", "").startswith("SELECT")]
        if insights:
            answered += original(self, insights, start_time, end_time, scan_by)
        return answered

    return get_metric_data


def _uniform(datum: Any) -> tuple[Any, ...] | None:
    """What moto's ``are_dimensions_same`` finds equal: two lists of one length whose every
    pair of dimensions has one name and value, so lists of one (name, value) repeated; None for
    any other list, which moto finds equal to none."""
    pairs = {(d.name, d.value) for d in datum.dimensions}
    if len(pairs) != 1:
        return None
    return (datum.name, datum.namespace, len(datum.dimensions), *pairs)


def _get_filtered_metrics(
    self: Any, metric_name: str, namespace: str, dimensions: list[dict[str, str]]
) -> list[Any]:
    """moto's ListMetrics filter: a datapoint is listed unless one listed before it has its
    name, namespace and (by moto's comparison) dimensions; the rest of moto's filter as is."""
    listed: list[Any] = []
    seen: set[tuple[Any, ...]] = set()
    for datum in self.get_all_metrics():
        if not datum.filter(namespace=namespace, name=metric_name, dimensions=dimensions):
            continue
        key = _uniform(datum)
        if key is not None and key in seen:
            continue
        if key is not None:
            seen.add(key)
        listed.append(datum)
    return listed


@contextmanager
def indexed_cloudwatch() -> Iterator[None]:
    """moto's CloudWatch backends answer GetMetricData and ListMetrics through the indexes
    above while the block runs; moto's own methods again after it."""
    backend = models.CloudWatchBackend
    get_metric_data, get_filtered_metrics = backend.get_metric_data, backend.get_filtered_metrics
    keys: dict[int, tuple[Any, DimsKey]] = {}
    backend.get_metric_data = _get_metric_data(get_metric_data, keys)  # type: ignore[method-assign]
    backend.get_filtered_metrics = _get_filtered_metrics  # type: ignore[method-assign]
    try:
        yield
    finally:
        backend.get_metric_data = get_metric_data  # type: ignore[method-assign]
        backend.get_filtered_metrics = get_filtered_metrics  # type: ignore[method-assign]
