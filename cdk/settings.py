"""One frozen, validated settings object per deployment.

``cdk/app.py`` builds it from CDK context (``-c key=value`` and ``cdk.json``); this module only
parses and validates, so tests and the demo can build settings from a plain mapping. A bad
value raises :class:`SettingsError` naming the key, the value and what is allowed, which stops
synth before any template is written.
"""

import difflib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import Enum, StrEnum
from typing import Any, Final

from cdk.alarms.catalog import AlarmSettings, fleet_shards
from cdk.alarms.cluster import ClusterAlarmSettings
from cdk.alarms.jobs import JobAlarmSettings
from cdk.alarms.nodes import NodeAlarmSettings
from cdk.alarms.power_table import gpu_power
from cdk.alarms.serving_promql import DEFAULT_TTFT_P99_S, ServingAlarmSettings, serving_alarms
from cdk.aws_values import (
    arn_region,
    bucket_problem,
    data_source_problem,
    email_problem,
    https_problem,
    iam_arn_problem,
    kms_key_arn_problem,
    parameter_name_problem,
    region_problem,
    schedule_problem,
    sns_topic_arn_problem,
)
from cdk.node_config.cloudwatch_agent_config import MAX_INTERVAL_SECONDS, MIN_INTERVAL_SECONDS
from gpu_insights_agent.contract.metrics import (
    EXPORTER_INTERVAL_S,
    EXPORTER_MAX_INTERVAL_S,
    ExporterSink,
)
from gpu_insights_agent.contract.resource_names import EKS_CLUSTER, parameter_name
from lambdas.shared.container_insights_mode import (
    DEFAULT_MODE,
    OTEL_MIN_ADDON_VERSION,
    ContainerInsightsMode,
    addon_version_key,
    at_least,
    default_mode,
    otel_capable,
    otel_offered,
    otel_region_problem,
)
from lambdas.shared.shards import (
    LOOKBACK_DAYS,
    MAX_SHARDS,
    STORAGE,
    STORAGE_SHARD_VOLUMES,
    TRAINING,
    TRAINING_SHARD_JOBS,
    FunctionSize,
)
from lambdas.shared.thresholds import (
    LOW_POWER_PERCENT,
    LOW_POWER_WINDOW_MINUTES,
    THROTTLE_WINDOW_MINUTES,
)
from lambdas.storage_analyzer.aws import VolumeScope
from lambdas.training_analyzer.failure_run import FAILURE_LOG_JOBS
from lambdas.training_analyzer.gpu_memory.analysis import HEADROOM_PERCENT, NEAR_CAPACITY_PERCENT
from lambdas.training_analyzer.gpu_prices import gpu_hour_price

#: The largest fleet a deployment is sized for (``fleet_gpus``; ``cost-estimate`` prices).
MAX_FLEET_GPUS: Final = 500_000
#: GPUs the per-GPU alarms are sized for unless ``fleet_gpus`` says otherwise (one shard).
DEFAULT_FLEET_GPUS: Final = 400

