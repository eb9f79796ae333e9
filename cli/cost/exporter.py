"""What the exporter costs in CloudWatch, next to Container Insights' own GPU metrics.

The time-series budget per GPU node, and the prices it is multiplied by, are stated here so
that `gpu-insights cost-estimate` can show its working. The prices are cli/cost/prices.py's (each
with its page and the day it was read); the Container Insights price can be overridden on the
command line.
"""

import inspect
from dataclasses import dataclass
from typing import Final

from cli.cost.prices import ENHANCED_CI, LOGS_INGESTION, READ, tiered_metric_cost
from gpu_insights_agent.contract.metrics import (
    CLUSTER_METRICS,
    CYCLE_METRICS,
    FAULT_METRICS,
    GPU_READINGS,
)
from gpu_insights_agent.emitter.training import TrainingMetrics

PRICES_AS_OF: Final = f"us-east-1 list prices read {READ} (cli/cost/prices.py cites each page)"
LOGS_INGESTION_PER_GB: Final = LOGS_INGESTION.usd
ENHANCED_CI_PER_MILLION_OBSERVATIONS: Final = ENHANCED_CI.usd
#: GPU observations enhanced Container Insights makes per GPU per minute: six GPU
#: measurements (utilization, memory used, total and utilization, power draw, temperature)
#: at container, pod and node level.
ENHANCED_CI_GPU_OBSERVATIONS_PER_GPU_MINUTE: Final = 18

MINUTES_PER_MONTH: Final = 730 * 60
#: An assumption to check against your fleet: the share of hours in which one fault gauge of
#: one GPU (an ECC count, a throttle flag, a pending row remap) is non-zero. The exporter
#: publishes a fault gauge only in those hours, and CloudWatch bills a custom metric only for
#: the hours it is published ("metrics are prorated by the hour", the pricing page above).
FAULT_HOUR_SHARE: Final = 0.02


@dataclass(frozen=True)
class Layout:
    """What the exporter publishes per GPU node: the series it sends every hour, per GPU and
    per cluster, the fault series it sends only in their non-zero hours, and its EMF bytes."""

    name: str
    per_gpu: int
    per_cluster: int
    faults_per_gpu: int
    #: Measured by benchmarks/exporter.py on the simulated H100 node (one thermal GPU).
    emf_bytes_per_gpu_cycle: int


