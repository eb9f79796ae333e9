"""The exporter's metrics over OTLP/HTTP, for OTel Container Insights: to the add-on's CloudWatch
agent, which serves OTLP on every node and sends it on to CloudWatch, queried with PromQL beside
DCGM's own series.

The exporter builds the same documents in either mode; this sink reads each EMF document's
metrics (what its directives name, so the fault gauges' sparse hours and the XID events go out as
they do over EMF) and sends them as OTLP gauges, labelled as dcgm-exporter labels its series
(``contract.metrics.OTLP_*``). What EMF needs and OTLP does not is left out: the cluster-wide
copies (PromQL aggregates at query time), the alarm ``Shard``, the properties.

Encoding and transport are the OpenTelemetry SDK's (``opentelemetry-exporter-otlp-proto-http``,
the ``otlp`` extra); retries and the memory bound stay with ``emf.sinks.BufferedSender``.
"""

from collections.abc import Mapping, Sequence
from typing import Any, Final

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics.export import (
    Gauge,
    Metric,
    MetricExportResult,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_NODE,
    DIM_XID_CODE,
    OTLP_CLUSTER,
    OTLP_DEVICE,
    OTLP_GPU,
    OTLP_MODEL,
    OTLP_NODE,
    OTLP_POD_UID,
    OTLP_UUID,
    OTLP_XID_CODE,
)
from gpu_insights_agent.emf.document import EmfDocument
from gpu_insights_agent.emf.sinks import SinkError

#: CloudWatch unit names as UCUM, OTLP's units ("%" and "By" as the add-on's pipeline sets them
#: for DCGM's series, transform/cw_k8s_ci_v0_set_unit; "1" for a count).
_UCUM: Final = {"Percent": "%", "Bytes": "By", "Count": "1", "Seconds": "s", "None": ""}
SCOPE: Final = InstrumentationScope("gpu_insights_agent.exporter")
#: The resource's ``service.name`` (OTel's semantic conventions; without it the SDK says
#: "unknown_service"). Only these three resource attributes: each byte is billed.
SERVICE_NAME: Final = "gpu-insights-exporter"
#: Seconds one export may take, retries included, before the buffer keeps the batch.
TIMEOUT_S: Final = 5.0


def _metric_units(document: EmfDocument) -> dict[str, str]:
    """The metrics a document's directives name, with their units, in order."""
    units: dict[str, str] = {}
    for directive in document["_aws"]["CloudWatchMetrics"]:
        for metric in directive["Metrics"]:
            units[metric["Name"]] = metric.get("Unit", "None")
    return units


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
    pods = document.get("PodUids")
    if isinstance(pods, list) and len(pods) == 1:
        labels[OTLP_POD_UID] = str(pods[0])
    if DIM_XID_CODE in document:
        labels[OTLP_XID_CODE] = str(document[DIM_XID_CODE])
    return labels


def metrics_data(documents: Sequence[EmfDocument]) -> MetricsData:
    """The documents as one OTLP request: a resource per (cluster, node), a gauge per metric,
    a datapoint per document that carries it, at the document's own time."""
    by_resource: dict[tuple[str, str], dict[str, tuple[str, list[NumberDataPoint]]]] = {}
    for document in documents:
        key = (str(document[DIM_CLUSTER]), str(document[DIM_NODE]))
        gauges = by_resource.setdefault(key, {})
        labels = datapoint_labels(document)
        time_ns = int(document["_aws"]["Timestamp"]) * 1_000_000
        for name, unit in _metric_units(document).items():
            if name not in document:  # EMF drops a non-finite value; so does OTLP
                continue
            point = NumberDataPoint(
                attributes=labels,
                start_time_unix_nano=time_ns,
                time_unix_nano=time_ns,
                value=float(document[name]),
            )
            gauges.setdefault(name, (_UCUM.get(unit, ""), []))[1].append(point)
    return MetricsData(
        resource_metrics=[
            ResourceMetrics(
                resource=Resource(
                    {OTLP_CLUSTER: cluster, OTLP_NODE: node, "service.name": SERVICE_NAME}
                ),
                scope_metrics=[
                    ScopeMetrics(
                        scope=SCOPE,
                        metrics=[
                            Metric(name=name, description=None, unit=unit, data=Gauge(points))
                            for name, (unit, points) in gauges.items()
                        ],
                        schema_url="",
                    )
                ],
                schema_url="",
            )
            for (cluster, node), gauges in by_resource.items()
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
    ) -> None:
        self.endpoint = endpoint
        self._timeout_s = timeout_s
        self._exporter = exporter or OTLPMetricExporter(
            endpoint=endpoint, timeout=timeout_s, headers=dict(headers or {})
        )

    def send(self, documents: Sequence[EmfDocument]) -> None:
        if not documents:
            return
        result = self._exporter.export(
            metrics_data(documents), timeout_millis=self._timeout_s * 1000
        )
        if result is not MetricExportResult.SUCCESS:
            raise SinkError(
                f"OTLP endpoint {self.endpoint}: {len(documents)} documents not accepted "
                "(the exporter's log says why)"
            )

    def close(self) -> None:
        self._exporter.shutdown()