#: EKS CreateCluster: 1-100 characters, ``^[0-9A-Za-z][A-Za-z0-9\-_]*``.
#: https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html
_CLUSTER_NAME = EKS_CLUSTER.pattern()
_ADDON_VERSION = re.compile(r"^v\d+\.\d+\.\d+-eksbuild\.\d+$")
_ACCOUNT = re.compile(r"^\d{12}$")
_REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d$")
_LABEL = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?=[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
#: EC2 resource ids: a prefix and 8 or 17 hex digits
#: (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/resource-ids.html).
_VPC_ID = re.compile(r"^vpc-([0-9a-f]{8}|[0-9a-f]{17})$")
_SUBNET_ID = re.compile(r"^subnet-([0-9a-f]{8}|[0-9a-f]{17})$")
_SECURITY_GROUP_ID = re.compile(r"^sg-([0-9a-f]{8}|[0-9a-f]{17})$")
_TAINT_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


class SettingsError(ValueError):
    """A setting that cannot be deployed; the message names the key, value and what is allowed."""


class AgentCredentials(StrEnum):
    """How the add-on's CloudWatch agent gets AWS credentials."""

    POD_IDENTITY = "pod-identity"
    IRSA = "irsa"


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Everything one deployment needs; every field is a documented context key. There is no
    default cluster: a deployment names the cluster it instruments."""

    cluster_name: str
    account: str | None = None
    region: str | None = None
    #: False where the observability add-on is managed elsewhere (Terraform, another stack).
    install_addon: bool = True
    #: None lets EKS pick its default version for the cluster's Kubernetes version.
    addon_version: str | None = None
    #: The add-on's configuration: "otel" (OTel Container Insights, AWS's recommendation: DCGM's
    #: series over OTLP, read with PromQL) or "classic" (Enhanced Container Insights: pod_gpu_*
    #: and node_gpu_* in ContainerInsights). Synth cannot see the add-on a cluster already runs;
    #: ``gpu-insights preflight`` names its mode and warns before a deploy would switch it.
    #: Unset, OTel where AWS offers it (``OTEL_REGIONS``) and Classic elsewhere; OTel is
    #: refused in a Region AWS does not offer it in.
    container_insights_mode: ContainerInsightsMode = DEFAULT_MODE
    agent_credentials: AgentCredentials = AgentCredentials.POD_IDENTITY
    #: The cluster's IAM OIDC provider; required with IRSA.
    oidc_provider_arn: str | None = None
    container_logs: bool = True
    #: Let the add-on's agents run on every tainted node, as the add-on's chart does by default.
    tolerate_all_taints: bool = True
    #: With tolerate_all_taints off, the taint keys (on GPU nodes) the add-on must tolerate.
    gpu_taint_keys: tuple[str, ...] = ("nvidia.com/gpu",)
    #: Collection interval of the EC2 GPU agent configuration, in seconds.
    agent_interval_seconds: int = 60
    #: Deploy the NVML exporter (image asset built at deploy time: needs Docker or Finch).
    exporter_enabled: bool = True
    exporter_interval_seconds: int = EXPORTER_INTERVAL_S
    #: Share the host's PID namespace to name the pod using each GPU (off: a privilege).
    exporter_pod_attribution: bool = False
    #: "emf" (GpuInsights metrics, which the alarms, dashboards and analyzers read) or "otlp"
    #: (to the add-on agent's OTLP endpoint, PromQL only; needs container_insights_mode=otel).
    #: Unset in the context, ``default_sink``: OTLP in OTel mode (unless addon_version pins an
    #: add-on without the OTLP endpoint), EMF in Classic. Built directly, EMF.
    exporter_sink: ExporterSink = ExporterSink.EMF
    #: key=value labels that mark GPU nodes beside the ones the exporter knows (GPU Operator,
    #: GPU feature discovery, NFD, Karpenter, NVIDIA GPU instance types): a node with any of
    #: them runs the exporter too.
    gpu_node_labels: tuple[str, ...] = ()
    #: An IAM role mapped to system:masters (or an access entry) that CDK's kubectl uses to apply
    #: the exporter's DaemonSet; without it, `gpu-insights manifest` prints it for kubectl/GitOps.
    kubectl_role_arn: str | None = None
    #: Where CDK's kubectl provider runs, for a cluster whose API endpoint is private: the
    #: cluster's VPC, subnets that reach the endpoint (with a route to STS, EKS and the
    #: CloudFormation callback: a NAT gateway or VPC endpoints), and a security group the
    #: cluster's security group lets in on 443. All three or none.
    kubectl_vpc_id: str | None = None
    kubectl_subnet_ids: tuple[str, ...] = ()
    kubectl_security_group_id: str | None = None
    #: A GPU in use drawing under this share of its power limit for the window is not working.
    low_power_percent: float = LOW_POWER_PERCENT
    low_power_window_minutes: int = LOW_POWER_WINDOW_MINUTES
    throttle_window_minutes: int = THROTTLE_WINDOW_MINUTES
    #: GPUs the fleet may grow to: sizes the alarm shards (alarms.sizing: ceil(GPUs / 400),
    #: one alarm per shard per per-GPU alarm kind). Changing it re-shards exporter and alarms.
    fleet_gpus: int = DEFAULT_FLEET_GPUS
    #: The training job alarms (cdk/alarms/jobs.py): hung, loss not finite or jumped,
    #: throughput collapsed, read from what the training emitter publishes.
    job_alarms: bool = True
    #: A job is hung this many minutes after its next step was due (3x its own median step).
    job_hung_minutes: int = JobAlarmSettings.hung_minutes
    #: A loss spike: this many robust deviations above the job's recent median.
    job_loss_spike_deviations: float = JobAlarmSettings.loss_spike_deviations
    #: Throughput collapsed: under this share of the job's recent median ...
    job_throughput_fraction: float = JobAlarmSettings.throughput_fraction
    #: ... for this many minutes (a multiple of 5).
    job_throughput_window_minutes: int = JobAlarmSettings.throughput_window_minutes
    #: Fail-slow: the job's step time this many percent over its recent median ...
    job_step_time_rise_percent: float = JobAlarmSettings.step_time_rise_percent
    #: ... in every minute of this window.
    job_step_time_rise_minutes: int = JobAlarmSettings.step_time_rise_minutes
    #: Goodput now: a job's goodput over the last hour under this percent pages.
    job_goodput_percent: float = JobAlarmSettings.goodput_percent
    #: The control plane's alarms on AWS/EKS (Kubernetes 1.28 and later) and, in OTel mode,
    #: the pending GPU pods' (cdk/alarms/cluster.py).
    control_plane_alarms: bool = True
    #: A pod the scheduler cannot place pages after this many minutes (each GPU pod in OTel
    #: mode, the cluster's count of unschedulable pods in Classic).
    gpu_pending_alarm_minutes: int = ClusterAlarmSettings.pending_minutes
    #: The control plane's etcd database limit: 8 GiB in the Standard tier.
    etcd_limit_gib: float = ClusterAlarmSettings.etcd_limit_gib
    #: OTel mode: a GPU node NotReady, cordoned, or with AcceleratedHardwareReady False, and a
    #: GPU pod in CrashLoopBackOff, page after this many minutes (cdk/alarms/nodes.py).
    gpu_node_not_ready_minutes: int = NodeAlarmSettings.not_ready_minutes
    gpu_node_cordoned_minutes: int = NodeAlarmSettings.cordoned_minutes
    gpu_node_hardware_minutes: int = NodeAlarmSettings.hardware_minutes
    gpu_pod_crash_loop_minutes: int = NodeAlarmSettings.crash_loop_minutes
    #: Without the exporter, the low-power alarm reads the GPUs' power limit from this type.
    gpu_instance_type: str | None = None
    #: Critical alarms (pages): email addresses and HTTPS endpoints (a pager's webhook).
    alarm_emails: tuple[str, ...] = ()
    alarm_https_endpoints: tuple[str, ...] = ()
    #: A chat webhook (Slack, Teams, Chime) the notifier posts every incident to: the name of
    #: the SSM SecureString parameter (aws/ssm key) that holds its https:// URL, created by
    #: the operator (CloudFormation creates no SecureString). The URL never enters a template.
    webhook_url_parameter: str | None = None
    #: Count kernel "NVRM: Xid" lines in Container Insights' host log group (the fallback for
    #: nodes without the exporter). The log group must exist: Fluent Bit creates it on its
    #: first host log line, so turn this on once /aws/containerinsights/<cluster>/host exists.
    xid_host_log_filter: bool = False
    #: Page a fatal XID from the exporter only when the node's kernel log (Container Insights'
    #: host log group) holds the driver's own "NVRM: Xid" line for it; unconfirmed, it is sent
    #: as a warning that says so (docs/paging.md, "Who can write an XID").
    xid_require_kernel_confirmation: bool = False
    #: Warnings (a digest to read, not a page).
    warning_emails: tuple[str, ...] = ()
    report_emails: tuple[str, ...] = ()
    #: An existing topic (the team's on-call one) instead of the one the app makes, for each
    #: purpose; with the KMS key it is encrypted with, where that is a customer managed key.
    #: Its subscriptions are its owner's: the recipient settings of that purpose are refused.
    critical_topic_arn: str | None = None
    critical_topic_kms_key_arn: str | None = None
    warning_topic_arn: str | None = None
    warning_topic_kms_key_arn: str | None = None
    report_topic_arn: str | None = None
    report_topic_kms_key_arn: str | None = None
    #: S3 buckets the storage analyzer reads request metrics of (training data, checkpoints).
    storage_buckets: tuple[str, ...] = ()
    #: "cluster": volumes tagged for the cluster and those of its nodes; "all": the region's.
    storage_volume_scope: str = VolumeScope.CLUSTER.value
    storage_schedule: str = "cron(0 6 * * ? *)"
    #: Volumes the storage analyzer is expected to read. Above ``storage_shard_volumes`` it
    #: runs as a Step Functions Distributed Map (cdk/constructs/fleet_map.py), in shards of
    #: that many volumes, one function invocation each; at or below it, one function run.
    storage_fleet_volumes: int = 0
    storage_shard_volumes: int = STORAGE_SHARD_VOLUMES
    #: Training jobs the training analyzer is expected to read; above ``training_shard_jobs``
    #: it runs as a Distributed Map in shards of that many jobs, like the storage analyzer.
    training_fleet_jobs: int = 0
    training_shard_jobs: int = TRAINING_SHARD_JOBS
    #: Days of metrics each analysis reads.
    lookback_days: int = LOOKBACK_DAYS
    #: Turn on S3 request metrics (a whole-bucket filter) on the storage buckets.
    s3_enable_request_metrics: bool = False
    training_schedule: str = "cron(0 7 * * ? *)"
    #: The weekly report: Monday morning, for the ISO week that just ended.
    report_schedule: str = "cron(0 8 ? * MON *)"
    #: Price of one GPU-hour for training waste; the GPU model's on-demand price otherwise.
    gpu_hour_price_usd: float | None = None
    #: Buckets and volume ids training jobs read: a data-bound job links their storage findings.
    training_data_sources: tuple[str, ...] = ()
    #: A job whose P95 of GPU memory used is at or above this percent of its GPUs' memory is
    #: at risk of running out (training_gpu_memory_near_capacity).
    gpu_memory_near_capacity_percent: float = NEAR_CAPACITY_PERCENT
    #: The margin above a job's peak GPU memory that a MIG profile must still hold
    #: (training_gpu_memory_oversized).
    gpu_memory_headroom_percent: float = HEADROOM_PERCENT
    #: Failed jobs whose Container Insights logs one training analyzer run (or shard) reads
    #: for their cause (training_failure_cause); the rest are named by analysis_error.
    failure_log_jobs: int = FAILURE_LOG_JOBS
    #: The inference serving SLO alarms (cdk/alarms/serving_promql.py), OTel mode only: the
    #: add-on sends the servers' latency histograms there; Classic's agent drops histograms.
    #: On by default: without an inference server their queries return nothing, so they stay
    #: out of ALARM and page no one, as the job alarms do without jobs.
    serving_alarms: bool = True
    #: Classic mode: the add-on's agent scrapes the inference servers' counters and gauges
    #: (cdk/node_config/serving_prometheus.py) into ContainerInsights/Prometheus, and with
    #: ``serving_alarms`` the Classic serving alarms watch them (cdk/alarms/serving_classic.py).
    #: OTel mode's add-on collects the servers itself: no effect there.
    serving_metrics: bool = True
    #: p99 time to first token, in seconds, above which a model pages: each model's own
    #: (``{"model": seconds}``, JSON), and the rest at the default.
    serving_ttft_p99_seconds: float = DEFAULT_TTFT_P99_S
    serving_ttft_p99_targets: tuple[tuple[str, float], ...] = ()
    #: p99 end-to-end latency targets: no default (it depends on the output length asked for).
    serving_e2e_p99_seconds: float | None = None
    serving_e2e_p99_targets: tuple[tuple[str, float], ...] = ()
    #: A replica with more than this many requests waiting for this many minutes pages.
    serving_waiting_requests: int = ServingAlarmSettings.waiting_requests
    serving_waiting_minutes: int = ServingAlarmSettings.waiting_minutes
    #: Percent of a model's finished requests that ended in an error.
    serving_error_percent: float = ServingAlarmSettings.error_percent
    #: The optional drift alarm per model (docs/drift.md): a model's share of outputs cut at
    #: max_tokens in the last hour over the day before's. Off: the daily ``serving_drift``
    #: finding reports drift without paging.
    serving_drift_alarm: bool = ServingAlarmSettings.drift

    @property
    def gpu_hour_usd(self) -> float:
        if self.gpu_hour_price_usd is not None:
            return self.gpu_hour_price_usd
        gpu = gpu_power(self.gpu_instance_type).gpu if self.gpu_instance_type else None
        return gpu_hour_price(gpu)

    def alarm_settings(self) -> AlarmSettings:
        settings = AlarmSettings(
            cluster_name=self.cluster_name,
            low_power_percent=self.low_power_percent,
            low_power_window_minutes=self.low_power_window_minutes,
            throttle_window_minutes=self.throttle_window_minutes,
            exporter=self.exporter_enabled,
            gpu_instance_type=self.gpu_instance_type,
            host_logs=self.xid_host_log_filter,
            jobs=self.job_alarm_settings() if self.job_alarms else None,
            promql=self.container_insights_mode is ContainerInsightsMode.OTEL,
            otlp=self.exporter_sink is ExporterSink.OTLP,
            # Classic mode none: its agent drops the servers' histograms (serving_promql.py).
            serving=(
                self.serving_alarm_settings()
                if self.serving_alarms
                and self.container_insights_mode is ContainerInsightsMode.OTEL
                else None
            ),
            cluster=self.cluster_alarm_settings() if self.control_plane_alarms else None,
            classic_serving=(
                self.serving_alarm_settings()
                if self.serving_alarms
                and self.serving_metrics
                and self.container_insights_mode is ContainerInsightsMode.CLASSIC
                else None
            ),
        )
        return replace(settings, shards=fleet_shards(settings, self.fleet_gpus))

    def cluster_alarm_settings(self) -> ClusterAlarmSettings:
        return ClusterAlarmSettings(
            pending_minutes=self.gpu_pending_alarm_minutes,
            etcd_limit_gib=self.etcd_limit_gib,
            nodes=NodeAlarmSettings(
                not_ready_minutes=self.gpu_node_not_ready_minutes,
                cordoned_minutes=self.gpu_node_cordoned_minutes,
                hardware_minutes=self.gpu_node_hardware_minutes,
                crash_loop_minutes=self.gpu_pod_crash_loop_minutes,
            ),
        )

    def serving_alarm_settings(self) -> ServingAlarmSettings:
        return ServingAlarmSettings(
            ttft_p99_seconds=self.serving_ttft_p99_seconds,
            ttft_p99_targets=self.serving_ttft_p99_targets,
            e2e_p99_seconds=self.serving_e2e_p99_seconds,
            e2e_p99_targets=self.serving_e2e_p99_targets,
            waiting_requests=self.serving_waiting_requests,
            waiting_minutes=self.serving_waiting_minutes,
            error_percent=self.serving_error_percent,
            drift=self.serving_drift_alarm,
        )

    def job_alarm_settings(self) -> JobAlarmSettings:
        return JobAlarmSettings(
            hung_minutes=self.job_hung_minutes,
            loss_spike_deviations=self.job_loss_spike_deviations,
            throughput_fraction=self.job_throughput_fraction,
            throughput_window_minutes=self.job_throughput_window_minutes,
            step_time_rise_percent=self.job_step_time_rise_percent,
            step_time_rise_minutes=self.job_step_time_rise_minutes,
            goodput_percent=self.job_goodput_percent,
        )

    @property
    def alarm_shards(self) -> int:
        return self.alarm_settings().shards

    @property
    def agent_config_parameter_name(self) -> str:
        """The agent loads ``ssm:`` parameters named ``AmazonCloudWatch-*`` under its default
        policy, so the name keeps that prefix."""
        return parameter_name(self.cluster_name)

    def __post_init__(self) -> None:
        for key, (pattern, allowed) in _PATTERNS.items():
            value = getattr(self, key)
            for item in value if isinstance(value, tuple) else (value,):
                if item is not None:
                    _require(pattern.fullmatch(str(item)), key, item, allowed)
        for key, check in _CHECKS.items():
            value = getattr(self, key)
            for item in value if isinstance(value, tuple) else (value,):
                if item is not None:
                    problem = check(item)
                    _require(problem is None, key, item, problem or "")
        for key, (low, high, unit) in _RANGES.items():
            value = getattr(self, key)
            _require(low <= value <= high, key, value, f"{low} to {high} {unit}")
        for key, size, counted in (
            ("storage_shard_volumes", STORAGE, "volumes"),
            ("training_shard_jobs", TRAINING, "jobs"),
        ):
            _require_shard_fits(key, getattr(self, key), self.lookback_days, size, counted)
        for fleet_key, key in (
            ("storage_fleet_volumes", "storage_shard_volumes"),
            ("training_fleet_jobs", "training_shard_jobs"),
        ):
            fleet, per_shard = getattr(self, fleet_key), getattr(self, key)
            _require(
                fleet <= MAX_SHARDS * per_shard,
                fleet_key,
                fleet,
                f"at most {MAX_SHARDS:,} shards of {key}={per_shard:,} (Step Functions passes "
                f"at most 256 KiB between states): {key} of at least "
                f"{math.ceil(fleet / MAX_SHARDS):,}",
            )
        _require(
            self.storage_volume_scope in set(VolumeScope),
            "storage_volume_scope",
            self.storage_volume_scope,
            " or ".join(VolumeScope),
        )
        if self.gpu_hour_price_usd is not None:
            _require(
                0 < self.gpu_hour_price_usd < 1000,
                "gpu_hour_price_usd",
                self.gpu_hour_price_usd,
                "a price in USD above 0 and below 1000",
            )
        _require(
            self.container_insights_mode is not ContainerInsightsMode.OTEL
            or otel_offered(self.region),
            "container_insights_mode",
            str(self.container_insights_mode),
            otel_region_problem(str(self.region)),
        )
        _require_addon_runs_mode(self.addon_version, self.container_insights_mode)
        _require_otlp_endpoint(self.exporter_sink, self.container_insights_mode, self.addon_version)
        if self.agent_credentials is AgentCredentials.IRSA:
            _require(
                self.oidc_provider_arn,
                "oidc_provider_arn",
                None,
                "the cluster's IAM OIDC provider ARN when agent_credentials is irsa",
            )
        _require_topics(self)
        _require_kubectl_network(self)
        _require_serving_targets(self)
        try:
            self.alarm_settings()
        except ValueError as err:
            raise SettingsError(f"setting {err}") from err

    def topic_arn(self, purpose: str) -> str | None:
        """The existing topic a purpose (critical, warning, report) publishes to, or None where
        the app makes its own."""
        arn: str | None = getattr(self, f"{purpose}_topic_arn")
        return arn

    def topic_kms_key_arn(self, purpose: str) -> str | None:
        arn: str | None = getattr(self, f"{purpose}_topic_kms_key_arn")
        return arn


def _require_serving_targets(settings: Settings) -> None:
    """The serving targets, checked in either mode (a bad one is refused by name even where
    Classic mode deploys no serving alarm); where the alarms deploy, each model's target must
    also fit its alarm's query."""
    try:
        serving = settings.serving_alarm_settings()
        if settings.alarm_settings().serving is not None:
            serving_alarms(settings.cluster_name, serving)
    except ValueError as err:
        raise SettingsError(f"setting {err}") from err


def _require_topics(settings: Settings) -> None:
    """An existing topic's key goes with its topic, in the deployment's region, and recipients
    are not subscribed to a topic the app does not own."""
    for purpose, recipients in TOPIC_RECIPIENTS.items():
        topic = getattr(settings, f"{purpose}_topic_arn")
        key = f"{purpose}_topic_kms_key_arn"
        _require(
            topic or getattr(settings, key) is None,
            key,
            getattr(settings, key),
            f"{purpose}_topic_arn too (the key of the topic the app makes is its own)",
        )
        for name in recipients if topic else ():
            _require(
                not getattr(settings, name),
                name,
                ",".join(getattr(settings, name)),
                f"none with {purpose}_topic_arn: subscribe them on that topic, its "
                "subscriptions are its owner's",
            )
        for name in (f"{purpose}_topic_arn", key):
            arn = getattr(settings, name)
            _require(
                arn is None or settings.region is None or arn_region(arn) == settings.region,
                name,
                arn,
                f"an ARN in the deployment's region {settings.region}",
            )


#: The settings that put CDK's kubectl provider in the cluster's VPC.
KUBECTL_NETWORK: Final = ("kubectl_vpc_id", "kubectl_subnet_ids", "kubectl_security_group_id")


def _require_kubectl_network(settings: Settings) -> None:
    """All three network settings or none, and only where kubectl is used at all."""
    given = [key for key in KUBECTL_NETWORK if getattr(settings, key)]
    if not given:
        return
    first = given[0]
    value = getattr(settings, first)
    shown = ",".join(value) if isinstance(value, tuple) else value
    missing = [key for key in KUBECTL_NETWORK if key not in given]
    _require(
        not missing,
        first,
        shown,
        f"{', '.join(missing)} too: the kubectl provider needs the VPC, subnets and security "
        "group together",
    )
    _require(
        settings.kubectl_role_arn,
        first,
        shown,
        "kubectl_role_arn too: the network settings place the kubectl provider, which runs "
        "only with a kubectl role",
    )


#: Each notification purpose and the settings that subscribe recipients to its topic.
TOPIC_RECIPIENTS: Final[dict[str, tuple[str, ...]]] = {
    "critical": ("alarm_emails", "alarm_https_endpoints"),
    "warning": ("warning_emails",),
    "report": ("report_emails",),
}


#: Settings whose value (or each value of a list) must match a pattern: (pattern, allowed).
_PATTERNS: Final[dict[str, tuple[re.Pattern[str], str]]] = {
    "cluster_name": (
        _CLUSTER_NAME,
        "1-100 letters, digits, '-' or '_', starting with a letter or digit",
    ),
    "account": (_ACCOUNT, "a 12-digit AWS account id"),
    "region": (_REGION, "an AWS region name such as us-east-1"),
    "addon_version": (_ADDON_VERSION, "an EKS add-on version such as v4.1.0-eksbuild.1"),
    "gpu_taint_keys": (_TAINT_KEY, "Kubernetes taint keys such as nvidia.com/gpu"),
    "kubectl_vpc_id": (_VPC_ID, "a VPC id such as vpc-0a1b2c3d4e5f67890"),
    "kubectl_subnet_ids": (_SUBNET_ID, "subnet ids such as subnet-0a1b2c3d4e5f67890"),
    "kubectl_security_group_id": (_SECURITY_GROUP_ID, "a security group id such as sg-0a1b2c3d"),
    "gpu_node_labels": (
        _LABEL,
        "Kubernetes labels as key=value, such as nvidia.com/gpu.present=true",
    ),
}
#: Settings whose value (or each value of a list) AWS checks by rules beyond a pattern: a
#: function that says why AWS would refuse a value, or None.
_CHECKS: Final[dict[str, Callable[[str], str | None]]] = {
    "oidc_provider_arn": lambda arn: iam_arn_problem(arn, "oidc-provider"),
    "kubectl_role_arn": lambda arn: iam_arn_problem(arn, "role"),
    "region": region_problem,
    "webhook_url_parameter": parameter_name_problem,
    "storage_schedule": schedule_problem,
    "training_schedule": schedule_problem,
    "report_schedule": schedule_problem,
    "alarm_https_endpoints": https_problem,
    "alarm_emails": email_problem,
    "warning_emails": email_problem,
    "report_emails": email_problem,
    "storage_buckets": bucket_problem,
    "training_data_sources": data_source_problem,
    **{f"{purpose}_topic_arn": sns_topic_arn_problem for purpose in TOPIC_RECIPIENTS},
    **{f"{purpose}_topic_kms_key_arn": kms_key_arn_problem for purpose in TOPIC_RECIPIENTS},
}
#: Numeric settings and their inclusive bounds: (low, high, unit).
_RANGES: Final[dict[str, tuple[int, int, str]]] = {
    "agent_interval_seconds": (MIN_INTERVAL_SECONDS, MAX_INTERVAL_SECONDS, "seconds"),
    "exporter_interval_seconds": (1, EXPORTER_MAX_INTERVAL_S, "seconds"),
    "lookback_days": (1, 90, "days"),
    "fleet_gpus": (1, MAX_FLEET_GPUS, "GPUs"),
    "storage_fleet_volumes": (0, 10_000_000, "volumes"),
    "storage_shard_volumes": (100, 200_000, "volumes"),
    "training_fleet_jobs": (0, 1_000_000, "jobs"),
    "training_shard_jobs": (10, 20_000, "jobs"),
    "gpu_memory_near_capacity_percent": (50, 99, "percent"),
    "gpu_memory_headroom_percent": (1, 99, "percent"),
    "failure_log_jobs": (1, 10_000, "jobs"),
}


def _require(ok: object, key: str, value: object, allowed: str) -> None:
    if not ok:
        raise SettingsError(f"setting {key}={value!r} is not valid: expected {allowed}")


#: The add-on's agent serves OTLP "in version 8.0.0 and later" ("OTLP ingestion",
#: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/eks-observability-addon-otlp-endpoint.html).
OTLP_ENDPOINT_MIN_ADDON_VERSION: Final = "v8.0.0-eksbuild.1"


def default_sink(mode: ContainerInsightsMode, version: str | None) -> ExporterSink:
    """The exporter's sink where the context does not set one. In OTel mode every alarm, reader
    and dashboard reads PromQL, which sees only what comes by OTLP: with the EMF sink the
    exporter's and emitter's series land in GpuInsights, where the alarms fall back to sharded
    Metrics Insights. So OTLP, unless ``version`` pins an add-on older than the agent's OTLP
    endpoint (then EMF, which that add-on serves); Classic reads GpuInsights, so EMF."""
    if mode is not ContainerInsightsMode.OTEL:
        return ExporterSink.EMF
    if version and not at_least(version, OTLP_ENDPOINT_MIN_ADDON_VERSION):
        return ExporterSink.EMF
    return ExporterSink.OTLP


def _require_otlp_endpoint(
    sink: ExporterSink, mode: ContainerInsightsMode, version: str | None
) -> None:
    """The exporter sends OTLP only where the add-on's agent serves it: OTel mode, and a pinned
    add-on no older than the endpoint."""
    if sink is not ExporterSink.OTLP:
        return
    _require(
        mode is ContainerInsightsMode.OTEL,
        "exporter_sink",
        str(sink),
        "emf unless container_insights_mode=otel (PromQL reads OTLP metrics; Classic's "
        "alarms and readers read GpuInsights)",
    )
    _require(
        not version
        or addon_version_key(version) is None
        or at_least(version, OTLP_ENDPOINT_MIN_ADDON_VERSION),
        "addon_version",
        version,
        f"{OTLP_ENDPOINT_MIN_ADDON_VERSION} or later with exporter_sink=otlp (the agent's OTLP "
        "endpoint), or -c exporter_sink=emf",
    )


def _require_addon_runs_mode(version: str | None, mode: ContainerInsightsMode) -> None:
    """A pinned add-on must be new enough for OTel mode (a malformed version is refused by
    its pattern instead)."""
    if mode is ContainerInsightsMode.OTEL and version and addon_version_key(version):
        _require(
            otel_capable(version),
            "addon_version",
            version,
            f"{OTEL_MIN_ADDON_VERSION} or later with container_insights_mode=otel "
            "(or -c container_insights_mode=classic)",
        )


def _require_shard_fits(key: str, items: int, days: int, size: FunctionSize, counted: str) -> None:
    """One run (a shard, or the single function at the threshold) must be estimated to take
    at most ``size.budget_s``: from the measured cost per item and day
    (lambdas/shared/shards.py), at the function's CPU share, over ``lookback_days``."""
    run_s = size.run_s(items, days)
    if run_s > size.budget_s:
        raise SettingsError(
            f"setting {key}={items} with lookback_days={days} is not valid: one run of "
            f"{items:,} {counted} x {days} days is estimated at {run_s:,.0f} s in the "
            f"{size.memory_mb:,} MB function, over {size.budget_s:,.0f} s (half its "
            f"{size.timeout_s} s timeout); expected at most {size.most_items(days):,} {counted} "
            f"at lookback_days={days}"
        )


#: The spellings of a boolean setting, the same from ``-c KEY=VALUE`` (always a string) and from
#: cdk.json (a JSON boolean, number or string): case and surrounding blanks do not matter.
TRUE_WORDS: Final = ("true", "yes", "on", "1")
FALSE_WORDS: Final = ("false", "no", "off", "0")


#: Digits as written in ASCII: Python's int() and float() also take "1_000" and other
#: scripts' digits (full-width ones), which no other tool reading cdk.json would.
_WHOLE: Final = re.compile(r"[+-]?[0-9]+")
_NUMBER: Final = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _as_bool(key: str, raw: object) -> bool:
    word = str(raw).strip().lower() if isinstance(raw, str | int | float) else None
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, int | float) and raw in (0, 1):
        return bool(raw)
    if word in TRUE_WORDS or word in FALSE_WORDS:
        return word in TRUE_WORDS
    raise SettingsError(
        f"setting {key}={raw!r} is not valid: expected one of {', '.join(TRUE_WORDS)} or "
        f"{', '.join(FALSE_WORDS)}"
    )


