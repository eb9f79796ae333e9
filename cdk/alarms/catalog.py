"""The GPU alarms this project deploys, built from settings. Each choice is explained here
once: the CDK app deploys these specs, the backtest evaluates them, docs/alarms.md lists them.

None of them names a node or instance. The per-GPU alarms are multi time series alarms: a
Metrics Insights query that GROUPs BY ClusterName, NodeName, GpuIndex returns one series per
GPU, each a contributor with its own state, and the contributor's attributes (its GROUP BY
values) name the cluster, node and GPU in the state reason and in the EventBridge contributor
event ("Create an alarm based on a Multi Time Series Metrics Insights query",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/multi-time-series-alarm.html).
One query returns at most 500 series in full (cdk/alarms/sizing.py), so each per-GPU alarm kind
has one alarm per alarm shard, ``WHERE Shard = 'k'``: the alarm count depends on the fleet
size setting only, never on which nodes exist.

In OTel Container Insights mode (``AlarmSettings.promql``) the add-on sends DCGM's own series
with the pod and node labels, and an alarm can be a PromQL alarm (cdk/alarms/promql.py): every
series its instant query returns is a contributor, with no 500-series cap and so no shards.
Where each alarm kind goes, per mode, and why: ``ALARMS_BY_MODE`` (docs/alarms.md shows it).
"""

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from cdk.alarms.cluster import (
    ClusterAlarmSettings,
    control_plane_alarms,
    gpu_pending_alarm,
)
from cdk.alarms.jobs import JOB_ALARM_KINDS, JobAlarmSettings, job_alarms
from cdk.alarms.jobs_promql import promql_job_alarms
from cdk.alarms.model import (
    AlarmMetric,
    AlarmSpec,
    BreachCount,
    Comparison,
    Difference,
    InsightsQuery,
    MetricStat,
    MissingData,
    Severity,
    insights_query,
)
from cdk.alarms.nodes import node_alarms
from cdk.alarms.power_table import UnknownInstanceTypeError, gpu_power
from cdk.alarms.promql import (
    PromQLQuery,
    low_power_query,
    otlp_ecc_query,
    otlp_lost_query,
    otlp_low_power_query,
    otlp_silent_query,
    otlp_throttle_query,
    otlp_xid_query,
)
from cdk.alarms.serving_classic import classic_serving_alarms
from cdk.alarms.serving_promql import ServingAlarmSettings, serving_alarms
from cdk.alarms.sizing import (
    CAP_ALARM_SERIES,
    MAX_CONTRIBUTORS_IN_ALARM,
    MAX_WINDOW_MINUTES,
    AlarmSizing,
    shards_for,
)
from cdk.node_config.manifest import REQUIRED_NODE_EXPRESSIONS
from gpu_insights_agent.contract.metrics import (
    CI_POD_GPU_POWER_METRIC,
    CI_POD_GPU_SCHEMA,
    DIM_CLUSTER,
    DIM_FULL_POD_NAME,
    DIM_GPU_DEVICE,
    DIM_GPU_INDEX,
    DIM_NODE,
    DIM_SHARD,
    HOST_LOG_XID_METRIC,
    NAMESPACE_CONTAINER_INSIGHTS,
    NAMESPACE_GPU,
    SILENT_GPUS_METRIC,
    GpuMetric,
    host_log_namespace,
)
from gpu_insights_agent.contract.resource_names import (
    CAP_ALARM_SUFFIX,
    alarm_name,
    cap_alarm_title,
    shard_alarm_name,
)
from lambdas.shared.thresholds import (
    LOW_POWER_PERCENT,
    LOW_POWER_WINDOW_MINUTES,
    THROTTLE_WINDOW_MINUTES,
)


@dataclass(frozen=True)
class ModeRow:
    """One row of ``ALARMS_BY_MODE``: an alarm kind, what it is in each mode, and why."""

    kinds: str
    classic: str
    otel: str
    why: str


