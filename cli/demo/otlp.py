"""The demo's OTLP: what the exporter and the training emitter send with ``exporter_sink=otlp``,
through the agent's own encoders, as the samples CloudWatch's PromQL then holds.

The exporter's documents go through ``otlp_sink.metrics_data`` (the OTel SDK's ``MetricsData``
its OTLP/HTTP exporter sends), the emitter's through ``emitter.otlp.encoder`` (the OTLP/HTTP
JSON body it sends). Each datapoint becomes one Prometheus sample under CloudWatch's names: a
resource attribute as ``@resource.<name>``, a datapoint attribute bare ("PromQL querying",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-PromQL-Querying.html,
as lambdas/shared/dcgm.py reads it).

The demo's weeks are written as CloudWatch stores an hour of samples (a statistic set,
cli/demo/datums.py): ``exporter_documents`` turns the exporter's per-GPU statistic sets back
into the documents of each of its cycles, the samples spread evenly over the hour, so that a
PromQL hour holds the same count, sum, minimum and maximum as the statistic set.
"""

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any, Final

from opentelemetry.sdk.metrics.export import MetricExportResult, MetricsData, NumberDataPoint

from cli.demo.promql import Sample
from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_NODE,
    DIM_SHARD,
    DIM_XID_CODE,
    NAMESPACE_GPU,
    PROP_XID_COUNT,
)
from gpu_insights_agent.emf.document import EmfDocument, emf_document
from gpu_insights_agent.emitter.otlp import encoder
from gpu_insights_agent.exporter.otlp_sink import XID_COUNTERS, metrics_data

#: Seconds into an hour of its first sample: scrapes and cycles land mid-interval, never on an
#: hour's edge (the DCGM series' phase, cli/demo/otel.py ``PHASE_S``).
PHASE_S: Final = 15.0


class KeptRequests:
    """The OTLP exporter's place: keeps each request's ``MetricsData``, accepted."""

    def __init__(self) -> None:
        self.requests: list[MetricsData] = []

    def export(self, metrics_data: MetricsData, **_: Any) -> MetricExportResult:
        self.requests.append(metrics_data)
        return MetricExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def _value(attribute: dict[str, Any]) -> str:
    """An OTLP JSON ``AnyValue``'s scalar, as a label (ProtoJSON: ``stringValue``,
    ``intValue`` as a decimal string, ``doubleValue``, ``boolValue``)."""
    (value,) = attribute["value"].values()
    return str(value)


def json_samples(request: dict[str, Any]) -> Iterator[Sample]:
    """An OTLP/HTTP JSON metrics request's gauge and sum datapoints as PromQL samples:
    resource attributes under ``@resource.``, datapoint attributes bare."""
    for resource_metrics in request["resourceMetrics"]:
        resource = {
            f"@resource.{a['key']}": _value(a)
            for a in resource_metrics["resource"].get("attributes", [])
        }
        for scope in resource_metrics["scopeMetrics"]:
            for metric in scope["metrics"]:
                data = metric.get("gauge") or metric["sum"]
                for point in data["dataPoints"]:
                    labels = resource | {a["key"]: _value(a) for a in point.get("attributes", [])}
                    value = point["asDouble"] if "asDouble" in point else point["asInt"]
                    yield metric["name"], labels, int(point["timeUnixNano"]) / 1e9, float(value)


def otlp_samples(requests: Iterable[MetricsData]) -> Iterator[Sample]:
    """Each OTLP datapoint as the PromQL sample CloudWatch stores: resource attributes under
    ``@resource.``, datapoint attributes bare, at the datapoint's time."""
    for request in requests:
        for resource_metrics in request.resource_metrics:
            resource = {
                f"@resource.{k}": str(v) for k, v in resource_metrics.resource.attributes.items()
            }
            for scope in resource_metrics.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        assert isinstance(point, NumberDataPoint)  # gauges and sums only
                        attributes = point.attributes or {}
                        labels = resource | {k: str(v) for k, v in attributes.items()}
                        yield metric.name, labels, point.time_unix_nano / 1e9, float(point.value)