def _as_int(key: str, raw: object) -> int:
    """A whole number: a JSON integer, a JSON number with no fraction (2000.0), or a string of
    digits (``-c`` gives strings)."""
    if isinstance(raw, bool):
        raise SettingsError(f"setting {key}={raw!r} is not valid: expected a whole number")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, str) and _WHOLE.fullmatch(raw.strip()):
        return int(raw.strip())
    raise SettingsError(f"setting {key}={raw!r} is not valid: expected a whole number")


def _as_float(key: str, raw: object) -> float:
    if not isinstance(raw, bool) and isinstance(raw, int | float):
        return float(raw)
    if isinstance(raw, str) and _NUMBER.fullmatch(raw.strip()):
        return float(raw.strip())
    raise SettingsError(f"setting {key}={raw!r} is not valid: expected a number")


def _as_str(key: str, raw: object) -> str:
    if isinstance(raw, str) and raw.strip():
        return raw.strip()
    raise SettingsError(f"setting {key}={raw!r} is not valid: expected a non-empty string")


def _as_str_tuple(key: str, raw: object) -> tuple[str, ...]:
    """A list from cdk.json, or from ``-c`` a comma-separated string or a JSON list."""
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("["):
            try:
                raw = json.loads(text)
            except json.JSONDecodeError as err:
                raise SettingsError(
                    f"setting {key}={text!r} is not valid: expected a JSON list of strings"
                ) from err
        else:
            return tuple(part.strip() for part in text.split(",") if part.strip())
    if isinstance(raw, list | tuple) and all(isinstance(item, str) for item in raw):
        return tuple(item.strip() for item in raw if item.strip())
    raise SettingsError(
        f"setting {key}={raw!r} is not valid: "
        "expected a list of strings or a comma-separated string"
    )


