"""The IAM role that the add-on's CloudWatch agent and Fluent Bit use, and how pods get it.

The permissions are the part of AWS's CloudWatchAgentServerPolicy that Container Insights
uses, with log actions scoped to this cluster's Container Insights log groups instead of
every log group in the account. SSM parameter reads and X-Ray are left out: the add-on takes
its configuration from the add-on values, not from SSM, and this project turns on no tracing.
"""

from typing import Final

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from cdk.constructs.nag import acknowledge_wildcard_resources
from gpu_insights_agent.contract.metrics import (
    AGENT_NAMESPACE,
    AGENT_SERVICE_ACCOUNT,
    NAMESPACE_CONTAINER_INSIGHTS,
    container_insights_log_group_prefix,
    exporter_log_group,
    training_log_group,
)

POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"
#: The namespaces the agent may PutMetricData to: Container Insights' ("Container Insights
#: ... metrics ... in the ContainerInsights namespace", Amazon CloudWatch User Guide, "Amazon
#: EKS and Kubernetes Container Insights metrics",
#: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Container-Insights-metrics-EKS.html).
#: The exporter's and the training emitter's EMF documents go through the agent's logs path
#: (PutLogEvents to their log groups, ``logs.metrics_collected.emf``): CloudWatch Logs extracts
#: their metrics, no PutMetricData of this role. ``cloudwatch:namespace`` is PutMetricData's one
#: condition key (Service Authorization Reference, Amazon CloudWatch); IfExists, because a
#: request that names no namespace (the OTLP metrics endpoint of OTel mode) carries no key to
#: compare, while every PutMetricData call must name one (its Namespace is required), so the
#: condition still holds every PutMetricData call to this list.
AGENT_METRIC_NAMESPACES: Final = (NAMESPACE_CONTAINER_INSIGHTS,)


def log_group_arns(stack: Stack, cluster_name: str) -> list[str]:
    """This cluster's Container Insights log groups, the exporter's and the training
    scripts', and their streams."""
    arns = []
    for name in (
        f"{container_insights_log_group_prefix(cluster_name)}/*",
        exporter_log_group(cluster_name),
        training_log_group(cluster_name),
    ):
        group = stack.format_arn(
            service="logs",
            resource="log-group",
            resource_name=name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        arns += [group, f"{group}:*"]
    return arns


def agent_policy_statements(stack: Stack, cluster_name: str) -> list[iam.PolicyStatement]:
    """What the agent and Fluent Bit call: metrics, their log groups, and volume/tag lookups."""
    return [
        iam.PolicyStatement(
            sid="PublishMetrics",
            actions=["cloudwatch:PutMetricData"],
            resources=["*"],
            conditions={
                "StringEqualsIfExists": {"cloudwatch:namespace": list(AGENT_METRIC_NAMESPACES)}
            },
        ),
        iam.PolicyStatement(
            sid="WriteContainerInsightsLogs",
            actions=[
                "logs:CreateLogGroup",
                "logs:CreateLogStream",
                "logs:PutLogEvents",
                "logs:PutRetentionPolicy",
                "logs:DescribeLogStreams",
            ],
            resources=log_group_arns(stack, cluster_name),
        ),
        iam.PolicyStatement(
            sid="DescribeNodeContext",
            actions=["logs:DescribeLogGroups", "ec2:DescribeVolumes", "ec2:DescribeTags"],
            resources=["*"],
        ),
    ]


class CloudWatchAgentIdentity(Construct):
    """A role for the ``cloudwatch-agent`` service account, trusted through EKS Pod Identity
    (with its association) or through IRSA (the cluster's OIDC provider).

    Attributes: ``role``; ``association`` (None with IRSA, where the add-on itself takes the
    role ARN).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_name: str,
        oidc_provider_arn: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        if oidc_provider_arn is None:
            principal: iam.IPrincipal = iam.ServicePrincipal(
                POD_IDENTITY_PRINCIPAL
            ).with_session_tags()
        else:
            issuer = oidc_provider_arn.split(":oidc-provider/", 1)[1]
            principal = iam.OpenIdConnectPrincipal(
                iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(
                    self, "OidcProvider", oidc_provider_arn
                ),
                conditions={
                    "StringEquals": {
                        f"{issuer}:sub": (
                            f"system:serviceaccount:{AGENT_NAMESPACE}:{AGENT_SERVICE_ACCOUNT}"
                        ),
                        f"{issuer}:aud": "sts.amazonaws.com",
                    }
                },
            )
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=principal,
            description=f"CloudWatch agent and Fluent Bit of Container Insights on {cluster_name}",
            inline_policies={
                "ContainerInsights": iam.PolicyDocument(
                    statements=agent_policy_statements(stack, cluster_name)
                )
            },
        )
        acknowledge_wildcard_resources(
            self.role,
            resources=["*"],
            reason="cloudwatch:PutMetricData, logs:DescribeLogGroups, ec2:DescribeVolumes and "
            "ec2:DescribeTags support no resource-level permissions",
        )
        acknowledge_wildcard_resources(
            self.role,
            resources=log_group_arns(stack, cluster_name),
            reason="Container Insights writes one log group per kind (performance, application, "
            "host, dataplane) under this cluster's prefix, and one stream per node",
        )
        self.association: eks.CfnPodIdentityAssociation | None = None
        if oidc_provider_arn is None:
            self.association = eks.CfnPodIdentityAssociation(
                self,
                "PodIdentityAssociation",
                cluster_name=cluster_name,
                namespace=AGENT_NAMESPACE,
                service_account=AGENT_SERVICE_ACCOUNT,
                role_arn=self.role.role_arn,
            )