#: Where each alarm kind goes in Classic and in OTel mode. One table: docs/alarms.md shows it
#: (a test holds the two equal). "The add-on's DCGM counters": the dcgm-exporter counters CSV
#: the add-on mounts (aws/amazon-cloudwatch-agent-operator helm/templates/
#: dcgm-exporter-configmap.yaml, ``dcp-metrics-included.csv``: GPU and memory-copy utilization,
#: framebuffer free/used/total/percent, memory and GPU temperature, power draw, fan speed; no
#: power limit, no XID). DCGM_FI_DEV_XID_ERRORS is "Value of the last XID error encountered"
#: (dcgm-exporter's default-counters.csv).
ALARMS_BY_MODE: Final = (
    ModeRow(
        "gpu-low-power",
        "Metrics Insights, one alarm per shard (the exporter's power against the enforced "
        "limit), or on Container Insights' pod_gpu_power_draw without the exporter",
        "with exporter_sink=otlp: one PromQL alarm on the exporter's "
        "gpu_allocated_power_utilization, each GPU against its own enforced limit, at any fleet "
        "size; with the EMF sink: one PromQL alarm on DCGM_FI_DEV_POWER_USAGE of pod-held GPUs "
        "where gpu_instance_type gives the GPUs' power and the fleet fits one shard, else as in "
        "Classic",
        "the exporter's series over OTLP reach PromQL, and its percent of the enforced limit is "
        "right for a mixed fleet (an H100's 700 W, an L4's 72 W); the add-on's DCGM counters "
        "send power draw but not the power limit (DCGM_FI_DEV_POWER_MGMT_LIMIT), so with the "
        "EMF sink the limit is the instance type's (power table)",
    ),
    ModeRow(
        "gpu-xid-fatal, gpu-xid",
        "metric alarms on the exporter's XID counts; pages from the exporter's log",
        "with exporter_sink=otlp: one PromQL alarm each on the exporter's XID counters per GPU "
        "and code (a counter that stepped, or was born, in the last 5 minutes); pages from the "
        "exporter's log; with the EMF sink as in Classic",
        "the exporter counts each XID per GPU and code; `increase` misses a counter's first "
        "sample, so the query compares the latest value with the one before. The add-on's DCGM "
        "counters send no DCGM_FI_DEV_XID_ERRORS; where it is sent it is the last XID code, a "
        "gauge that keeps its value. The exporter's events (each XID, within a second) stay "
        "the page",
    ),
    ModeRow(
        "gpu-xid-host-log",
        "a metric alarm on the kernel-log metric filter",
        "the same",
        "a log metric filter's count, not a series PromQL reads",
    ),
    ModeRow(
        "gpu-silent",
        "Metrics Insights on the silence check's series (one alarm)",
        "with exporter_sink=otlp: one PromQL alarm per node, Kube State Metrics' nvidia_com_gpu "
        "capacity against the GPUs that sent gpu_healthy in 10 minutes, and no silence check; "
        "with the EMF sink as in Classic",
        "a query on a GPU's own series returns it only while the look back holds it, then it "
        "recovers while still silent; the capacity is there while the node exists, so the "
        "node keeps breaching, and leaves the result within 2 minutes of the node's deletion, "
        "before its GPUs' last samples leave their 10: a node scaled in never pages",
    ),
    ModeRow(
        "gpu-lost, gpu-ecc-uncorrected, gpu-thermal-throttling, gpu-power-brake",
        "Metrics Insights, one alarm per shard",
        "with exporter_sink=otlp: one PromQL alarm per kind on the exporter's gauges; with the "
        "EMF sink as in Classic",
        "over OTLP the gauges reach PromQL; by EMF they go to the GpuInsights namespace, which "
        "PromQL does not read",
    ),
    ModeRow(
        "job-hung, job-loss-not-finite, job-loss-spike, job-throughput-collapsed, "
        "job-step-time-rise, job-goodput-low",
        "Metrics Insights, one alarm per job shard",
        "with exporter_sink=otlp, one PromQL alarm per kind on the training emitter's OTLP "
        "series, `by` cluster, namespace and job_name (the same thresholds and windows); with "
        "exporter_sink=emf as in Classic",
        "PromQL reads only what comes by OTLP, and the training pods' emitter must send OTLP "
        "too; a query returns only the jobs that breach, so one alarm watches every job "
        "(500 breaching at once; the fleet count alarm pages a mass event)",
    ),
    ModeRow(
        "control-plane-5xx, control-plane-throttling, control-plane-<verb>-latency, "
        "control-plane-etcd-size, control-plane-unschedulable-pods",
        "metric alarms on the control plane's AWS/EKS metrics (cdk/alarms/cluster.py)",
        "the same",
        "EKS publishes them in AWS/EKS at no charge from Kubernetes 1.28, whatever the add-on's "
        "mode; PromQL does not read AWS/EKS",
    ),
    ModeRow(
        "gpu-pods-pending",
        "none: Classic's pod metrics carry no unschedulable status, so the cluster-wide "
        "control-plane-unschedulable-pods is the page",
        "one PromQL alarm on Kube State Metrics: each pod asking for nvidia.com/gpu that the "
        "scheduler could not place for gpu_pending_alarm_minutes, named with the GPUs it asked "
        "for",
        "the add-on sends every Kube State Metrics series in OTel mode, with the pod's name and "
        "namespace; Classic publishes pod_status_pending and pod_status_scheduled without a "
        "reason or the GPUs asked for",
    ),
    ModeRow(
        "serving-ttft-p99, serving-e2e-p99, serving-requests-waiting, serving-kv-cache-full, "
        "serving-errors",
        "with serving_metrics: Metrics Insights, one alarm per server on its queue gauge "
        "(serving-requests-waiting-<server>) and one on vLLM's preemptions "
        "(serving-kv-cache-full-vllm); no latency and no error-rate alarm",
        "one PromQL alarm per kind over every server's series",
        "Classic's agent drops the servers' histograms, and a Metrics Insights alarm is one "
        "query of one metric: no percentile, no errors-over-requests ratio, no KV cache joined "
        "to preemptions per replica (cdk/alarms/serving_classic.py)",
    ),
    ModeRow(
        "gpu-node-not-ready, gpu-node-cordoned, gpu-node-hardware-not-ready, gpu-pod-crash-looping",
        "none: Classic's node_status_condition_ready (per NodeName) and "
        "pod_container_status_waiting_reason_crash_loop_back_off (per PodName) cannot be "
        "narrowed to GPU nodes or GPU pods, and it publishes no cordon nor the node monitoring "
        "agent's conditions",
        "one PromQL alarm per kind on Kube State Metrics (cdk/alarms/nodes.py), nodes with "
        "nvidia_com_gpu capacity and pods that request it only, each named with its GPUs",
        "a Metrics Insights query reads one metric and joins none, and those node and pod "
        "series carry no GPU count (node_gpu_limit, pod_gpu_request are other metrics); "
        "Classic's node conditions are Ready and the pressure ones only (aws/amazon-cloudwatch-"
        "agent's EMF metric declarations)",
    ),
)


