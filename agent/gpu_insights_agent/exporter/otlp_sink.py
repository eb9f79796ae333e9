"""The exporter's metrics over OTLP/HTTP, for OTel Container Insights: to the add-on's CloudWatch
agent, which serves OTLP on every node and sends it on to CloudWatch, queried with PromQL beside
DCGM's own series.

The exporter builds the same documents in either mode; this sink reads each EMF document's
metrics (what its directives name, so the fault gauges' sparse hours go out as they do over EMF)
and sends them as OTLP gauges, labelled as dcgm-exporter labels its series
(``contract.metrics.OTLP_*``): the GPU's index, UUID, device and model on the datapoint; the
cluster, node and sender on the resource, and, for a GPU that one pod holds, the pod's UID and,
where the kubelet's pod log directories name it (``exporter.pod_attribution``), its name and
namespace, and the container its processes run in (``k8s.container.name``, as the add-on
promotes dcgm-exporter's ``container``): the container ID from the processes' cgroup, its name
from the kubelet's log symlink (``/var/log/containers``) or the pod's one log folder, and left
off where those do not say for sure (``PROP_CONTAINER``): one resource per node, pod and
container.

XIDs are counters, not gauges: ``gpu_xid_errors`` per GPU and code, and ``gpu_xid_fatal_errors``
per GPU and fatal code, are cumulative monotonic sums of the exporter's running count
(``PROP_XID_COUNT``) since the sink started, sent when an XID happens, with the count's zero one
millisecond before a code's first XID: PromQL's ``increase()`` needs two samples in its window,
and sees each XID (DCGM's XID field is a gauge of the last code, which two XIDs of one code in a
scrape leave unchanged). What EMF needs and OTLP does not is left out: the cluster-wide copies
(PromQL aggregates at query time), the alarm ``Shard``, the properties (but the readings the
metric table marks ``otlp``: the SM clock, a property only to spare Classic a custom metric).

Encoding and transport are the OpenTelemetry SDK's (``opentelemetry-exporter-otlp-proto-http``,
the ``otlp`` extra): protobuf, which the exporter's image can carry, where the training emitter
must keep to the standard library and sends JSON (``otlp.json_encoding``); retries and the memory
bound stay with ``emf.sinks.BufferedSender``. A retried batch sends its counters' same totals
again, which changes no count. The SDK's exporter says only success or failure, so the sink
reads the answer's status from its requests session (a response hook): a status OTLP says not
to retry (``otlp.http_sink.RETRYABLE_STATUSES``: a 400 or a 404 never succeeds) is a
``SinkRefusedError``, which the buffer drops and counts rather than sending it again ahead of
every later batch.
"""

import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

import requests
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Gauge,
    Metric,
    MetricExportResult,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    Sum,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_NODE,
    DIM_XID_CODE,
    GPU_METRIC_UNITS,
    OTLP_CLUSTER,
    OTLP_CONTAINER,
    OTLP_DEVICE,
    OTLP_GPU,
    OTLP_MODEL,
    OTLP_NAMESPACE,
    OTLP_NODE,
    OTLP_POD,
    OTLP_POD_UID,
    OTLP_PROPERTIES,
    OTLP_SERVICE,
    OTLP_UNITS,
    OTLP_UUID,
    OTLP_XID_CODE,
    PROP_CONTAINER,
    PROP_POD_UIDS,
    PROP_PODS,
    PROP_XID_COUNT,
    GpuMetric,
)
from gpu_insights_agent.emf.document import EmfDocument
from gpu_insights_agent.emf.sinks import SinkError
from gpu_insights_agent.otlp.http_sink import refusal

SCOPE: Final = InstrumentationScope("gpu_insights_agent.exporter")
#: The resource's ``service.name`` (without it the SDK says "unknown_service"). Only the
#: attributes above ride on the resource: each byte is billed on every datapoint.
SERVICE_NAME: Final = "gpu-insights-exporter"
#: Seconds one export may take, retries included, before the buffer keeps the batch.
TIMEOUT_S: Final = 5.0
#: The XID counters, and how far before a code's first XID its zero is stamped.
XID_COUNTERS: Final = frozenset({GpuMetric.XID_ERRORS, GpuMetric.XID_FATAL_ERRORS})
ZERO_BEFORE_NS: Final = 1_000_000

_Series = tuple[str, str, bool]  # metric name, unit, counter


def _metric_units(document: EmfDocument) -> dict[str, str]:
    """The metrics a document's directives name, with their units, in order, and the
    properties OTLP sends as gauges all the same (``OTLP_PROPERTIES``: the SM clock)."""
    units: dict[str, str] = {}
    for directive in document["_aws"]["CloudWatchMetrics"]:
        for metric in directive["Metrics"]:
            units[metric["Name"]] = metric.get("Unit", "None")
    for metric in sorted(OTLP_PROPERTIES):
        if str(metric) in document and isinstance(document[str(metric)], int | float):
            units.setdefault(str(metric), GPU_METRIC_UNITS[metric])
    return units


def _one(document: EmfDocument, key: str) -> str | None:
    """The document's only pod in a list property (two pods on one GPU: neither is it)."""
    values = document.get(key)
    return str(values[0]) if isinstance(values, list) and len(values) == 1 else None


