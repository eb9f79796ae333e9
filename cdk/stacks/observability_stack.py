"""Container Insights with GPU metrics for one EKS cluster, and the EC2 GPU agent config."""

from aws_cdk import CfnOutput
from constructs import Construct

from cdk.constructs.addon_configuration import ObservabilityAddonConfiguration
from cdk.constructs.agent_config_parameter import AgentConfigParameter
from cdk.constructs.container_insights import ContainerInsightsAddon
from cdk.constructs.gpu_exporter import GpuExporter, KubectlNetwork
from cdk.node_config.cloudwatch_agent_config import gpu_node_agent_config
from cdk.outputs import AGENT_CONFIG_FETCH_COMMAND, OBSERVABILITY
from cdk.settings import AgentCredentials, Settings
from cdk.stacks.deployment_stack import DeploymentStack


class ObservabilityStack(DeploymentStack):
    """Attributes: ``addon`` (None when the add-on is managed elsewhere), ``agent_config``."""

    part = OBSERVABILITY

    def __init__(self, scope: Construct, construct_id: str, *, settings: Settings) -> None:
        super().__init__(
            scope,
            construct_id,
            settings=settings,
            description=f"Container Insights with GPU metrics for {settings.cluster_name}",
        )
        self.addon: ContainerInsightsAddon | None = None
        if settings.install_addon:
            self.addon = ContainerInsightsAddon(
                self,
                "ContainerInsights",
                configuration=ObservabilityAddonConfiguration.for_gpu_cluster(
                    cluster_name=settings.cluster_name,
                    container_logs=settings.container_logs,
                    tolerate_all_taints=settings.tolerate_all_taints,
                    gpu_taint_keys=settings.gpu_taint_keys,
                    mode=settings.container_insights_mode,
                    serving_metrics=settings.serving_metrics,
                ),
                addon_version=settings.addon_version,
                oidc_provider_arn=(
                    settings.oidc_provider_arn
                    if settings.agent_credentials is AgentCredentials.IRSA
                    else None
                ),
            )
        self.agent_config = AgentConfigParameter(
            self,
            "GpuAgentConfig",
            parameter_name=settings.agent_config_parameter_name,
            config=gpu_node_agent_config(interval_seconds=settings.agent_interval_seconds),
        )
        self.exporter: GpuExporter | None = None
        if settings.exporter_enabled:
            self.exporter = GpuExporter(
                self,
                "GpuExporter",
                cluster_name=settings.cluster_name,
                interval_s=settings.exporter_interval_seconds,
                alarm_shards=settings.alarm_shards,
                gpu_node_labels=settings.gpu_node_labels,
                gpu_taint_keys=settings.gpu_taint_keys,
                tolerate_all_taints=settings.tolerate_all_taints,
                pod_attribution=settings.exporter_pod_attribution,
                sink=settings.exporter_sink,
                kubectl_role_arn=settings.kubectl_role_arn,
                kubectl_network=(
                    KubectlNetwork(
                        vpc_id=settings.kubectl_vpc_id,
                        subnet_ids=settings.kubectl_subnet_ids,
                        security_group_id=settings.kubectl_security_group_id,
                    )
                    if settings.kubectl_vpc_id and settings.kubectl_security_group_id
                    else None
                ),
            )
            if self.addon is not None and self.exporter.manifest is not None:
                # The exporter sends to the agent's EMF listener, which the add-on opens.
                self.exporter.manifest.node.add_dependency(self.addon.addon)
        CfnOutput(
            self,
            AGENT_CONFIG_FETCH_COMMAND,
            description="Run on an EC2 GPU node to load the GPU agent configuration",
            value=(
                "amazon-cloudwatch-agent-ctl -a fetch-config -m ec2 -s "
                f"-c ssm:{settings.agent_config_parameter_name}"
            ),
        )