def mode_table() -> str:
    """``ALARMS_BY_MODE`` as the Markdown table docs/alarms.md shows."""
    rows = [
        "| alarm kind | Classic | OTel mode | why |",
        "| --- | --- | --- | --- |",
        *(f"| {r.kinds} | {r.classic} | {r.otel} | {r.why} |" for r in ALARMS_BY_MODE),
    ]
    return "\n".join(rows) + "\n"


#: Metrics Insights alarms look back at most three hours.
MAX_INSIGHTS_WINDOW_MINUTES = MAX_WINDOW_MINUTES
PERIOD_S = 300
#: The alarm that pages a GPU or node that stops reporting (``silent_gpu_alarm``).
SILENT_ALARM = "gpu-silent"
#: What a per-GPU alarm's contributor is: these name the GPU in every notification.
CONTRIBUTOR = (DIM_CLUSTER, DIM_NODE, DIM_GPU_INDEX)


class AlarmSettingsError(ValueError):
    """A threshold or window the alarms cannot use; the message names it."""


@dataclass(frozen=True, kw_only=True)
class AlarmSettings:
    cluster_name: str
    #: A GPU in use drawing under this share of its power limit is not working.
    low_power_percent: float = LOW_POWER_PERCENT
    low_power_window_minutes: int = LOW_POWER_WINDOW_MINUTES
    throttle_window_minutes: int = THROTTLE_WINDOW_MINUTES
    #: The exporter publishes power against the limit; without it the alarm needs the
    #: instance type to know the limit.
    exporter: bool = True
    gpu_instance_type: str | None = None
    #: Container Insights ships host logs: the kernel-log XID fallback has data.
    host_logs: bool = True
    #: Alarm shards (alarms.sizing.shards_for the fleet size): one alarm per shard per kind.
    shards: int = 1
    #: The training job alarms' thresholds (cdk/alarms/jobs.py); None: no job alarms.
    jobs: JobAlarmSettings | None = field(default_factory=JobAlarmSettings)
    #: OTel Container Insights mode: DCGM's series reach PromQL, and the alarms on them are
    #: PromQL alarms (``promql_alarms``) in place of their Metrics Insights ones.
    promql: bool = False
    #: The exporter and the training emitter send OTLP (exporter_sink=otlp), so their series
    #: reach PromQL too.
    otlp: bool = False
    #: The serving SLO alarms (cdk/alarms/serving_promql.py): OTel mode only, where the add-on
    #: sends the inference servers' own metrics and their histograms; None: none.
    serving: ServingAlarmSettings | None = None
    #: Classic mode's serving alarms (cdk/alarms/serving_classic.py), Metrics Insights on the
    #: servers' counters and gauges the agent keeps (``serving_metrics``); None: none.
    classic_serving: ServingAlarmSettings | None = None
    #: The control plane's and the pending GPU pods' alarms (cdk/alarms/cluster.py); None:
    #: none (the app's settings turn them on: ``control_plane_alarms``).
    cluster: ClusterAlarmSettings | None = None

    @property
    def promql_gpu(self) -> bool:
        """Every per-GPU and node alarm is a PromQL alarm on the exporter's OTLP series: OTel
        mode, the exporter on, its sink OTLP. One alarm per kind, no shard."""
        return self.promql and self.otlp and self.exporter

    @property
    def promql_jobs(self) -> bool:
        """The job alarms are PromQL alarms (cdk/alarms/jobs_promql.py): OTel mode with the
        OTLP sink, where the emitter's series reach PromQL and not GpuInsights/Training."""
        return self.promql and self.otlp and self.jobs is not None

    @property
    def silence_check(self) -> bool:
        """The silence check (lambdas/silence_check) and its alarms: with the exporter, where
        ``gpu-silent`` is not a PromQL alarm on Kube State Metrics' capacity."""
        return self.exporter and not self.promql_gpu

    @property
    def promql_low_power(self) -> bool:
        """The low-power alarm is a PromQL alarm on DCGM's power, the exporter's own series not
        in PromQL (its EMF sink): OTel mode, the GPUs' power known (the instance type's), and a
        fleet of one shard, as before the exporter's OTLP sink. The fleet size is no PromQL
        limit: the query returns only the GPUs under the threshold ("all matching time series
        returned by the query are considered to be breaching", alarm-promql.html), and
        PARTIAL_DATA comes past 500 returned ("Limits that apply to alarms based on PromQL
        queries", https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-limits.html).
        With exporter_sink=otlp (``promql_gpu``) every kind is one PromQL alarm at any size."""
        return (
            self.promql
            and not self.promql_gpu
            and self.gpu_instance_type is not None
            and self.shards == 1
        )

    def __post_init__(self) -> None:
        if self.shards < 1:
            raise AlarmSettingsError(f"shards={self.shards} must be at least 1")
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
    settings: AlarmSettings, metric: GpuMetric, function: str, order: str, shard: str
) -> InsightsQuery:
    """One series per GPU of one shard: ORDER BY keeps the worst when more than 500 match."""
    return InsightsQuery(
        namespace=NAMESPACE_GPU,
        metric=str(metric),
        schema=(DIM_CLUSTER, DIM_GPU_INDEX, DIM_NODE, DIM_SHARD),
        where=((DIM_CLUSTER, settings.cluster_name), (DIM_SHARD, shard)),
        function=function,
        group_by=CONTRIBUTOR,
        order=order,
    )


