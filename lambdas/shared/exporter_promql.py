"""The exporter's own series read with PromQL, where it sends OTLP (the exporter_sink setting
``otlp``): they are then in CloudWatch's OTLP store only, with no ``GpuInsights`` metric for
GetMetricData or Metrics Insights to read ("OpenTelemetry metrics ... query with PromQL",
CloudWatch-PromQL.html). Their names are ``GpuMetric``'s and their labels DCGM's
(lambdas/shared/dcgm.py): cluster and node on the resource, the GPU index on the datapoint, the
pod and namespace on the resource while a pod holds the GPU, the XID code on the XID counters
(cdk/alarms/promql.py reads the same series for the alarms).

One reading for every analyzer: hourly ranges (``[1h]``) evaluated a millisecond before each
hour's end (``read_hours``, paged within the API's 24-hour scans: lambdas/shared/promql.py),
each GPU's series aggregated by (node, GPU) so that a pod starting on a GPU does not split it.
Means are of every sample in the hour (sum over count, as GetMetricData's ``Average`` of a
period), never means of means.
"""

from collections.abc import Iterable, Sequence
from typing import Final

from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.shared.promql import MAX_SERIES, PromQLClient, Series, quote_label, quote_string

HOUR: Final = 3600
#: Evaluated a millisecond before each hour's end, an hour's ``[1h]`` range holds that hour's
#: samples, whether the engine's range is closed at its start (Prometheus 2) or open (3).
EDGE: Final = 0.001
#: More GPUs than any EC2 instance has: what one node's per-GPU series may number.
GPUS_PER_NODE_MAX: Final = 16
#: Nodes one per-GPU query names, so that its answer stays under the series a response may
#: hold (``MAX_SERIES``) and is never cut: 31 nodes of 16 GPUs are 496 series.
NODES_PER_QUERY: Final = MAX_SERIES // GPUS_PER_NODE_MAX
#: A regular expression's special characters (RE2's, which PromQL's ``=~`` uses).
_REGEX_SPECIAL: Final = frozenset("\\.+*?()|[]{}^$")


def hourly(series: Series) -> dict[int, float]:
    """A series of ``read_hours`` by the start of each hour."""
    return {round(t + EDGE) - HOUR: v for t, v in series.points}


def read_hours(promql: PromQLClient, query: str, start: float, end: float) -> list[Series]:
    """``query`` (over ``[1h]`` ranges) at each whole hour's end in [start, end), paged."""
    return promql.query_range_paged(query, start + HOUR - EDGE, end - EDGE, HOUR, lookback_s=HOUR)


def node_pattern(nodes: Iterable[str]) -> str:
    """An anchored RE2 alternation that matches exactly these node names."""
    return "|".join(
        "".join("\\" + c if c in _REGEX_SPECIAL else c for c in node) for node in sorted(nodes)
    )


def node_batches(nodes: Iterable[str]) -> list[tuple[str, ...]]:
    """The nodes in groups of ``NODES_PER_QUERY``, each one per-GPU query's."""
    ordered = sorted(set(nodes))
    return [
        tuple(ordered[i : i + NODES_PER_QUERY]) for i in range(0, len(ordered), NODES_PER_QUERY)
    ]


def range_selector(seconds: int) -> str:
    """A PromQL range of whole minutes (``[15m]``), or of whole hours (``[1h]``)."""
    if seconds <= 0 or seconds % 60:
        raise ValueError(f"a range of {seconds} s: whole minutes above 0 only")
    return f"[{seconds // HOUR}h]" if seconds % HOUR == 0 else f"[{seconds // 60}m]"