#: Every reading per GPU and per cluster, every hour (the exporter until issue 14): each
#: reading of the metric table whatever its role, XID events aside (they come when an XID
#: does, before as after), so a new reading adds a series to both layouts and a new event
#: metric to neither.
BEFORE: Final = Layout(
    "every reading per GPU and per cluster", len(GPU_READINGS), len(GPU_READINGS), 0, 1482
)
#: Per GPU what only the exporter gives and something reads; per cluster what the report and
#: the fleet dashboard read; faults only in their hours; the rest as properties of the line.
AFTER: Final = Layout(
    "what alarms, attribution and report read; faults in their hours",
    len(CYCLE_METRICS),
    len(CLUSTER_METRICS),
    len(FAULT_METRICS),
    1008,
)
#: Bytes one of the exporter's OTLP datapoints is billed, serialized alone as CloudWatch bills it
#: ("Each OTLP data point contributes its serialized size to the ingestion volume ... Metric
#: name, All labels (keys and values), Resource attributes, Timestamp and value", "OTel metrics
#: pricing and storage", https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/metrics-otel-pricing.html):
#: the mean over an 8-GPU EKS training node's cycles, its GPUs held by one pod (the resource
#: names it), as the exporter sends them (the agent adds its own resource attributes on top, so
#: this is a floor). Measured by benchmarks/otlp_bytes.py (on the wire, the batched protobuf
#: request is about 127 bytes a datapoint: the billed size repeats the resource and metric name
#: for each); tests/unit/cli/cost/test_estimate.py holds it to the measurement.
OTLP_BYTES_PER_DATAPOINT: Final = 455
#: The same for the training emitter's datapoints (a rank's window, its pod, namespace and node on
#: the resource, job, rank and attempt on the datapoint): billed as protobuf, whatever the
#: emitter's JSON took on the wire (the agent re-sends to CloudWatch as OTLP protobuf).
#: benchmarks/otlp_bytes.py.
TRAINING_OTLP_BYTES_PER_DATAPOINT: Final = 377
#: Datapoints a rank's stepping window sends (its step, throughput, data-wait and step-count
#: gauges, goodput's share and its step number and work and data-wait seconds, the job alarms'
#: six, and the loss and learning rate it records), measured by benchmarks/otlp_bytes.py on the
#: same window; a checkpoint window adds its save's.
TRAINING_OTLP_DATAPOINTS_PER_FLUSH: Final = 17
#: The same window over EMF (exporter_sink=emf, Classic's default): its lines' bytes, billed as
#: CloudWatch Logs ingestion, and the custom metrics it publishes for its job in
#: GpuInsights/Training (ranks share the job's dimensions, so a job publishes each once; the job
#: alarms' ratio gauges come once a job has history, and a checkpoint window adds its save's).
#: benchmarks/training_emitter.py's ``emf_window``; tests/unit/cli/cost/test_estimate.py holds
#: them to it.
TRAINING_EMF_BYTES_PER_FLUSH: Final = 3017
TRAINING_EMF_METRICS_PER_JOB: Final = 14
#: Seconds between a rank's windows: the emitter's default ``flush_s``, read from its signature.
EMITTER_FLUSH_S: Final[float] = inspect.signature(TrainingMetrics).parameters["flush_s"].default
#: Per-GPU gauges the exporter publishes every hour (XID counts come only when an XID does).
GAUGES_PER_GPU: Final = AFTER.per_gpu


@dataclass(frozen=True)
class LayoutCost:
    layout: Layout
    #: Series billed every hour of the month.
    metrics: int
    #: Fault series' metric-months (hours published over the hours of a month).
    fault_metric_months: float
    metrics_usd: float
    ingestion_gb: float
    ingestion_usd: float

    @property
    def usd(self) -> float:
        return self.metrics_usd + self.ingestion_usd


def layout_cost(
    layout: Layout, *, nodes: int, gpus_per_node: int, interval_s: float, fault_hour_share: float
) -> LayoutCost:
    gpus = nodes * gpus_per_node
    metrics = gpus * layout.per_gpu + layout.per_cluster
    faults = gpus * layout.faults_per_gpu * fault_hour_share
    cycles = MINUTES_PER_MONTH * 60 / interval_s
    ingestion_gb = gpus * cycles * layout.emf_bytes_per_gpu_cycle / 1e9
    return LayoutCost(
        layout=layout,
        metrics=metrics,
        fault_metric_months=faults,
        metrics_usd=tiered_metric_cost(metrics + faults),
        ingestion_gb=ingestion_gb,
        ingestion_usd=ingestion_gb * LOGS_INGESTION_PER_GB,
    )


