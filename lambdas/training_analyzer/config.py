"""The training analyzer's environment (and its GPU-hour attribution's): one declaration, read
by its handler at cold start and built from the deployment's settings by its construct and by
the demo (cdk/function_configs.py)."""

from dataclasses import dataclass

from gpu_insights_agent.contract.metrics import ExporterSink
from lambdas.shared.config import (
    NAMES,
    PERCENT,
    TEXT,
    USD,
    WHOLE,
    FunctionConfig,
    choice,
    variable,
)
from lambdas.shared.container_insights_mode import DEFAULT_MODE, ContainerInsightsMode
from lambdas.shared.shards import LOOKBACK_DAYS, TRAINING_SHARD_JOBS
from lambdas.shared.thresholds import LOW_POWER_PERCENT
from lambdas.training_analyzer.failure_run import FAILURE_LOG_JOBS
from lambdas.training_analyzer.gpu_hours.attribution import Thresholds
from lambdas.training_analyzer.gpu_memory.analysis import (
    HEADROOM_PERCENT,
    NEAR_CAPACITY_PERCENT,
    MemoryThresholds,
)
from lambdas.training_analyzer.gpu_prices import gpu_hour_price


@dataclass(frozen=True, kw_only=True)
class TrainingConfig(FunctionConfig):
    cluster_name: str = variable("CLUSTER_NAME", TEXT)
    #: Where findings, job costs and GPU-hours (and shards) are written.
    report_bucket: str = variable("REPORT_BUCKET", TEXT)
    lookback_days: int = variable("LOOKBACK_DAYS", WHOLE, default=LOOKBACK_DAYS)
    gpu_hour_usd: float = variable("GPU_HOUR_USD", USD, default=gpu_hour_price(None))
    #: The low_power_percent setting: a held GPU-hour under it is held without work, as a GPU
    #: under it pages through the low-power alarm.
    low_power_percent: float = variable("LOW_POWER_PERCENT", PERCENT, default=LOW_POWER_PERCENT)
    #: The gpu_memory_near_capacity_percent and gpu_memory_headroom_percent settings.
    memory_near_capacity_percent: float = variable(
        "GPU_MEMORY_NEAR_CAPACITY_PERCENT", PERCENT, default=NEAR_CAPACITY_PERCENT
    )
    memory_headroom_percent: float = variable(
        "GPU_MEMORY_HEADROOM_PERCENT", PERCENT, default=HEADROOM_PERCENT
    )
    #: Buckets and volume ids the jobs read (the training_data_sources setting).
    data_sources: tuple[str, ...] = variable("DATA_SOURCES", NAMES, default=())
    #: The failure_log_jobs setting: failed jobs whose Container Insights logs a run (or a
    #: shard) reads for their cause.
    failure_log_jobs: int = variable("FAILURE_LOG_JOBS", WHOLE, default=FAILURE_LOG_JOBS)
    #: Jobs per shard of the fleet state machine's plan.
    shard_jobs: int = variable("SHARD_JOBS", WHOLE, default=TRAINING_SHARD_JOBS)
    event_bus: str = variable("EVENT_BUS", TEXT, default="default")
    #: Where the GPU-hour attribution reads which pod held which GPU: OTel Container Insights'
    #: DCGM series (PromQL) or Classic's pod_gpu_* (the container_insights_mode setting).
    container_insights_mode: ContainerInsightsMode = variable(
        "CONTAINER_INSIGHTS_MODE", choice(ContainerInsightsMode), default=DEFAULT_MODE
    )
    #: Where the exporter's own series are read: ``GpuInsights`` with GetMetricData (emf), or
    #: its OTLP series with PromQL (otlp), the exporter_sink setting.
    exporter_sink: ExporterSink = variable(
        "EXPORTER_SINK", choice(ExporterSink), default=ExporterSink.EMF
    )
    #: The function's failure queue, where findings S3 refuses are kept (its construct's).
    failure_queue_url: str | None = variable("FAILURE_QUEUE_URL", TEXT, default=None)

    @property
    def exporter_otlp(self) -> bool:
        """The exporter sends OTLP: its series are read with PromQL only."""
        return self.exporter_sink is ExporterSink.OTLP

    @property
    def gpu_thresholds(self) -> Thresholds:
        """The GPU-hour attribution's thresholds, with the deployment's low-power line."""
        return Thresholds(low_power_percent=self.low_power_percent)

    @property
    def memory_thresholds(self) -> MemoryThresholds:
        return MemoryThresholds(
            near_capacity_percent=self.memory_near_capacity_percent,
            headroom_percent=self.memory_headroom_percent,
        )

    @property
    def emitter_otlp(self) -> bool:
        """The training emitter sends OTLP too (exporter_sink=otlp, OTel mode: the same
        endpoint, cdk/alarms/catalog.py reads the job alarms' series there): the jobs' series
        are read with PromQL only (promql_jobs.py)."""
        return self.exporter_otlp and self.container_insights_mode is ContainerInsightsMode.OTEL