class ExporterQueries:
    """The PromQL over the exporter's series of one cluster, per GPU or for the cluster (or
    over DCGM's, whose labels they carry)."""

    def __init__(self, cluster: str, labels: DcgmLabels = CLOUDWATCH) -> None:
        self.cluster = cluster
        self.labels = labels

    def select(self, metric: str, nodes: Sequence[str] = (), range_s: int = HOUR) -> str:
        """``metric``'s series of the cluster (of ``nodes``, where named) over the hour (over
        ``range_s``, where given)."""
        matchers = [
            f"__name__={quote_string(metric)}",
            f"{quote_label(self.labels.cluster)}={quote_string(self.cluster)}",
        ]
        if nodes:
            matchers.append(f"{quote_label(self.labels.node)}=~{quote_string(node_pattern(nodes))}")
        return "{" + ", ".join(matchers) + "}" + range_selector(range_s)

    def _by(self, *names: str) -> str:
        return "by (" + ", ".join(quote_label(n) for n in names) + ")"

    def gpu(self) -> tuple[str, str]:
        return self.labels.node, self.labels.gpu

    def gpu_mean(self, metric: str, nodes: Sequence[str]) -> str:
        """Each GPU's mean of every sample in the hour."""
        by, selector = self._by(*self.gpu()), self.select(metric, nodes)
        return f"sum {by} (sum_over_time({selector})) / sum {by} (count_over_time({selector}))"

    def gpu_min(self, metric: str, nodes: Sequence[str]) -> str:
        return f"min {self._by(*self.gpu())} (min_over_time({self.select(metric, nodes)}))"

    def gpu_samples(self, metric: str, nodes: Sequence[str] = ()) -> str:
        return f"sum {self._by(*self.gpu())} (count_over_time({self.select(metric, nodes)}))"

    def nodes(self, metric: str) -> str:
        """The nodes that sent ``metric`` in the hour."""
        return f"count {self._by(self.labels.node)} (count_over_time({self.select(metric)}))"

    def gpus_by_node(self, metric: str, range_s: int) -> str:
        """Each node's count of GPUs that sent ``metric`` in the last ``range_s``: one series a
        node, whatever pods came and went on its GPUs."""
        samples = f"count_over_time({self.select(metric, range_s=range_s)})"
        return f"count {self._by(self.labels.node)} (count {self._by(*self.gpu())} ({samples}))"

    def node_gpus(self, metric: str, node: str, range_s: int) -> str:
        """The GPU indices of ``node`` that sent ``metric`` in the last ``range_s``."""
        samples = f"count_over_time({self.select(metric, (node,), range_s)})"
        return f"count {self._by(self.labels.gpu)} ({samples})"

    def cluster_sum(self, metric: str) -> str:
        """The cluster's sum of ``metric``'s samples in the hour (one series)."""
        return f"sum (sum_over_time({self.select(metric)}))"

    def cluster_samples(self, metric: str) -> str:
        """The cluster's count of ``metric``'s samples in the hour (one series)."""
        return f"sum (count_over_time({self.select(metric)}))"

    def counters(self, metric: str) -> str:
        """Each (node, GPU, XID code) counter's last value in the hour: one series per counter
        however many pods held the GPU."""
        keys = (*self.gpu(), self.labels.xid_code)
        return f"max {self._by(*keys)} (last_over_time({self.select(metric)}))"


def per_gpu(
    promql: PromQLClient,
    query: str,
    start: float,
    end: float,
    labels: DcgmLabels = CLOUDWATCH,
) -> dict[tuple[str, str], dict[int, float]]:
    """(node, GPU index) -> hour -> value, of a per-GPU ``ExporterQueries`` query."""
    found: dict[tuple[str, str], dict[int, float]] = {}
    for series in read_hours(promql, query, start, end):
        key = (series.labels.get(labels.node, ""), series.labels.get(labels.gpu, ""))
        found.setdefault(key, {}).update(hourly(series))
    return found


def reporting_nodes(
    promql: PromQLClient,
    queries: ExporterQueries,
    metric: str,
    start: float,
    end: float,
) -> list[str]:
    """The nodes whose exporter sent ``metric`` in [start, end)."""
    found = read_hours(promql, queries.nodes(metric), start, end)
    return sorted({s.labels.get(queries.labels.node, "") for s in found} - {""})


def counter_increase(points: Sequence[tuple[float, float]], since: float) -> float:
    """What a cumulative counter counted after ``since``, from its values in time order: each
    step up is counted, a fall is a restart of the exporter (its count begins again from 0, so
    the value after it is all new), as Prometheus's ``increase`` reads resets. The last value
    at or before ``since`` is the base; a counter with none was born after it (the exporter
    creates a code's counter at its first XID), so its first value counts whole."""
    counted, base = 0.0, 0.0
    for at, value in sorted(points):
        if at <= since:
            base = value
            continue
        counted += value - base if value >= base else value
        base = value
    return counted
