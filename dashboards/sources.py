"""Where each GPU widget reads its reading, in each Container Insights mode: the one table the
dashboards are built from.

- The exporter's own metrics (power against the limit, SM activity, health, throttling,
  XIDs) are read where its sink sends them: ``GpuInsights`` (EMF) with Metrics Insights, or,
  with exporter_sink=otlp (OTel mode only), its OTLP series with PromQL: OTLP metrics are
  "queried with PromQL" and have no namespace or dimensions for Metrics Insights to read
  ("CloudWatch OpenTelemetry metrics", CloudWatch-PromQL.html), and no ``Shard``.
- The readings Container Insights already publishes per GPU (``CI_NODE_GPU_METRICS``) are read
  from Classic's ``node_gpu_*`` with Metrics Insights in Classic mode, and from DCGM's own
  series (``DCGM_GPU_METRICS``) with PromQL in OTel mode, which turns ``node_gpu_*`` off: OTel
  Container Insights sends "metric names from their original sources, including cAdvisor,
  Prometheus Node Exporter, NVIDIA DCGM" over OTLP, queried with PromQL ("Container Insights
  with OpenTelemetry metrics for Amazon EKS",
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/container-insights-otel-metrics.html).
"""

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from gpu_insights_agent.contract.metrics import (
    CI_NODE_GPU_METRICS,
    DCGM_GPU_METRICS,
    DCGM_MIB_METRICS,
    NAMESPACE_CONTAINER_INSIGHTS,
    NAMESPACE_GPU,
    ExporterSink,
    GpuMetric,
)
from lambdas.shared.container_insights_mode import ContainerInsightsMode

#: Bytes in the MiB DCGM counts framebuffer memory in.
MIB: Final = 1024 * 1024


class Query(StrEnum):
    """The language a widget's query is written in."""

    METRICS_INSIGHTS = "Metrics Insights"
    PROMQL = "PromQL"


@dataclass(frozen=True)
class Reading:
    """Where one GPU reading is read in one mode: the query language, the metric's namespace
    (None for a PromQL series, which has none) and name, and the factor to the contract's
    unit."""

    query: Query
    namespace: str | None
    name: str
    scale: int = 1


def _reading(metric: GpuMetric, mode: ContainerInsightsMode, sink: ExporterSink) -> Reading:
    if metric not in CI_NODE_GPU_METRICS:
        if sink is ExporterSink.OTLP:
            return Reading(Query.PROMQL, None, str(metric))
        return Reading(Query.METRICS_INSIGHTS, NAMESPACE_GPU, str(metric))
    if mode is ContainerInsightsMode.CLASSIC:
        return Reading(
            Query.METRICS_INSIGHTS, NAMESPACE_CONTAINER_INSIGHTS, CI_NODE_GPU_METRICS[metric]
        )
    scale = MIB if metric in DCGM_MIB_METRICS else 1
    return Reading(Query.PROMQL, None, DCGM_GPU_METRICS[metric], scale)


def _deployable(mode: ContainerInsightsMode, sink: ExporterSink) -> bool:
    """The exporter sends OTLP in OTel mode only (cdk/settings.py refuses it in Classic)."""
    return sink is ExporterSink.EMF or mode is ContainerInsightsMode.OTEL


#: Every GPU reading a widget may show, in each mode and with each exporter sink.
READINGS: Final[dict[tuple[GpuMetric, ContainerInsightsMode, ExporterSink], Reading]] = {
    (metric, mode, sink): _reading(metric, mode, sink)
    for metric in GpuMetric
    for mode in ContainerInsightsMode
    for sink in ExporterSink
    if _deployable(mode, sink)
}


def reading(
    metric: GpuMetric, mode: ContainerInsightsMode, sink: ExporterSink = ExporterSink.EMF
) -> Reading:
    return READINGS[(metric, mode, sink)]
