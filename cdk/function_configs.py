"""Each function's configuration from the deployment's settings: the one builder its construct
and the demo both call, so what a handler reads is what the settings say, in the template and
in the demo alike. The declarations (names, types, defaults) are the functions' own
(``lambdas/<function>/config.py``); the names of resources are the caller's (CloudFormation
references at synth, moto's names in the demo)."""

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from cdk.alarms.catalog import deployed_alarms, is_promql
from cdk.alarms.model import AlarmSpec, Severity
from cdk.node_config.manifest import REQUIRED_NODE_EXPRESSIONS
from cdk.settings import Settings
from gpu_insights_agent.contract.metrics import container_insights_log_group_prefix
from gpu_insights_agent.contract.resource_names import dashboard_name
from lambdas.notifier.config import NotifierConfig
from lambdas.notifier.notification import Severity as NotifiedSeverity
from lambdas.shared.console_links import NODE_DASHBOARD
from lambdas.silence_check.config import SilenceCheckConfig, lookback_for
from lambdas.storage_analyzer.aws import VolumeScope
from lambdas.storage_analyzer.config import StorageConfig
from lambdas.training_analyzer.config import TrainingConfig
from lambdas.weekly_report.config import ReportConfig

#: The dashboard a notification links to, with the node picked in its NodeName variable.
GPU_DASHBOARD = NODE_DASHBOARD
#: Kubernetes' ``kubernetes.io/arch`` values as EC2's ``Architecture`` names them.
EC2_ARCHITECTURE = {"amd64": "x86_64", "arm64": "arm64"}


def storage_config(
    settings: Settings, *, report_bucket: str, failure_queue_url: str | None = None
) -> StorageConfig:
    return StorageConfig(
        cluster_name=settings.cluster_name,
        report_bucket=report_bucket,
        volume_scope=VolumeScope(settings.storage_volume_scope),
        buckets=settings.storage_buckets,
        lookback_days=settings.lookback_days,
        shard_volumes=settings.storage_shard_volumes,
        failure_queue_url=failure_queue_url,
    )


def training_config(
    settings: Settings, *, report_bucket: str, failure_queue_url: str | None = None
) -> TrainingConfig:
    return TrainingConfig(
        cluster_name=settings.cluster_name,
        report_bucket=report_bucket,
        lookback_days=settings.lookback_days,
        gpu_hour_usd=settings.gpu_hour_usd,
        low_power_percent=settings.low_power_percent,
        memory_near_capacity_percent=settings.gpu_memory_near_capacity_percent,
        memory_headroom_percent=settings.gpu_memory_headroom_percent,
        data_sources=settings.training_data_sources,
        shard_jobs=settings.training_shard_jobs,
        failure_log_jobs=settings.failure_log_jobs,
        container_insights_mode=settings.container_insights_mode,
        exporter_sink=settings.exporter_sink,
        failure_queue_url=failure_queue_url,
    )


def report_config(settings: Settings, *, report_bucket: str, topic_arn: str) -> ReportConfig:
    specs = deployed_alarms(settings.alarm_settings())
    return ReportConfig(
        cluster_name=settings.cluster_name,
        report_bucket=report_bucket,
        topic_arn=topic_arn,
        gpu_hour_usd=settings.gpu_hour_usd,
        exporter_interval_seconds=settings.exporter_interval_seconds,
        exporter_sink=settings.exporter_sink,
        alarm_kind_names=tuple(sorted({s.kind_name(settings.cluster_name) for s in specs})),
        alarm_shards=_shards(settings.cluster_name, specs) or None,
    )


def _shards(cluster: str, specs: Sequence[AlarmSpec]) -> dict[str, int]:
    """Each sharded kind's name and how many shard alarms it has (the rest are one alarm
    named as their kind)."""
    shards: dict[str, int] = defaultdict(int)
    for spec in specs:
        if spec.alarm_name(cluster) != spec.kind_name(cluster):
            shards[spec.kind_name(cluster)] += 1
    return dict(shards)


def notifier_config(
    settings: Settings,
    *,
    region: str,
    critical_topic_arn: str,
    warning_topic_arn: str,
    sent_table: str,
    exporter_log_group: str,
) -> NotifierConfig:
    specs = deployed_alarms(settings.alarm_settings())
    return NotifierConfig(
        cluster_name=settings.cluster_name,
        region=region,
        critical_topic_arn=critical_topic_arn,
        warning_topic_arn=warning_topic_arn,
        sent_table=sent_table,
        gpu_dashboard=dashboard_name(settings.cluster_name, GPU_DASHBOARD),
        exporter_log_group=exporter_log_group,
        # The kinds only: the notifier derives each fleet count alarm's from its kind's
        # (lambdas/notifier/config.py ``with_cap_kinds``), or the list would pass Lambda's 4 KB.
        alarm_kinds={s.alarm_kind: (_severity(s.severity), s.title) for s in specs if not s.counts},
        promql_alarm_kinds=tuple(
            sorted({s.alarm_kind for s in specs if is_promql(s) and not s.counts})
        )
        or None,
        webhook_url_parameter=settings.webhook_url_parameter,
        host_log_group=f"{container_insights_log_group_prefix(settings.cluster_name)}/host",
        require_kernel_confirmation=settings.xid_require_kernel_confirmation,
    )


def silence_config(settings: Settings) -> SilenceCheckConfig:
    """The silence check reads ``MISSED_CYCLES`` of the exporter's cycles back, on the
    instances the exporter's DaemonSet may run on."""
    return SilenceCheckConfig(
        cluster_name=settings.cluster_name,
        lookback_s=lookback_for(settings.exporter_interval_seconds),
        architectures=exporter_architectures(REQUIRED_NODE_EXPRESSIONS),
    )


def exporter_architectures(expressions: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The EC2 architectures of the nodes the exporter's DaemonSet may run on (its required
    ``kubernetes.io/arch`` expression): the nodes the silence check expects to report."""
    for expression in expressions:
        if expression["key"] == "kubernetes.io/arch" and expression["operator"] == "In":
            return tuple(EC2_ARCHITECTURE[value] for value in expression["values"])
    return tuple(EC2_ARCHITECTURE.values())


def _severity(severity: Severity) -> NotifiedSeverity:
    return "critical" if severity is Severity.CRITICAL else "warning"