def _sharded(settings: AlarmSettings, spec: AlarmSpec) -> AlarmSpec:
    """The spec's key and description say which shard it covers when there are several."""
    if settings.shards == 1 or spec.shard is None:
        return replace(spec, kind=spec.key)
    return replace(
        spec,
        kind=spec.key,
        key=shard_alarm_name(spec.key, int(spec.shard)),
        description=(
            f"{spec.description} Covers the GPUs of alarm shard {spec.shard} of "
            f"{settings.shards} (Shard dimension)."
        ),
    )


def _cluster(
    settings: AlarmSettings, metric: str, stat: str, namespace: str = NAMESPACE_GPU
) -> MetricStat:
    return MetricStat(namespace, metric, ((DIM_CLUSTER, settings.cluster_name),), stat)


NAMES_THE_GPU = (
    "The state reason and each contributor (ClusterName, NodeName, GpuIndex) name the GPU."
)


def low_power_alarm(settings: AlarmSettings, shard: str = "0") -> AlarmSpec:
    periods = settings.low_power_window_minutes * 60 // PERIOD_S
    share = settings.low_power_percent
    window = settings.low_power_window_minutes
    names = NAMES_THE_GPU
    if settings.exporter:
        metric: InsightsQuery = _per_gpu(
            settings, GpuMetric.ALLOCATED_POWER_UTILIZATION, "MAX", "ASC", shard
        )
        threshold = share
        how = f"an in-use GPU's peak power stayed under {share:g}% of its limit"
        sharded: str | None = shard
    else:
        assert settings.gpu_instance_type is not None
        power = gpu_power(settings.gpu_instance_type)
        metric = InsightsQuery(
            namespace=NAMESPACE_CONTAINER_INSIGHTS,
            metric=CI_POD_GPU_POWER_METRIC,
            schema=CI_POD_GPU_SCHEMA,
            where=((DIM_CLUSTER, settings.cluster_name),),
            function="MAX",
            group_by=(DIM_CLUSTER, DIM_FULL_POD_NAME, DIM_GPU_DEVICE),
            order="ASC",
        )
        threshold = round(power.watts_per_gpu * share / 100, 1)
        how = (
            f"a pod-held GPU's peak power stayed under {threshold:g} W "
            f"({share:g}% of {power.gpu}'s {power.watts_per_gpu:g} W)"
        )
        names = (
            f"Each contributor ({DIM_CLUSTER}, {DIM_FULL_POD_NAME}, {DIM_GPU_DEVICE}) names "
            "the pod and GPU."
        )
        sharded = None  # Container Insights' series carry no shard: one alarm, 500 GPUs
    return AlarmSpec(
        key="gpu-low-power",
        title="GPU in use but not working",
        description=(
            f"For {window} minutes {how}: a GPU held by a job that does no work. "
            "Look for a job waiting on data, a hung rank, or a job that finished without "
            f"releasing its GPUs. {names}"
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
            "no datapoint means the GPU is not in use: idle by design, which belongs in the "
            "weekly report, not in a page"
        ),
        shard=sharded,
    )


def _any_in_a_minute(
    key: str,
    title: str,
    description: str,
    severity: Severity,
    metric: AlarmMetric,
    missing_reason: str,
    shard: str | None = None,
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
        shard=shard,
    )


def _sustained_throttling(
    settings: AlarmSettings,
    shard: str,
    key: str,
    title: str,
    cause: str,
    advice: str,
    metric: GpuMetric,
) -> AlarmSpec:
    """A GPU throttled in at least half its samples in every period of the window."""
    periods = settings.throttle_window_minutes * 60 // PERIOD_S
    return AlarmSpec(
        key=key,
        title=title,
        description=(
            f"For {settings.throttle_window_minutes} minutes a GPU was {cause} in at least "
            f"half of its samples: {advice} {NAMES_THE_GPU}"
        ),
        severity=Severity.WARNING,
        metric=_per_gpu(settings, metric, "AVG", "DESC", shard),
        period_s=PERIOD_S,
        evaluation_periods=periods,
        datapoints_to_alarm=periods,
        threshold=0.5,
        comparison=Comparison.GREATER_OR_EQUAL,
        missing_data=MissingData.NOT_BREACHING,
        missing_data_reason="no exporter data means no GPU to throttle",
        shard=shard,
    )


