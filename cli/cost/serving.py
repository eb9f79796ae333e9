"""The inference servers' series in OTel mode, as `gpu-insights cost-estimate` prices them: the
add-on collects each vLLM server's /metrics ("Collecting vLLM metrics with OTel Container
Insights", https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/container-insights-eks-otel-vllm.html)
and sends them as OTLP, billed by each datapoint's serialized size ("Each OTLP data point
contributes its serialized size to the ingestion volume", "OTel metrics pricing and storage",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/metrics-otel-pricing.html).

A replica's series are counted from the serving table (agent/gpu_insights_agent/contract/
serving.py), not by hand: each distinct name a server sends for the signals the alarms, the
dashboards, the serving analysis and drift read, newest name only (a server of one version sends
one), by type. A floor: a vLLM server exports more than the table's signals (prefix cache,
per-request token histograms, its config), and the add-on collects them all.

In Classic mode with ``serving_metrics`` the agent's scrape makes each replica's counters and
gauges custom metrics in ContainerInsights/Prometheus, one per name and dimension set
(cdk/node_config/serving_prometheus.py): ``ClassicServingMetrics`` counts them from the same
declarations, vLLM's finished requests once per finish reason it defines.
"""

from collections import Counter
from dataclasses import dataclass
from typing import Final

from cdk.node_config.serving_prometheus import dimensions, kept_metrics
from cli.cost.exporter import MINUTES_PER_MONTH, OTLP_BYTES_PER_DATAPOINT
from gpu_insights_agent.contract.metrics import ADDON_DCGM_INTERVAL_S
from gpu_insights_agent.contract.serving import (
    LENGTH_HISTOGRAMS,
    SERVING_METRICS,
    VLLM_FINISH_REASONS,
    MetricType,
    Server,
)

#: The server a replica is priced as: vLLM, the one of the table with the most series.
PRICED_SERVER: Final = Server.VLLM
#: Upper bounds of vLLM's longest histogram, time to first token (22, then +Inf: vllm
#: vllm/v1/metrics/buckets.py; inter-token latency has 19, end-to-end 21), so an upper bound for
#: each of its histograms.
HISTOGRAM_BOUNDS: Final = 22
#: Bytes a histogram datapoint with ``HISTOGRAM_BOUNDS`` bounds is billed beyond a gauge's:
#: its bounds and bucket counts (8 bytes each), count and sum, serialized as OTLP protobuf (the
#: Prometheus receiver turns a classic histogram into an explicit-bucket one). Measured with
#: opentelemetry-proto by tests/unit/cli/cost/test_serving.py.
HISTOGRAM_EXTRA_BYTES: Final = 379


def series_per_model(server: Server = PRICED_SERVER) -> Counter[MetricType]:
    """The server's distinct names in the serving table and the length histograms drift reads,
    by type (vLLM's errors are its finished requests with a reason: one name, counted once)."""
    read = (*SERVING_METRICS, *LENGTH_HISTOGRAMS)
    names = {m.names[0]: m.type for m in read if m.server is server}
    return Counter(names.values())


@dataclass(frozen=True)
class ServingSeries:
    replicas: int
    #: Models each replica serves: its series come once per model (Triton serves several
    #: from one server, each series labelled with its model; a vLLM server serves one).
    models: int

    @property
    def by_type(self) -> Counter[MetricType]:
        return series_per_model()

    @property
    def bytes_per_scrape(self) -> int:
        """One replica's scrape of one model: every series a datapoint, a histogram's bigger."""
        counts = self.by_type
        return (
            sum(counts.values()) * OTLP_BYTES_PER_DATAPOINT
            + counts[MetricType.HISTOGRAM] * HISTOGRAM_EXTRA_BYTES
        )

    @property
    def gb_per_month(self) -> float:
        scrapes = MINUTES_PER_MONTH * 60 / ADDON_DCGM_INTERVAL_S
        return self.replicas * self.models * self.bytes_per_scrape * scrapes / 1e9

    def basis(self) -> str:
        counts = self.by_type
        return (
            f"{self.replicas:,} replicas (--serving-replicas) x {self.models} model(s) each "
            f"(--serving-models), priced as {PRICED_SERVER}: {counts[MetricType.COUNTER]} "
            f"counters, {counts[MetricType.GAUGE]} gauges and {counts[MetricType.HISTOGRAM]} "
            "histograms (the serving table's names) every "
            f"{ADDON_DCGM_INTERVAL_S} s, {OTLP_BYTES_PER_DATAPOINT} bytes a datapoint and "
            f"{HISTOGRAM_EXTRA_BYTES} more a histogram's ({HISTOGRAM_BOUNDS} buckets): "
            f"{self.bytes_per_scrape:,} bytes a scrape; the server's other series come on top. "
            "Priced as OTLP: the add-on's own series are at no additional charge while OTel "
            "Container Insights is in preview, so this is what they cost after it if billed so"
        )


#: The values each dimension label of a Classic declaration takes per replica and model.
LABEL_VALUES: Final = {"finished_reason": len(VLLM_FINISH_REASONS)}


def classic_metrics_per_model(server: Server = PRICED_SERVER) -> int:
    """Custom metrics one replica of one model makes in Classic: each kept row's newest name
    (a server of one version sends one), once per value of its matcher labels (vLLM's
    ``vllm:request_success_total`` once per finish reason; its errors are one of them)."""
    metrics: dict[str, int] = {}
    for m in kept_metrics(server):
        per_value = 1
        for label in dimensions(m):
            per_value *= LABEL_VALUES.get(label, 1)
        metrics[m.names[0]] = per_value
    return sum(metrics.values())


@dataclass(frozen=True)
class ClassicServingMetrics:
    replicas: int
    models: int

    @property
    def metric_months(self) -> int:
        return self.replicas * self.models * classic_metrics_per_model()

    def basis(self) -> str:
        return (
            f"{self.replicas:,} replicas (--serving-replicas) x {self.models} model(s) each "
            f"(--serving-models) x {classic_metrics_per_model()} custom metrics, priced as "
            f"{PRICED_SERVER} (its kept counters and gauges, vllm:request_success_total once per "
            f"finish reason: {', '.join(VLLM_FINISH_REASONS)}); the scrape's EMF log events "
            "come on top as log ingestion, unpriced: their size is the server's labels'"
        )