def resource_attributes(document: EmfDocument) -> dict[str, str]:
    """The resource of one document's datapoints: its node, and the pod (and container) that
    holds its GPU."""
    attributes = {
        OTLP_CLUSTER: str(document[DIM_CLUSTER]),
        OTLP_NODE: str(document[DIM_NODE]),
        OTLP_SERVICE: SERVICE_NAME,
    }
    uid = _one(document, PROP_POD_UIDS)
    if uid is not None:
        attributes[OTLP_POD_UID] = uid
        pod = _one(document, PROP_PODS)
        if pod is not None:
            attributes[OTLP_NAMESPACE], _, attributes[OTLP_POD] = pod.partition("/")
        container = document.get(PROP_CONTAINER)
        if isinstance(container, str):
            attributes[OTLP_CONTAINER] = container
    return attributes


def datapoint_labels(document: EmfDocument) -> dict[str, str]:
    """The labels of one document's datapoints, by dcgm-exporter's names."""
    labels: dict[str, str] = {}
    if DIM_GPU_INDEX in document:
        index = str(document[DIM_GPU_INDEX])
        labels[OTLP_GPU] = index
        labels[OTLP_DEVICE] = f"nvidia{index}"
    if "GpuUuid" in document:
        labels[OTLP_UUID] = str(document["GpuUuid"])
    if "GpuName" in document:
        labels[OTLP_MODEL] = str(document["GpuName"])
    if DIM_XID_CODE in document:
        labels[OTLP_XID_CODE] = str(document[DIM_XID_CODE])
    return labels


def _points(document: EmfDocument, start_ns: int) -> list[tuple[_Series, NumberDataPoint]]:
    labels = datapoint_labels(document)
    time_ns = int(document["_aws"]["Timestamp"]) * 1_000_000
    points = []
    for name, unit in _metric_units(document).items():
        if name not in document:  # EMF drops a non-finite value; so does OTLP
            continue
        if name not in XID_COUNTERS:
            point = NumberDataPoint(labels, time_ns, time_ns, float(document[name]))
            points.append(((name, OTLP_UNITS.get(unit, ""), False), point))
            continue
        count = document.get(PROP_XID_COUNT)
        if not isinstance(count, int) or (
            name == GpuMetric.XID_FATAL_ERRORS and not document[name]
        ):
            continue  # no running count, or a code that is not fatal: nothing to count
        series = (name, OTLP_UNITS["Count"], True)
        if count == 1:
            zero_ns = max(start_ns, time_ns - ZERO_BEFORE_NS)
            points.append((series, NumberDataPoint(labels, start_ns, zero_ns, 0.0)))
        points.append((series, NumberDataPoint(labels, start_ns, time_ns, float(count))))
    return points


def metrics_data(documents: Sequence[EmfDocument], *, start_ns: int = 0) -> MetricsData:
    """The documents as one OTLP request: a resource per node, pod and container, a gauge (or
    XID counter) per metric, a datapoint per document that carries it, at its own time.
    ``start_ns``: when the XID counts began (the sink's start)."""
    by_resource: dict[tuple[tuple[str, str], ...], dict[_Series, list[NumberDataPoint]]] = {}
    for document in documents:
        key = tuple(resource_attributes(document).items())
        series = by_resource.setdefault(key, {})
        for name, point in _points(document, start_ns):
            series.setdefault(name, []).append(point)
    return MetricsData(
        resource_metrics=[
            ResourceMetrics(
                resource=Resource(dict(resource)),
                scope_metrics=[
                    ScopeMetrics(
                        scope=SCOPE,
                        metrics=[
                            Metric(
                                name=name,
                                description=None,
                                unit=unit,
                                data=Sum(points, AggregationTemporality.CUMULATIVE, True)
                                if counter
                                else Gauge(points),
                            )
                            for (name, unit, counter), points in series.items()
                        ],
                        schema_url="",
                    )
                ],
                schema_url="",
            )
            for resource, series in by_resource.items()
        ]
    )


class OtlpSink:
    """Sends each batch as one OTLP/HTTP (protobuf) request; a failure is a ``SinkError``."""

    def __init__(
        self,
        endpoint: str,
        *,
        timeout_s: float = TIMEOUT_S,
        headers: Mapping[str, str] | None = None,
        exporter: Any = None,
        start_ns: int | None = None,
    ) -> None:
        self.endpoint = endpoint
        self._timeout_s = timeout_s
        #: When the XID counts began: the sink starts with the exporter.
        self.start_ns = time.time_ns() if start_ns is None else start_ns
        #: The last answer's status and reason (None: no answer, a timeout or no connection).
        self._answer: tuple[int, str] | None = None
        session = requests.Session()
        session.hooks["response"].append(self._heard)
        self._exporter = exporter or OTLPMetricExporter(
            endpoint=endpoint, timeout=timeout_s, headers=dict(headers or {}), session=session
        )

    def _heard(self, response: requests.Response, *_: Any, **__: Any) -> None:
        self._answer = (response.status_code, str(response.reason))

    def send(self, documents: Sequence[EmfDocument]) -> None:
        if not documents:
            return
        self._answer = None
        result = self._exporter.export(
            metrics_data(documents, start_ns=self.start_ns), timeout_millis=self._timeout_s * 1000
        )
        if result is not MetricExportResult.SUCCESS:
            if self._answer is not None:
                raise refusal(self.endpoint, *self._answer)
            raise SinkError(
                f"OTLP endpoint {self.endpoint}: {len(documents)} documents not accepted "
                "(the exporter's log says why)"
            )

    def close(self) -> None:
        self._exporter.shutdown()
