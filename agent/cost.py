"""What the exporter costs in CloudWatch, next to Container Insights' own GPU metrics.

The time-series budget per GPU node, and the prices it is multiplied by, are stated here so
that `gpu-insights cost-estimate` can show its working. Prices are us-east-1 list prices from
https://aws.amazon.com/cloudwatch/pricing/ as this project last recorded them (2026-11; the
page could not be re-read when this was written, so check it); other regions differ, and the
Container Insights price can be overridden on the command line.
"""

from dataclasses import dataclass
from typing import Final

from agent.metric_contract import GPU_DIMENSION_SETS, GpuMetric

PRICES_AS_OF: Final = "us-east-1 list prices as recorded 2026-11; check the pricing page"

#: Custom metrics, per metric-month, by tier: (metrics in the tier, price).
CUSTOM_METRIC_TIERS: Final[tuple[tuple[float, float], ...]] = (
    (10_000, 0.30),
    (240_000, 0.10),
    (750_000, 0.05),
    (float("inf"), 0.02),
)
#: CloudWatch Logs ingestion of the EMF lines, per GB.
LOGS_INGESTION_PER_GB: Final = 0.50
#: Container Insights with enhanced observability for EKS, per million observations (first
#: tier). An observation is one metric value; an assumption to check against your bill.
ENHANCED_CI_PER_MILLION_OBSERVATIONS: Final = 0.21
#: GPU observations enhanced Container Insights makes per GPU per minute: six GPU
#: measurements (utilization, memory used, total and utilization, power draw, temperature)
#: at container, pod and node level.
ENHANCED_CI_GPU_OBSERVATIONS_PER_GPU_MINUTE: Final = 18

#: Per-GPU gauges the exporter publishes each cycle (XID counts come only when an XID does).
GAUGES_PER_GPU: Final = len(GpuMetric) - 2
#: Measured by benchmarks/exporter.py on the simulated H100 node.
EMF_BYTES_PER_GPU_CYCLE: Final = 1482
MINUTES_PER_MONTH: Final = 730 * 60


@dataclass(frozen=True)
class CostEstimate:
    nodes: int
    gpus_per_node: int
    interval_s: float
    exporter_metrics: int
    exporter_metrics_usd: float
    exporter_ingestion_gb: float
    exporter_ingestion_usd: float
    ci_observations_millions: float
    ci_usd: float

    @property
    def exporter_usd(self) -> float:
        return self.exporter_metrics_usd + self.exporter_ingestion_usd

    @property
    def per_node_usd(self) -> float:
        return self.exporter_usd / self.nodes

    def table(self) -> str:
        gpus = self.nodes * self.gpus_per_node
        rows = [
            f"Fleet: {self.nodes} GPU nodes x {self.gpus_per_node} GPUs = {gpus} GPUs; "
            f"exporter every {self.interval_s:g} s",
            "",
            f"{'':40} {'per month':>12}",
            f"{'GpuInsights custom metrics':28} {self.exporter_metrics:>10,}  "
            f"${self.exporter_metrics_usd:>10,.2f}",
            f"{'EMF log ingestion':28} {self.exporter_ingestion_gb:>8,.1f} GB  "
            f"${self.exporter_ingestion_usd:>10,.2f}",
            f"{'Exporter total':40} ${self.exporter_usd:>10,.2f}  "
            f"(${self.per_node_usd:,.2f} per node)",
            "",
            f"{'Container Insights enhanced, GPU part':28} "
            f"{self.ci_observations_millions:>8,.1f} M obs  ${self.ci_usd:>10,.2f}",
            "",
            f"Budget per GPU node: {self.gpus_per_node} GPUs x {GAUGES_PER_GPU} gauges = "
            f"{self.gpus_per_node * GAUGES_PER_GPU} series, plus {GAUGES_PER_GPU} per cluster; "
            "XID series (2 per GPU and code, 2 per cluster and code, 2 per cluster) "
            "only once an XID occurs.",
            f"Prices assumed: custom metrics $0.30/$0.10/$0.05/$0.02 per metric-month by tier, "
            f"logs ingestion ${LOGS_INGESTION_PER_GB}/GB, enhanced Container Insights "
            f"${ENHANCED_CI_PER_MILLION_OBSERVATIONS} per million observations; {PRICES_AS_OF}.",
        ]
        return "\n".join(rows)


def tiered_metric_cost(
    metrics: int, tiers: tuple[tuple[float, float], ...] = CUSTOM_METRIC_TIERS
) -> float:
    remaining, total = float(metrics), 0.0
    for size, price in tiers:
        used = min(remaining, size)
        total += used * price
        remaining -= used
        if remaining <= 0:
            break
    return total


def estimate(
    *,
    nodes: int,
    gpus_per_node: int,
    interval_s: float = 10.0,
    ci_price_per_million: float = ENHANCED_CI_PER_MILLION_OBSERVATIONS,
) -> CostEstimate:
    if nodes < 1 or gpus_per_node < 1:
        raise ValueError("nodes and GPUs per node must be at least 1")
    if not (isinstance(interval_s, int | float) and 0 < interval_s <= 86_400):
        raise ValueError(f"the interval {interval_s!r} s must be a number above 0 up to 86,400")
    if not (isinstance(ci_price_per_million, int | float) and 0 <= ci_price_per_million <= 1e6):
        raise ValueError(f"the price {ci_price_per_million!r} must be a number from 0 to 1,000,000")
    per_gpu_sets = sum(1 for s in GPU_DIMENSION_SETS if len(s) > 1)
    cluster_sets = len(GPU_DIMENSION_SETS) - per_gpu_sets
    metrics = nodes * gpus_per_node * GAUGES_PER_GPU * per_gpu_sets + GAUGES_PER_GPU * cluster_sets
    cycles = MINUTES_PER_MONTH * 60 / interval_s
    ingestion_gb = nodes * gpus_per_node * cycles * EMF_BYTES_PER_GPU_CYCLE / 1e9
    observations = (
        nodes * gpus_per_node * ENHANCED_CI_GPU_OBSERVATIONS_PER_GPU_MINUTE * MINUTES_PER_MONTH
    )
    return CostEstimate(
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        interval_s=interval_s,
        exporter_metrics=metrics,
        exporter_metrics_usd=tiered_metric_cost(metrics),
        exporter_ingestion_gb=ingestion_gb,
        exporter_ingestion_usd=ingestion_gb * LOGS_INGESTION_PER_GB,
        ci_observations_millions=observations / 1e6,
        ci_usd=observations / 1e6 * ci_price_per_million,
    )
