"""The GPU alarms this project deploys, built from settings. Each choice is explained here
once: the CDK app deploys these specs, the backtest evaluates them, the README lists them.

None of them names a node or instance: they watch cluster-level series or Metrics Insights
queries that GROUP BY node and GPU, so nodes can come and go and the alarm count stays fixed.
"""

from dataclasses import dataclass

from agent.metric_contract import (
    CI_POD_GPU_POWER_METRIC,
    CI_POD_GPU_SCHEMA,
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_NODE,
    HOST_LOG_XID_METRIC,
    NAMESPACE_CONTAINER_INSIGHTS,
    NAMESPACE_GPU,
    GpuMetric,
    host_log_namespace,
)
from alarms.model import (
    AlarmMetric,
    AlarmSpec,
    Comparison,
    Difference,
    InsightsQuery,
    MetricStat,
    MissingData,
    Severity,
)
from alarms.power_table import UnknownInstanceTypeError, gpu_power

#: Metrics Insights alarms look back at most three hours.
MAX_INSIGHTS_WINDOW_MINUTES = 180
PERIOD_S = 300


class AlarmSettingsError(ValueError):
    """A threshold or window the alarms cannot use; the message names it."""


@dataclass(frozen=True, kw_only=True)
class AlarmSettings:
    cluster_name: str
    #: A GPU in use drawing under this share of its power limit is not working.
    low_power_percent: float = 30.0
    low_power_window_minutes: int = 60
    throttle_window_minutes: int = 30
    #: The exporter publishes power against the limit; without it the alarm needs the
    #: instance type to know the limit.
    exporter: bool = True
    gpu_instance_type: str | None = None
    #: Container Insights ships host logs: the kernel-log XID fallback has data.
    host_logs: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.low_power_percent < 100:
            raise AlarmSettingsError(
                f"low_power_percent={self.low_power_percent} must be above 0 and below 100"
            )
        for key in ("low_power_window_minutes", "throttle_window_minutes"):
            minutes = getattr(self, key)
            if minutes < PERIOD_S // 60 or minutes % (PERIOD_S // 60):
                raise AlarmSettingsError(
                    f"{key}={minutes} must be a multiple of the {PERIOD_S // 60}-minute period"
                )
            if minutes > MAX_INSIGHTS_WINDOW_MINUTES:
                raise AlarmSettingsError(
                    f"{key}={minutes} is longer than the {MAX_INSIGHTS_WINDOW_MINUTES} minutes "
                    "a Metrics Insights alarm can look back"
                )
        if not self.exporter and self.gpu_instance_type is None:
            raise AlarmSettingsError(
                "gpu_instance_type=None: the low-power alarm needs the exporter "
                "(exporter_enabled=true) or, from Container Insights alone, the GPU instance "
                "type to know the GPUs' power limit"
            )
        if self.gpu_instance_type is not None:
            try:
                gpu_power(self.gpu_instance_type)
            except UnknownInstanceTypeError as err:
                raise AlarmSettingsError(
                    f"gpu_instance_type={self.gpu_instance_type!r}: {err}"
                ) from err


def _per_gpu(
    settings: AlarmSettings, metric: GpuMetric, function: str, order: str
) -> InsightsQuery:
    return InsightsQuery(
        namespace=NAMESPACE_GPU,
        metric=str(metric),
        schema=(DIM_CLUSTER, DIM_GPU_INDEX, DIM_NODE),
        where=((DIM_CLUSTER, settings.cluster_name),),
        function=function,
        group_by=(DIM_NODE, DIM_GPU_INDEX),
        order=order,
    )


def _cluster(
    settings: AlarmSettings, metric: str, stat: str, namespace: str = NAMESPACE_GPU
) -> MetricStat:
    return MetricStat(namespace, metric, ((DIM_CLUSTER, settings.cluster_name),), stat)


def low_power_alarm(settings: AlarmSettings) -> AlarmSpec:
    periods = settings.low_power_window_minutes * 60 // PERIOD_S
    share = settings.low_power_percent
    window = settings.low_power_window_minutes
    if settings.exporter:
        metric: InsightsQuery = _per_gpu(
            settings, GpuMetric.ALLOCATED_POWER_UTILIZATION, "MAX", "ASC"
        )
        threshold = share
        how = f"the lowest in-use GPU's peak power stayed under {share:g}% of its limit"
    else:
        assert settings.gpu_instance_type is not None
        power = gpu_power(settings.gpu_instance_type)
        metric = InsightsQuery(
            namespace=NAMESPACE_CONTAINER_INSIGHTS,
            metric=CI_POD_GPU_POWER_METRIC,
            schema=CI_POD_GPU_SCHEMA,
            where=((DIM_CLUSTER, settings.cluster_name),),
            function="MAX",
            group_by=("FullPodName", "GpuDevice"),
            order="ASC",
        )
        threshold = round(power.watts_per_gpu * share / 100, 1)
        how = (
            f"the lowest pod-held GPU's peak power stayed under {threshold:g} W "
            f"({share:g}% of {power.gpu}'s {power.watts_per_gpu:g} W)"
        )
    return AlarmSpec(
        key="gpu-low-power",
        title="GPU in use but not working",
        description=(
            f"For {window} minutes {how}: a GPU held by a job that does no work. "
            "Look for a job waiting on data, a hung rank, or a job that finished without "
            "releasing its GPUs."
        ),
        severity=Severity.WARNING,
        metric=metric,
        period_s=PERIOD_S,
        evaluation_periods=periods,
        datapoints_to_alarm=periods,
        threshold=threshold,
        comparison=Comparison.LESS,
        missing_data=MissingData.NOT_BREACHING,
        missing_data_reason=(
            "no datapoint means no GPU is in use anywhere in the cluster: idle by design, "
            "which belongs in the weekly report, not in a page"
        ),
    )