def _as_seconds_map(key: str, raw: object) -> tuple[tuple[str, float], ...]:
    """Model name to seconds: a JSON object from cdk.json, or from ``-c`` its text
    (``-c 'serving_ttft_p99_targets={"llama-3-70b": 1.5}'``); each value a number, refused by
    its model's name. Ranges are ServingAlarmSettings' to check."""
    expected = 'expected a JSON object of model name to seconds, e.g. {"llama-3-70b": 1.5}'

    def unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
        # json.loads keeps the last of a repeated name silently: a model given twice in the
        # text of -c is refused by name, as ServingAlarmSettings refuses one given twice.
        names = [name for name, _ in pairs]
        twice = next((name for name in names if names.count(name) > 1), None)
        if twice is not None:
            raise SettingsError(f"setting {key}: model {twice!r} is empty or given twice")
        return dict(pairs)

    if isinstance(raw, str):
        try:
            raw = json.loads(raw, object_pairs_hook=unique)
        except json.JSONDecodeError as err:
            raise SettingsError(f"setting {key}={raw!r} is not valid: {expected}") from err
    if not isinstance(raw, dict):
        raise SettingsError(f"setting {key}={raw!r} is not valid: {expected}")
    return tuple((str(model), _as_float(f"{key}[{model!r}]", s)) for model, s in raw.items())