def exporter_samples(documents: Sequence[EmfDocument], *, start: float) -> Iterator[Sample]:
    """The exporter's documents through its OTLP sink's encoder (its XID counts begun at
    ``start``, the sink's start), as samples."""
    return otlp_samples([metrics_data(documents, start_ns=int(start * 1e9))])


def statistic_set_samples(data: Iterable[dict[str, Any]], *, start: float) -> Iterator[Sample]:
    """The exporter's per-GPU PutMetricData statistic sets (``data``, as cli/demo/week.py
    writes them) as the samples its OTLP sink sends: for each GPU and hour, one document per
    cycle holding each metric's sample of that cycle (``SampleCount`` samples of
    ``Sum / SampleCount``, the only values the week's statistic sets hold), the cycles spread
    over the hour. The cycles of an hour differ only in their time: the first is encoded, its
    datapoints stamped again at each cycle's. The cluster-wide copies are EMF's, which OTLP
    leaves to PromQL's aggregation (exporter/otlp_sink.py), and the ``Shard`` is EMF's alone;
    an XID count is the exporter's running count per GPU and code (``PROP_XID_COUNT``), which
    its sink sends as a counter. ``start``: the sink's (its XID counts') start."""
    for document, cycles in cycle_documents(data):
        first = int(document["_aws"]["Timestamp"]) / 1000
        hour = first // 3600 * 3600
        samples = list(exporter_samples([document], start=start))
        for i in range(cycles):
            offset = i * 3600 / cycles
            for name, labels, at, value in samples:
                assert at < hour + 3600 - offset  # every cycle in its statistic set's hour
                yield name, labels, at + offset, value


def cycle_documents(data: Iterable[dict[str, Any]]) -> list[tuple[EmfDocument, int]]:
    """Each GPU-hour's first cycle's document (``statistic_set_samples``) and its cycles."""
    hours: dict[tuple[Any, ...], dict[str, tuple[float, str]]] = defaultdict(dict)
    for datum in data:
        dims = {d["Name"]: d["Value"] for d in datum["Dimensions"] if d["Name"] != DIM_SHARD}
        if DIM_GPU_INDEX not in dims:
            continue  # a cluster-wide copy
        stats = datum["StatisticValues"]
        count = int(stats["SampleCount"])
        if stats["Minimum"] != stats["Maximum"]:
            raise ValueError(f"{datum['MetricName']}: a statistic set of several values")
        hour = _timestamp(datum["Timestamp"]) // 3600 * 3600
        key = (tuple(sorted(dims.items())), hour, count)
        hours[key][datum["MetricName"]] = (stats["Sum"] / count, datum.get("Unit", "None"))
    documents = []
    counts: dict[tuple[tuple[str, str], ...], int] = defaultdict(int)
    for (key, hour, count), metrics in sorted(hours.items()):
        dims = dict(key)
        properties: dict[str, object] = {}
        if any(name in XID_COUNTERS for name in metrics):
            counts[key] += count
            properties[PROP_XID_COUNT] = counts[key]
        document = emf_document(
            namespace=NAMESPACE_GPU,
            timestamp_ms=int((hour + PHASE_S) * 1000),
            dimension_sets=[[d for d in _DIMENSIONS if d in dims]],
            dimensions=dims,
            metrics={name: value for name, (value, _) in metrics.items()},
            units={name: unit for name, (_, unit) in metrics.items()},
            properties=properties,
        )
        documents.append((document, count))
    return documents


#: The per-GPU dimension set's names, in the exporter's order (and the XID code's).
_DIMENSIONS: Final = (DIM_CLUSTER, DIM_NODE, DIM_GPU_INDEX, DIM_XID_CODE)


def _timestamp(value: datetime | float) -> float:
    return value.timestamp() if isinstance(value, datetime) else float(value)


def emitter_samples(documents: Sequence[EmfDocument], namespace: str | None) -> Iterator[Sample]:
    """The emitter's documents of one pod namespace through its OTLP JSON encoder
    (``emitter.otlp.encoder``, the body its OTLP/HTTP sink posts), as samples."""
    if not documents:
        return iter(())
    return json_samples(json.loads(encoder(namespace)(documents)))