def gpu_alarms(settings: AlarmSettings) -> list[AlarmSpec]:
    """Every alarm the backtest replays: the per-GPU kinds once per shard, the cluster-level
    ones once, and the training job alarms once per job alarm shard. Built once for each
    settings (a fleet of 500,000 GPUs has 1,250 shards: seconds of building), a new list each
    call."""
    return list(_gpu_alarms(settings))


@functools.lru_cache(maxsize=4)
def _gpu_alarms(settings: AlarmSettings) -> tuple[AlarmSpec, ...]:
    shards = [str(i) for i in range(settings.shards)] if settings.exporter else ["0"]
    per_gpu = (
        []
        if settings.promql_low_power or settings.promql_gpu
        else [low_power_alarm(settings, shard) for shard in shards]
    )
    metric_alarms = settings.exporter and not settings.promql_gpu
    if metric_alarms:
        per_gpu += [spec for shard in shards for spec in _per_gpu_exporter_alarms(settings, shard)]
    alarms = [_sharded(settings, spec) for spec in per_gpu]
    if metric_alarms:
        alarms += [replace(spec, kind=spec.key) for spec in _xid_alarms(settings)]
        alarms.append(silent_gpu_alarm(settings))
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
    if settings.jobs is not None and not settings.promql_jobs:
        alarms += job_alarms(settings.cluster_name, settings.jobs)
    if settings.cluster is not None:
        alarms += control_plane_alarms(settings.cluster_name, settings.cluster)
    if settings.classic_serving is not None and not settings.promql:
        alarms += classic_serving_alarms(settings.cluster_name, settings.classic_serving)
    alarms = [replace(a, kind=a.alarm_kind) for a in alarms]
    return (*alarms, *cap_alarms(settings.cluster_name, alarms))


def cap_alarms(cluster: str, alarms: Sequence[AlarmSpec]) -> list[AlarmSpec]:
    """One fleet count alarm per multi time series kind: it pages once when
    ``CAP_ALARM_SERIES`` of the kind's series breach at once. "Alarms evaluating multiple time
    series will limit the number of contributors in ALARM to 100", fewer with many attributes
    (alarm-limits.html, Metrics Insights and PromQL alike): a shard sized for 400 GPUs can
    have them all idle on a weekend, and the GPUs past the cap are never paged one by one.

    The count reads the kind's query over the whole cluster (no Shard), ORDER BY as the kind
    ranks its worst first, so it counts the breaching series among the first 500 returned: it
    reaches ``CAP_ALARM_SERIES`` no later than any one shard's alarm reaches its cap. A PromQL
    kind counts its own breaching series, ``count(...) >= N``. Same period, datapoints and
    severity as the kind; a period with no datapoint counts none."""
    first: dict[str, AlarmSpec] = {}
    for spec in alarms:
        if spec.multi_series and not spec.counts:
            first.setdefault(spec.alarm_kind, spec)
    return [_cap_alarm(cluster, spec) for spec in first.values()]


def _cap_alarm(cluster: str, spec: AlarmSpec) -> AlarmSpec:
    kind = spec.alarm_kind
    metric = spec.metric
    counted: BreachCount | PromQLQuery
    if isinstance(metric, PromQLQuery):
        counted = replace(metric, query=f"count({metric.query}) >= {CAP_ALARM_SERIES}")
    else:
        assert isinstance(metric, InsightsQuery)
        whole_cluster = tuple((k, v) for k, v in metric.where if k != DIM_SHARD)
        counted = BreachCount(replace(metric, where=whole_cluster), spec.comparison, spec.threshold)
    key = f"{kind}{CAP_ALARM_SUFFIX}"
    return replace(
        spec,
        key=key,
        kind=key,
        counts=kind,
        shard=None,
        title=cap_alarm_title(spec.title),
        description=(
            f"{CAP_ALARM_SERIES} or more series breached {kind} at once ({spec.title.lower()}): "
            "the count is this alarm's value. CloudWatch keeps at most "
            f"{MAX_CONTRIBUTORS_IN_ALARM} contributors of an alarm in ALARM (fewer when they "
            f"carry many attributes), so past that {kind} pages no more of them one by one: "
            "treat it as one fleet-wide incident with a shared cause (a data source, the "
            "scheduler, a driver or image rollout, the network). Where to look: the fleet "
            f"dashboard, `gpu-insights status`, and every {alarm_name(cluster, kind)} alarm's "
            "contributors in the CloudWatch console (Alarms, the alarm, Contributors)."
        ),
        metric=counted,
        threshold=CAP_ALARM_SERIES,
        comparison=Comparison.GREATER_OR_EQUAL,
        missing_data=MissingData.NOT_BREACHING,
        missing_data_reason="a period with no breaching series counts none",
    )