def _as_enum(enum: type[Enum]) -> Callable[[str, object], Enum]:
    """A setting that is one of ``enum``'s string values (``enum.StrEnum``, or the agent's
    contract enums, which are ``str`` and ``Enum`` for Python 3.9)."""

    def parse(key: str, raw: object) -> Enum:
        try:
            return enum(str(raw).strip().lower())
        except ValueError as err:
            allowed = ", ".join(str(member.value) for member in enum)
            raise SettingsError(
                f"setting {key}={raw!r} is not valid: expected one of {allowed}"
            ) from err

    return parse


_PARSERS: Final[dict[str, Callable[[str, object], Any]]] = {
    "cluster_name": _as_str,
    "account": _as_str,
    "region": _as_str,
    "install_addon": _as_bool,
    "addon_version": _as_str,
    "container_insights_mode": _as_enum(ContainerInsightsMode),
    "agent_credentials": _as_enum(AgentCredentials),
    "oidc_provider_arn": _as_str,
    "container_logs": _as_bool,
    "tolerate_all_taints": _as_bool,
    "gpu_taint_keys": _as_str_tuple,
    "agent_interval_seconds": _as_int,
    "exporter_enabled": _as_bool,
    "exporter_interval_seconds": _as_int,
    "exporter_pod_attribution": _as_bool,
    "exporter_sink": _as_enum(ExporterSink),
    "gpu_node_labels": _as_str_tuple,
    "kubectl_role_arn": _as_str,
    "kubectl_vpc_id": _as_str,
    "kubectl_subnet_ids": _as_str_tuple,
    "kubectl_security_group_id": _as_str,
    "webhook_url_parameter": _as_str,
    "low_power_percent": _as_float,
    "low_power_window_minutes": _as_int,
    "throttle_window_minutes": _as_int,
    "fleet_gpus": _as_int,
    "job_alarms": _as_bool,
    "job_hung_minutes": _as_int,
    "job_loss_spike_deviations": _as_float,
    "job_throughput_fraction": _as_float,
    "job_throughput_window_minutes": _as_int,
    "job_step_time_rise_percent": _as_float,
    "job_step_time_rise_minutes": _as_int,
    "job_goodput_percent": _as_float,
    "control_plane_alarms": _as_bool,
    "gpu_pending_alarm_minutes": _as_int,
    "etcd_limit_gib": _as_float,
    "gpu_node_not_ready_minutes": _as_int,
    "gpu_node_cordoned_minutes": _as_int,
    "gpu_node_hardware_minutes": _as_int,
    "gpu_pod_crash_loop_minutes": _as_int,
    "gpu_instance_type": _as_str,
    "xid_host_log_filter": _as_bool,
    "xid_require_kernel_confirmation": _as_bool,
    "storage_buckets": _as_str_tuple,
    "storage_volume_scope": _as_str,
    "storage_schedule": _as_str,
    "storage_fleet_volumes": _as_int,
    "storage_shard_volumes": _as_int,
    "training_fleet_jobs": _as_int,
    "training_shard_jobs": _as_int,
    "lookback_days": _as_int,
    "s3_enable_request_metrics": _as_bool,
    "training_schedule": _as_str,
    "report_schedule": _as_str,
    "gpu_hour_price_usd": _as_float,
    "training_data_sources": _as_str_tuple,
    "gpu_memory_near_capacity_percent": _as_float,
    "gpu_memory_headroom_percent": _as_float,
    "failure_log_jobs": _as_int,
    "serving_alarms": _as_bool,
    "serving_metrics": _as_bool,
    "serving_ttft_p99_seconds": _as_float,
    "serving_ttft_p99_targets": _as_seconds_map,
    "serving_e2e_p99_seconds": _as_float,
    "serving_e2e_p99_targets": _as_seconds_map,
    "serving_waiting_requests": _as_int,
    "serving_waiting_minutes": _as_int,
    "serving_error_percent": _as_float,
    "serving_drift_alarm": _as_bool,
    "alarm_emails": _as_str_tuple,
    "alarm_https_endpoints": _as_str_tuple,
    "warning_emails": _as_str_tuple,
    "report_emails": _as_str_tuple,
    **{f"{purpose}_topic_arn": _as_str for purpose in TOPIC_RECIPIENTS},
    **{f"{purpose}_topic_kms_key_arn": _as_str for purpose in TOPIC_RECIPIENTS},
}

