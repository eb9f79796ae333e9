"""Container Insights with GPU metrics: the ``amazon-cloudwatch-observability`` EKS add-on."""

from aws_cdk import aws_eks as eks
from constructs import Construct

from cdk.constructs.addon_configuration import ObservabilityAddonConfiguration
from cdk.constructs.agent_identity import CloudWatchAgentIdentity

ADDON_NAME = "amazon-cloudwatch-observability"


class ContainerInsightsAddon(Construct):
    """Installs the add-on with the given configuration and the agent's credentials.

    The Pod Identity association (or IRSA role) is created first and the add-on depends on it
    explicitly, so the agent never starts without credentials.
    Attributes: ``identity``, ``addon``.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        configuration: ObservabilityAddonConfiguration,
        addon_version: str | None = None,
        oidc_provider_arn: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        cluster_name = configuration.cluster_name
        self.identity = CloudWatchAgentIdentity(
            self, "AgentIdentity", cluster_name=cluster_name, oidc_provider_arn=oidc_provider_arn
        )
        self.addon = eks.CfnAddon(
            self,
            "Addon",
            addon_name=ADDON_NAME,
            cluster_name=cluster_name,
            addon_version=addon_version,
            configuration_values=configuration.to_json(),
            # Our values must win over edits made by hand, or the GPU metrics could be lost.
            resolve_conflicts="OVERWRITE",
            service_account_role_arn=(
                self.identity.role.role_arn if oidc_provider_arn is not None else None
            ),
        )
        self.addon.node.add_dependency(
            self.identity.association
            if self.identity.association is not None
            else self.identity.role
        )