def _any_in_a_minute(
    key: str,
    title: str,
    description: str,
    severity: Severity,
    metric: AlarmMetric,
    missing_reason: str,
) -> AlarmSpec:
    """An alarm on the first datapoint of something that should never happen."""
    return AlarmSpec(
        key=key,
        title=title,
        description=description,
        severity=severity,
        metric=metric,
        period_s=60,
        evaluation_periods=1,
        datapoints_to_alarm=1,
        threshold=1,
        comparison=Comparison.GREATER_OR_EQUAL,
        missing_data=MissingData.NOT_BREACHING,
        missing_data_reason=missing_reason,
    )


def _sustained_throttling(
    settings: AlarmSettings, key: str, title: str, cause: str, advice: str, metric: GpuMetric
) -> AlarmSpec:
    """Some GPU throttled in at least half its samples in every period of the window."""
    periods = settings.throttle_window_minutes * 60 // PERIOD_S
    return AlarmSpec(
        key=key,
        title=title,
        description=(
            f"For {settings.throttle_window_minutes} minutes some GPU was {cause} in at least "
            f"half of its samples: {advice}"
        ),
        severity=Severity.WARNING,
        metric=_per_gpu(settings, metric, "AVG", "DESC"),
        period_s=PERIOD_S,
        evaluation_periods=periods,
        datapoints_to_alarm=periods,
        threshold=0.5,
        comparison=Comparison.GREATER_OR_EQUAL,
        missing_data=MissingData.NOT_BREACHING,
        missing_data_reason="no exporter data means no GPU to throttle",
    )


def gpu_alarms(settings: AlarmSettings) -> list[AlarmSpec]:
    alarms = [low_power_alarm(settings)]
    if settings.exporter:
        alarms += _exporter_alarms(settings)
    if settings.host_logs:
        alarms.append(
            _any_in_a_minute(
                "gpu-xid-host-log",
                "XID error in a node's kernel log",
                "The kernel logged an NVRM Xid line (Container Insights host logs): the "
                "fallback for nodes without the exporter. The XID message names the node.",
                Severity.WARNING,
                MetricStat(
                    host_log_namespace(settings.cluster_name), HOST_LOG_XID_METRIC, (), "Sum"
                ),
                "the metric filter publishes only when a line matches",
            )
        )
    return alarms


def _exporter_alarms(settings: AlarmSettings) -> list[AlarmSpec]:
    xids = _cluster(settings, str(GpuMetric.XID_ERRORS), "Sum")
    fatal = _cluster(settings, str(GpuMetric.XID_FATAL_ERRORS), "Sum")
    only_when_it_happens = "XID metrics exist only when an XID happens; silence is health"
    return [
        _any_in_a_minute(
            "gpu-xid-fatal",
            "Fatal XID error",
            "A GPU reported an XID that needs action (reset, drain, or hardware check). "
            "The XID message names the node, GPU, code and meaning.",
            Severity.CRITICAL,
            fatal,
            only_when_it_happens,
        ),
        _any_in_a_minute(
            "gpu-xid",
            "Informational XID error",
            "A GPU reported an XID that is usually an application fault (such as 13, 31 or 43). "
            "Worth a look when it repeats.",
            Severity.WARNING,
            Difference(xids, fatal),
            only_when_it_happens,
        ),
        AlarmSpec(
            key="gpu-lost",
            title="GPU lost",
            description=(
                "NVML says a GPU fell off the bus (gpu_healthy=0). It stays lost until the "
                "node is rebooted or the GPU reset; drain the node."
            ),
            severity=Severity.CRITICAL,
            metric=_cluster(settings, str(GpuMetric.HEALTHY), "Minimum"),
            period_s=60,
            evaluation_periods=2,
            datapoints_to_alarm=2,
            threshold=1,
            comparison=Comparison.LESS,
            missing_data=MissingData.MISSING,
            missing_data_reason=(
                "with no exporter data at all the alarm says INSUFFICIENT_DATA rather than "
                "guessing that GPUs are healthy or lost"
            ),
        ),
        _any_in_a_minute(
            "gpu-ecc-uncorrected",
            "Uncorrectable ECC errors",
            "A GPU counted new uncorrectable ECC errors: its memory returned bad data. "
            "Expect XID 48/94/95 and a pending row remap; reset the GPU.",
            Severity.CRITICAL,
            _cluster(settings, str(GpuMetric.ECC_UNCORRECTED), "Sum"),
            "GPUs without ECC publish no count; that is not an error",
        ),
        _sustained_throttling(
            settings,
            "gpu-thermal-throttling",
            "Sustained thermal throttling",
            "throttled for heat",
            "check cooling, fans and inlet temperature.",
            GpuMetric.THROTTLED_THERMAL,
        ),
        _sustained_throttling(
            settings,
            "gpu-power-brake",
            "Sustained power-brake slowdown",
            "slowed by its hardware power brake",
            "a power-supply or board fault, not the normal power cap of a busy GPU.",
            GpuMetric.THROTTLED_POWER,
        ),
    ]