#: Every key a user may set; kept equal to the dataclass's fields by a unit test.
SETTING_KEYS: Final[frozenset[str]] = frozenset(_PARSERS)


#: Context keys that are CDK's own, not this app's settings: feature flags ("The names of all
#: feature flags begin with the NPM name of the package affected by the particular flag",
#: https://docs.aws.amazon.com/cdk/v2/guide/featureflags.html: ``@aws-cdk/...``,
#: ``@aws-cdk-containers/...``, and v1's ``aws-cdk:enableDiffNoFail``, aws-cdk-lib
#: cx-api/lib/features.ts), the keys the CDK CLI and ``App`` set to steer synthesis ("context
#: keys that are used by the CLI to control the behavior of CDK apps", cx-api/lib/app.ts:
#: ``aws:cdk:enable-path-metadata``, ``aws:cdk:version-reporting``, ``aws:cdk:bundling-stacks``
#: ...), and what the CLI stores in the project's context for ``cdk acknowledge`` and
#: ``cdk cli-telemetry`` (aws/aws-cdk-cli, ``acknowledged-issue-numbers``, ``cli-telemetry``).
_CDK_KEY_PREFIXES: Final = ("@aws-cdk", "aws:cdk:", "aws-cdk:")
_CDK_KEYS: Final = frozenset({"acknowledged-issue-numbers", "cli-telemetry"})