@dataclass(frozen=True)
class CostEstimate:
    nodes: int
    gpus_per_node: int
    interval_s: float
    after: LayoutCost
    before: LayoutCost
    ci_observations_millions: float
    ci_usd: float

    @property
    def exporter_metrics(self) -> int:
        return self.after.metrics

    @property
    def exporter_metrics_usd(self) -> float:
        return self.after.metrics_usd

    @property
    def exporter_ingestion_gb(self) -> float:
        return self.after.ingestion_gb

    @property
    def exporter_usd(self) -> float:
        return self.after.usd

    @property
    def per_node_usd(self) -> float:
        return self.after.usd / self.nodes

    @property
    def before_per_node_usd(self) -> float:
        return self.before.usd / self.nodes

    def table(self) -> str:
        gpus = self.nodes * self.gpus_per_node
        a = self.after
        rows = [
            f"Fleet: {self.nodes} GPU nodes x {self.gpus_per_node} GPUs = {gpus} GPUs; "
            f"exporter every {self.interval_s:g} s",
            "",
            f"{'':40} {'per month':>12}",
            f"{'GpuInsights custom metrics':28} {a.metrics:>10,}  ${a.metrics_usd:>10,.2f}"
            + (
                f"  (with {a.fault_metric_months:,.1f} fault metric-months)"
                if a.layout.faults_per_gpu
                else ""
            ),
            f"{'EMF log ingestion':28} {a.ingestion_gb:>8,.1f} GB  ${a.ingestion_usd:>10,.2f}",
            f"{'Exporter total':40} ${a.usd:>10,.2f}  (${self.per_node_usd:,.2f} per node)",
            "",
            f"{'Container Insights enhanced, GPU part':28} "
            f"{self.ci_observations_millions:>8,.1f} M obs  ${self.ci_usd:>10,.2f}",
            "",
            f"Per node, before and after: {self.before.metrics / self.nodes:,.0f} series "
            f"${self.before_per_node_usd:,.2f} -> {a.metrics / self.nodes:,.0f} series "
            f"${self.per_node_usd:,.2f} a month "
            f"({self.per_node_usd / self.before_per_node_usd:.0%} of before).",
            f"Before: {BEFORE.name} ({BEFORE.per_gpu} per GPU, {BEFORE.per_cluster} per cluster).",
            f"After: {AFTER.name}: per GPU node {self.gpus_per_node} GPUs x {a.layout.per_gpu} "
            f"gauges = {self.gpus_per_node * a.layout.per_gpu} series, plus "
            f"{a.layout.per_cluster} per cluster; {a.layout.faults_per_gpu} fault gauges per GPU "
            f"billed only in hours they are non-zero (assumed {FAULT_HOUR_SHARE:.0%} of hours); "
            "XID series (2 per GPU and code, 2 per cluster and code, 2 per cluster) "
            "only once an XID occurs; temperature, utilization, memory and power draw from "
            "Container Insights.",
            f"Prices assumed: custom metrics $0.30/$0.10/$0.05/$0.02 per metric-month by tier, "
            f"logs ingestion ${LOGS_INGESTION_PER_GB}/GB, enhanced Container Insights "
            f"${ENHANCED_CI_PER_MILLION_OBSERVATIONS} per million observations; {PRICES_AS_OF}.",
        ]
        return "\n".join(rows)


def estimate(
    *,
    nodes: int,
    gpus_per_node: int,
    interval_s: float = 10.0,
    ci_price_per_million: float = ENHANCED_CI_PER_MILLION_OBSERVATIONS,
    fault_hour_share: float = FAULT_HOUR_SHARE,
) -> CostEstimate:
    if nodes < 1 or gpus_per_node < 1:
        raise ValueError("nodes and GPUs per node must be at least 1")
    if not (isinstance(interval_s, int | float) and 0 < interval_s <= 86_400):
        raise ValueError(f"the interval {interval_s!r} s must be a number above 0 up to 86,400")
    if not (isinstance(ci_price_per_million, int | float) and 0 <= ci_price_per_million <= 1e6):
        raise ValueError(f"the price {ci_price_per_million!r} must be a number from 0 to 1,000,000")
    if not (isinstance(fault_hour_share, int | float) and 0 <= fault_hour_share <= 1):
        raise ValueError(f"the fault-hour share {fault_hour_share!r} must be a number from 0 to 1")

    def cost(layout: Layout) -> LayoutCost:
        return layout_cost(
            layout,
            nodes=nodes,
            gpus_per_node=gpus_per_node,
            interval_s=interval_s,
            fault_hour_share=fault_hour_share,
        )

    observations = (
        nodes * gpus_per_node * ENHANCED_CI_GPU_OBSERVATIONS_PER_GPU_MINUTE * MINUTES_PER_MONTH
    )
    return CostEstimate(
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        interval_s=interval_s,
        after=cost(AFTER),
        before=cost(BEFORE),
        ci_observations_millions=observations / 1e6,
        ci_usd=observations / 1e6 * ci_price_per_million,
    )
