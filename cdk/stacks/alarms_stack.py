"""Alarms and their delivery: topics, GPU alarms, the fleet composite, the XID notifier."""

from aws_cdk import CfnOutput
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_logs as logs
from constructs import Construct

from cdk.alarms.annotations import alarm_lines, control_plane_lines, serving_targets
from cdk.alarms.catalog import deployed_alarms
from cdk.constructs.agent_log_group import AgentLogGroup
from cdk.constructs.alarm_topics import AlarmTopics
from cdk.constructs.gpu_alarms import GpuAlarms
from cdk.constructs.notifier import Notifier
from cdk.constructs.silence_check import SilenceCheck
from cdk.function_configs import notifier_config, silence_config
from cdk.outputs import ALARMS, CRITICAL_TOPIC_ARN, WARNING_TOPIC_ARN
from cdk.settings import Settings
from cdk.stacks.deployment_stack import DeploymentStack
from dashboards.bodies import all_dashboards, encode
from gpu_insights_agent.contract.metrics import (
    HOST_LOG_XID_METRIC,
    container_insights_log_group_prefix,
    exporter_log_group,
    host_log_namespace,
)
from gpu_insights_agent.contract.xid import KERNEL_XID_FILTER_PATTERN


class AlarmsStack(DeploymentStack):
    """Attributes: ``topics``, ``alarms``, ``notifier``, ``exporter_logs``, ``silence`` (the
    silence check, None without the exporter or where its sink is OTLP in OTel mode)."""

    part = ALARMS

    def __init__(self, scope: Construct, construct_id: str, *, settings: Settings) -> None:
        super().__init__(
            scope,
            construct_id,
            settings=settings,
            description=f"GPU alarms and XID notifications for {settings.cluster_name}",
        )
        cluster = settings.cluster_name
        self.topics = AlarmTopics(
            self,
            "Topics",
            cluster_name=cluster,
            critical_emails=settings.alarm_emails,
            critical_https=settings.alarm_https_endpoints,
            warning_emails=settings.warning_emails,
            existing={
                purpose: (arn, settings.topic_kms_key_arn(purpose))
                for purpose in ("critical", "warning")
                if (arn := settings.topic_arn(purpose))
            },
        )
        # The agent writes the exporter's EMF here and may have created the group already;
        # made here (idempotently, with a retention) so that the XID subscription has it.
        self.exporter_logs = AgentLogGroup(
            self, "ExporterLogs", log_group_name=exporter_log_group(cluster), retention_days=30
        )
        alarm_settings = settings.alarm_settings()
        host_logs = None
        if alarm_settings.host_logs:
            host_logs = logs.LogGroup.from_log_group_name(
                self, "HostLogs", f"{container_insights_log_group_prefix(cluster)}/host"
            )
            logs.MetricFilter(
                self,
                "KernelXidLines",
                log_group=host_logs,
                filter_pattern=logs.FilterPattern.literal(KERNEL_XID_FILTER_PATTERN),
                metric_namespace=host_log_namespace(cluster),
                metric_name=HOST_LOG_XID_METRIC,
                metric_value="1",
            )
        specs = deployed_alarms(alarm_settings)
        #: What reads the exporter's silence from outside the node (lambdas/silence_check):
        #: none where gpu-silent is a PromQL alarm on Kube State Metrics' GPU capacity.
        self.silence: SilenceCheck | None = None
        if alarm_settings.silence_check:
            self.silence = SilenceCheck(self, "SilenceCheck", config=silence_config(settings))
        self.alarms = GpuAlarms(
            self,
            "GpuAlarms",
            cluster_name=cluster,
            specs=specs,
        )
        # The construct id predates the name: it stays, so that the ledger table and the dead
        # letters keep their logical IDs (a new ID would replace the table and drop the queue).
        self.notifier = Notifier(
            self,
            "XidNotifier",
            config=lambda sent_table: notifier_config(
                settings,
                region=self.region,
                critical_topic_arn=self.topics.critical.topic_arn,
                warning_topic_arn=self.topics.warning.topic_arn,
                sent_table=sent_table,
                exporter_log_group=self.exporter_logs.log_group.log_group_name,
            ),
            exporter_log_group=self.exporter_logs.log_group,
            host_log_group=host_logs,
            critical=self.topics.critical,
            warning=self.topics.warning,
            topic_key_arns=self.topics.publish_key_arns,
            alarm_kind_names=sorted({spec.kind_name(cluster) for spec in specs}),
        )
        self.topics.allow_alarm(
            self.topics.critical, self.notifier.failing_name, self.notifier.refused_name
        )
        for subscription in self.notifier.subscriptions[:1]:
            subscription.node.add_dependency(self.exporter_logs.ready)
        alarm_arns = [alarm.attr_arn for alarm in self.alarms.alarms.values()]
        self.dashboards = [
            cloudwatch.CfnDashboard(
                self, f"Dashboard{i}", dashboard_name=name, dashboard_body=encode(body)
            )
            for i, (name, body) in enumerate(
                all_dashboards(
                    cluster,
                    list(settings.storage_buckets),
                    alarm_arns,
                    self.region,
                    exporter_interval_s=settings.exporter_interval_seconds,
                    alarm_lines=alarm_lines(specs),
                    mode=settings.container_insights_mode,
                    exporter_sink=settings.exporter_sink,
                    cluster_lines=control_plane_lines(specs),
                    serving_targets=serving_targets(
                        alarm_settings.serving if alarm_settings.promql else None
                    ),
                    etcd_limit_gib=settings.etcd_limit_gib,
                    gpu_pending_minutes=(
                        alarm_settings.cluster.pending_minutes
                        if alarm_settings.promql and alarm_settings.cluster is not None
                        else None
                    ),
                ).items()
            )
        ]
        CfnOutput(
            self,
            CRITICAL_TOPIC_ARN,
            description="Where pages go: subscribe the on-call's email, pager or chat here",
            value=self.topics.critical.topic_arn,
        )
        CfnOutput(
            self,
            WARNING_TOPIC_ARN,
            description="Where warnings go (a digest to read, not a page)",
            value=self.topics.warning.topic_arn,
        )