def is_cdk_context_key(key: str) -> bool:
    """True for a context key CDK itself sets or reads (see ``_CDK_KEY_PREFIXES``)."""
    return key.startswith(_CDK_KEY_PREFIXES) or key in _CDK_KEYS


def closest_setting(key: str) -> str | None:
    """The setting a misspelt key most likely means (``cluster-name``: ``cluster_name``), or
    the one setting a key is the first word of (``cluster``: ``cluster_name``)."""
    normal = key.replace("-", "_").lower()
    if normal.endswith("topic_arn") and normal not in SETTING_KEYS:
        return "critical_topic_arn"  # sns_topic_arn, alarm_topic_arn: the on-call topic
    close = difflib.get_close_matches(normal, SETTING_KEYS, n=1, cutoff=0.8)
    if close:
        return close[0]
    starting = [s for s in SETTING_KEYS if s.startswith(f"{normal}_")]
    return starting[0] if len(starting) == 1 else None


def setting_key_problem(key: str) -> str | None:
    """Why a context key is refused, in one line, or None for a setting or a key of CDK's own.
    Synth (``settings_from_context``) and every command that reads settings (``-c``, cdk.json)
    refuse with these words."""
    if key in SETTING_KEYS or is_cdk_context_key(key):
        return None
    close = closest_setting(key)
    hint = f"did you mean {close!r}?" if close else "docs/settings.md lists them"
    return f"unknown setting {key!r}: {hint}"