def silent_gpu_alarm(settings: AlarmSettings) -> AlarmSpec:
    """A GPU or node the silence check (lambdas/silence_check) finds silent: running, past its
    grace period, and no exporter sample in the look back. No alarm on the exporter's own series
    can page for it: a series a Metrics Insights query no longer returns takes its contributor
    to OK "no matter the treat missing data treatment" (CloudWatch User Guide, "Create a
    CloudWatch alarm based on a Metrics Insights query", "Missing data in CloudWatch Metrics
    Insights alarms"). The check publishes a series only while it is silent, so when the GPU
    reports again, or its instance is gone, the series stops and the contributor goes OK by
    that same rule. One alarm, not one per shard: only silent GPUs have series."""
    return AlarmSpec(
        key=SILENT_ALARM,
        kind=SILENT_ALARM,
        title="GPU not reporting",
        description=(
            "A running GPU instance of the cluster sent no exporter sample in the silence "
            "check's look back: the exporter crashed or was evicted, the node hangs or lost its "
            "network, or the driver stopped listing the GPU. GpuIndex 'all' means the node sent "
            "nothing; the value is how many GPUs are silent. Check the node's Ready condition "
            "and the exporter pod on it (kubectl -n gpu-insights get pods -o wide); a GPU the "
            "driver lost needs a reset or a node replacement. Each contributor (ClusterName, "
            "NodeName, GpuIndex) names the node and GPU."
        ),
        severity=Severity.CRITICAL,
        metric=InsightsQuery(
            namespace=NAMESPACE_GPU,
            metric=SILENT_GPUS_METRIC,
            schema=(DIM_CLUSTER, DIM_GPU_INDEX, DIM_NODE),
            where=((DIM_CLUSTER, settings.cluster_name),),
            function="MAX",
            group_by=CONTRIBUTOR,
            order="DESC",
        ),
        period_s=PERIOD_S,
        evaluation_periods=1,
        datapoints_to_alarm=1,
        threshold=1,
        comparison=Comparison.GREATER_OR_EQUAL,
        missing_data=MissingData.NOT_BREACHING,
        missing_data_reason=(
            "the check publishes a GPU's series only while the GPU is silent; its own silence "
            "is gpu-silence-check's"
        ),
    )


def silence_check_alarm(settings: AlarmSettings) -> AlarmSpec:
    """The silence check's heartbeat: it publishes the cluster's count of silent GPUs every
    run, 0 included, so a period without one is a check that failed or did not run, and
    breaches. Not in :func:`gpu_alarms` (nor the backtest): it watches the check, not a GPU,
    and a history of the exporter alone would read as the check never running."""
    return AlarmSpec(
        key="gpu-silence-check",
        kind="gpu-silence-check",
        title="Silence check not running",
        description=(
            "The silence check published nothing for 15 minutes: it fails (read its log: "
            "EC2 or CloudWatch refused a call) or its schedule stopped. Until it runs again, "
            "a GPU or node that stops reporting pages nobody."
        ),
        severity=Severity.WARNING,
        metric=_cluster(settings, SILENT_GPUS_METRIC, "SampleCount"),
        period_s=PERIOD_S,
        evaluation_periods=1,
        datapoints_to_alarm=1,
        threshold=1,
        comparison=Comparison.LESS,
        missing_data=MissingData.BREACHING,
        missing_data_reason="no count is a check that did not run",
    )


def deployed_alarms(settings: AlarmSettings) -> list[AlarmSpec]:
    """Every alarm the app deploys: the GPU alarms (what the backtest replays), the PromQL
    alarms of OTel mode and, with the exporter, the silence check's heartbeat."""
    heartbeat = [silence_check_alarm(settings)] if settings.silence_check else []
    return [*gpu_alarms(settings), *promql_alarms(settings), *heartbeat]


def promql_alarms(settings: AlarmSettings) -> list[AlarmSpec]:
    """OTel mode's PromQL alarms (the table above): one alarm per kind for every GPU and every
    job, each with its fleet count alarm."""
    alarms = otlp_alarms(settings) if settings.promql_gpu else _promql_low_power(settings)
    # The job alarms (cdk/alarms/jobs_promql.py), where the emitter sends OTLP.
    if settings.promql_jobs:
        assert settings.jobs is not None
        alarms += promql_job_alarms(settings.cluster_name, settings.jobs)
    if settings.promql and settings.serving is not None:
        alarms += serving_alarms(settings.cluster_name, settings.serving)
    # Kube State Metrics' pending GPU pods (cdk/alarms/cluster.py): OTel mode, any sink.
    if settings.promql and settings.cluster is not None:
        alarms.append(gpu_pending_alarm(settings.cluster_name, settings.cluster))
        # GPU nodes NotReady, cordoned or with bad GPUs, crash-looping GPU pods (nodes.py).
        alarms += node_alarms(settings.cluster_name, settings.cluster.nodes)
    return alarms + cap_alarms(settings.cluster_name, alarms)


