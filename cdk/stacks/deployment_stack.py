"""What every stack of a deployment shares: its account and region from the settings."""

from aws_cdk import Environment, Stack
from constructs import Construct

from cdk.settings import Settings


class DeploymentStack(Stack):
    def __init__(
        self, scope: Construct, construct_id: str, *, settings: Settings, description: str
    ) -> None:
        if settings.is_example:
            description += " (documented example; set -c cluster_name=... to deploy)"
        super().__init__(
            scope,
            construct_id,
            description=f"EKS GPU Insights: {description}",
            env=Environment(account=settings.account, region=settings.region),
        )