def missing_cluster(option: str | None = None) -> str:
    """What a deployment without a cluster name is told: where the name goes (``option``
    first, where the command takes one: ``--cluster-name``)."""
    given = f"{option} NAME, " if option else ""
    return (
        "setting cluster_name is missing: name the EKS cluster to instrument with "
        f'{given}-c cluster_name=NAME or "cluster_name" in cdk.json\'s "context"'
    )


#: What synth says without a cluster name.
MISSING_CLUSTER: Final = missing_cluster()


def settings_from_context(context: Mapping[str, object]) -> Settings:
    """Build settings from CDK context. Every key is a setting or one of CDK's own (feature
    flags, the CLI's keys); any other key is refused by name, as is a missing cluster name,
    rather than silently dropped or defaulted."""
    for key in context:
        problem = setting_key_problem(key)
        if problem:
            raise SettingsError(problem)
    if context.get("cluster_name") is None:
        raise SettingsError(MISSING_CLUSTER)
    values = {
        key: _PARSERS[key](key, raw)
        for key, raw in context.items()
        if key in SETTING_KEYS and raw is not None
    }
    # The mode left unset is OTel where AWS offers it and Classic in any other Region
    # (lambdas/shared/container_insights_mode.py OTEL_REGIONS); set, it is held to that table.
    if "container_insights_mode" not in values:
        region = values.get("region")
        values["container_insights_mode"] = default_mode(
            region if isinstance(region, str) else None
        )
    # The sink left unset follows the mode, as the mode follows the Region (default_sink).
    if "exporter_sink" not in values:
        version = values.get("addon_version")
        values["exporter_sink"] = default_sink(
            values["container_insights_mode"], version if isinstance(version, str) else None
        )
    # A shard size left at its default shrinks to what one run can read in the lookback
    # given (lookback_days=90 reads 6.4 times the days of the default 14); one set by hand
    # is held to the same limit and refused by name when it is over.
    days = values.get("lookback_days", LOOKBACK_DAYS)
    for key, size, default in (
        ("storage_shard_volumes", STORAGE, STORAGE_SHARD_VOLUMES),
        ("training_shard_jobs", TRAINING, TRAINING_SHARD_JOBS),
    ):
        # (a lookback of no days is refused below, by name, not as a shard of no time)
        if key not in values and isinstance(days, int) and days > 0:
            values[key] = min(default, size.most_items(days))
    return Settings(**values)