def _promql_low_power(settings: AlarmSettings) -> list[AlarmSpec]:
    """OTel mode with the EMF sink: the low-power alarm on DCGM's power where the fleet's GPU
    power is known (``promql_low_power``)."""
    if not settings.promql_low_power:
        return []
    assert settings.gpu_instance_type is not None
    power = gpu_power(settings.gpu_instance_type)
    share = settings.low_power_percent
    threshold = round(power.watts_per_gpu * share / 100, 1)
    window = settings.low_power_window_minutes
    query = low_power_query(settings.cluster_name, threshold, window)
    alarms = [
        AlarmSpec(
            key="gpu-low-power",
            kind="gpu-low-power",
            title="GPU in use but not working",
            description=(
                f"For {window} minutes a pod-held GPU's peak power stayed under {threshold:g} W "
                f"({share:g}% of {power.gpu}'s {power.watts_per_gpu:g} W): a GPU held by a job "
                "that does no work. Look for a job waiting on data, a hung rank, or a job that "
                "finished without releasing its GPUs. Each contributor (the series' cluster, "
                "node, gpu, namespace and pod labels) names the GPU and the pod."
            ),
            severity=Severity.WARNING,
            metric=query,
            period_s=query.evaluation_interval_s,
            evaluation_periods=1,
            datapoints_to_alarm=1,
            threshold=threshold,
            comparison=Comparison.LESS,
            missing_data=MissingData.NOT_BREACHING,
            missing_data_reason=(
                "a GPU the query does not return is not breaching: no pod holds it, or it "
                "works; absent for the recovery period, its contributor is OK"
            ),
        )
    ]
    return alarms


def is_promql(spec: AlarmSpec) -> bool:
    return isinstance(spec.metric, PromQLQuery)


def _xid_alarms(settings: AlarmSettings) -> list[AlarmSpec]:
    """Cluster-level: the XID event itself (through the notifier) names node, GPU and code."""
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
    ]


def _per_gpu_exporter_alarms(settings: AlarmSettings, shard: str) -> list[AlarmSpec]:
    return [
        AlarmSpec(
            key="gpu-lost",
            title="GPU lost",
            description=(
                "NVML says a GPU fell off the bus, or its calls keep failing with a device or "
                "driver fault such as RESET_REQUIRED (gpu_healthy=0; the GPU's exporter "
                "document names the NVML code in UnhealthyReason). It stays lost until the "
                f"node is rebooted or the GPU reset; drain the node. {NAMES_THE_GPU}"
            ),
            severity=Severity.CRITICAL,
            metric=_per_gpu(settings, GpuMetric.HEALTHY, "MIN", "ASC", shard),
            period_s=60,
            evaluation_periods=2,
            datapoints_to_alarm=2,
            threshold=1,
            comparison=Comparison.LESS,
            missing_data=MissingData.MISSING,
            missing_data_reason=(
                "a gap is not read as healthy or lost; a GPU that stops reporting clears to "
                "OK whatever this setting (a contributor is only OK or ALARM), and gpu-silent "
                "pages for it"
            ),
            shard=shard,
        ),
        _any_in_a_minute(
            "gpu-ecc-uncorrected",
            "Uncorrectable ECC errors",
            "A GPU counted new uncorrectable ECC errors: its memory returned bad data. "
            f"Expect XID 48/94/95 and a pending row remap; reset the GPU. {NAMES_THE_GPU}",
            Severity.CRITICAL,
            _per_gpu(settings, GpuMetric.ECC_UNCORRECTED, "SUM", "DESC", shard),
            "GPUs without ECC publish no count; that is not an error",
            shard,
        ),
        _sustained_throttling(
            settings,
            shard,
            "gpu-thermal-throttling",
            "Sustained thermal throttling",
            "throttled for heat",
            "check cooling, fans and inlet temperature.",
            GpuMetric.THROTTLED_THERMAL,
        ),
        _sustained_throttling(
            settings,
            shard,
            "gpu-power-brake",
            "Sustained power-brake slowdown",
            "slowed by its hardware power brake",
            "a power-supply or board fault, not the normal power cap of a busy GPU.",
            GpuMetric.THROTTLED_POWER,
        ),
    ]


def fleet_shards(settings: AlarmSettings, fleet_gpus: int) -> int:
    """The alarm shards these settings need for a fleet of ``fleet_gpus`` GPUs (the exporter's
    ``--alarm-shards`` and the per-GPU alarms' count): ``shards_for`` the fleet, but one where
    every GPU and node kind is one PromQL alarm (``promql_gpu``), which no shard divides: a
    ``fleet_gpus`` changed there neither re-shards the exporter nor rolls its DaemonSet."""
    return 1 if settings.promql_gpu else shards_for(fleet_gpus)


def alarm_sizing(settings: AlarmSettings, fleet_gpus: int) -> AlarmSizing:
    """The Metrics Insights alarms these settings make for a fleet of ``fleet_gpus`` GPUs."""
    sized = replace(settings, shards=fleet_shards(settings, fleet_gpus))
    insights = [s for s in gpu_alarms(sized) if insights_query(s.metric) is not None]
    jobs = [s for s in insights if (s.counts or s.kind) in JOB_ALARM_KINDS]
    return AlarmSizing(
        fleet_gpus=fleet_gpus,
        shards=sized.shards,
        insights_alarms=len(insights),
        job_alarms=len(jobs),
        promql_alarms=len(promql_alarms(sized)),
    )


