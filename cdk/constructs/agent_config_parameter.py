"""The CloudWatch agent configuration for EC2 GPU nodes, in SSM Parameter Store."""

import json
from typing import Any

from aws_cdk import aws_ssm as ssm
from constructs import Construct


class AgentConfigParameter(Construct):
    """Stores an agent configuration where ``amazon-cloudwatch-agent-ctl -a fetch-config
    -c ssm:NAME`` finds it. Attribute: ``parameter``."""

    def __init__(
        self, scope: Construct, construct_id: str, *, parameter_name: str, config: dict[str, Any]
    ) -> None:
        super().__init__(scope, construct_id)
        self.parameter = ssm.StringParameter(
            self,
            "Parameter",
            parameter_name=parameter_name,
            description="CloudWatch agent configuration for NVIDIA GPU nodes (EKS GPU Insights)",
            string_value=json.dumps(config, sort_keys=True),
            tier=ssm.ParameterTier.STANDARD,
        )
