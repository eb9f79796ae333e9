"""What every stack of a deployment shares: its account and region from the settings."""

from typing import ClassVar

from aws_cdk import Environment, Stack
from constructs import Construct

from cdk.settings import Settings
from gpu_insights_agent.contract.resource_names import stack_name


class DeploymentStack(Stack):
    #: What the stack holds; the last part of its name, such as ``Alarms``.
    part: ClassVar[str]

    def __init__(
        self, scope: Construct, construct_id: str, *, settings: Settings, description: str
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            stack_name=stack_name(settings.cluster_name, self.part),
            description=f"EKS GPU Insights: {description}",
            env=Environment(account=settings.account, region=settings.region),
        )