#: What names a GPU in a PromQL contributor (``promql.gpu_contributor``), in place of
#: ``NAMES_THE_GPU``'s dimensions.
NAMES_THE_GPU_BY_LABELS = (
    "Each contributor (the series' cluster, node and gpu labels, and the namespace and pod "
    "where a pod holds the GPU) names the GPU."
)


def _promql(spec: AlarmSpec, query: PromQLQuery, reason: str) -> AlarmSpec:
    """``spec`` (a Metrics Insights alarm's words, threshold and severity) as the PromQL alarm
    that evaluates ``query``: no shard, one evaluation a minute, and no treat-missing-data (a
    series the query does not return is not breaching)."""
    return replace(
        spec,
        kind=spec.kind or spec.key,
        description=spec.description.replace(NAMES_THE_GPU, NAMES_THE_GPU_BY_LABELS),
        metric=query,
        period_s=query.evaluation_interval_s,
        evaluation_periods=1,
        datapoints_to_alarm=1,
        missing_data=MissingData.NOT_BREACHING,
        missing_data_reason=reason,
        shard=None,
    )


def otlp_alarms(settings: AlarmSettings) -> list[AlarmSpec]:
    """The per-GPU and node kinds as PromQL alarms on the exporter's OTLP series (one alarm per
    kind, any fleet): the same words and thresholds as their Metrics Insights alarms, each query
    returning only the GPUs (or nodes) that breach (cdk/alarms/promql.py)."""
    cluster = settings.cluster_name
    classic = {s.key: s for s in _per_gpu_exporter_alarms(settings, "0")}
    classic |= {s.key: s for s in _xid_alarms(settings)}
    low = low_power_alarm(replace(settings, shards=1))
    absent = "a GPU the query does not return is not breaching; absent for the recovery period, "
    xid_note = (
        " Each contributor (cluster, node, gpu, xid_code, and the pod that held the GPU) names "
        "the GPU and the code; the XID message from the exporter's log pages in seconds."
    )
    return [
        _promql(
            low,
            otlp_low_power_query(
                cluster, settings.low_power_percent, settings.low_power_window_minutes
            ),
            absent + "its contributor is OK (the exporter sends the series only while the GPU "
            "is in use: an idle GPU is never returned)",
        ),
        _promql(
            replace(
                classic["gpu-xid-fatal"],
                description=classic["gpu-xid-fatal"].description + xid_note,
            ),
            otlp_xid_query(cluster, fatal=True),
            absent + "a GPU and code whose count did not step in the last 5 minutes is OK",
        ),
        _promql(
            replace(classic["gpu-xid"], description=classic["gpu-xid"].description + xid_note),
            otlp_xid_query(cluster, fatal=False),
            absent + "a GPU and code whose count did not step in the last 5 minutes is OK",
        ),
        _promql(
            classic["gpu-ecc-uncorrected"],
            otlp_ecc_query(cluster),
            absent + "GPUs without ECC, or without new errors, send no count",
        ),
        *(
            _promql(
                classic[key],
                otlp_throttle_query(cluster, metric, settings.throttle_window_minutes),
                absent + "the gauge is sent only in its non-zero hours",
            )
            for key, metric in (
                ("gpu-thermal-throttling", GpuMetric.THROTTLED_THERMAL),
                ("gpu-power-brake", GpuMetric.THROTTLED_POWER),
            )
        ),
        _promql(
            classic["gpu-lost"],
            otlp_lost_query(cluster),
            absent + "a GPU that stops reporting is gpu-silent's, not read as lost or healthy",
        ),
        otlp_silent_alarm(settings),
    ]


def otlp_silent_alarm(settings: AlarmSettings) -> AlarmSpec:
    """``gpu-silent`` without the silence check: a node Kube State Metrics says has N GPUs of
    which fewer than N still send the exporter's series (``promql.otlp_silent_query``). It
    keeps breaching while the node exists; a node scaled in leaves the result."""
    query = otlp_silent_query(settings.cluster_name, REQUIRED_NODE_EXPRESSIONS)
    return replace(
        silent_gpu_alarm(settings),
        description=(
            "A node Kube State Metrics says has N GPUs (nvidia.com/gpu capacity) sent no "
            "exporter sample for some of them in 10 minutes: the exporter crashed or was "
            "evicted, the node hangs or lost its network, or the driver stopped listing a GPU. "
            "The value is how many of its GPUs are silent. Check the node's Ready condition and "
            "the exporter pod on it (kubectl -n gpu-insights get pods -o wide); a GPU the "
            "driver lost needs a reset or a node replacement. Each contributor (the series' "
            "cluster and node labels) names the node."
        ),
        metric=query,
        period_s=query.evaluation_interval_s,
        missing_data_reason=(
            "a node the query does not return has every GPU reporting, or is gone from the "
            "cluster; it pages from Kube State Metrics' capacity, not from the silent GPUs' "
            "own series, so it stays in ALARM while the node exists"
        ),
    )
