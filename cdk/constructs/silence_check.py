"""The silence check: a Lambda function on a five-minute schedule that compares the cluster's
running GPU instances with the GPUs the exporter reported and publishes the silent ones
(lambdas/silence_check). Its alarms (``gpu-silent``, ``gpu-silence-check``) are in the alarm
catalog and built with the others (cdk/constructs/gpu_alarms.py).

A failed run is not retried: the next one, five minutes on, reads fresher data, and runs that
keep failing publish nothing, which is what ``gpu-silence-check`` pages on. So there is no
dead-letter queue either: a failed run leaves nothing to replay."""

from collections.abc import Mapping

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from cdk.constructs.checkov import FUNCTION_REASONS, LOG_GROUP_REASONS, skip_checks
from cdk.constructs.lambda_code import lambda_code
from cdk.constructs.nag import acknowledge_wildcard_resources
from cdk.constructs.sdk_layer import sdk_layer
from gpu_insights_agent.contract.metrics import NAMESPACE_GPU
from lambdas.silence_check.config import MEMORY_MB, SCHEDULE_MINUTES, SilenceCheckConfig

#: The function's entry point; its asset holds what this module imports.
HANDLER = "lambdas.silence_check.handler.handler"
NO_RETRY_REASONS: Mapping[str, str] = {
    "CKV_AWS_116": "a failed run is not retried and leaves nothing to keep: the next "
    "scheduled run reads fresher data, and runs that keep failing stop the heartbeat that "
    "the gpu-silence-check alarm pages on",
}


class SilenceCheck(Construct):
    """Attributes: ``function``, ``role``, ``schedule``."""

    def __init__(self, scope: Construct, construct_id: str, *, config: SilenceCheckConfig) -> None:
        super().__init__(scope, construct_id)
        function_logs = logs.LogGroup(
            self,
            "Logs",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=RemovalPolicy.DESTROY,
        )
        description = f"Silence check of {config.cluster_name}: GPUs that stop reporting"
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=description,
        )
        function_logs.grant_write(self.role)
        for statement in (
            iam.PolicyStatement(
                sid="ReadGpuInstances",
                actions=["ec2:DescribeInstances", "ec2:DescribeInstanceTypes"],
                resources=["*"],
            ),
            iam.PolicyStatement(
                sid="ReadExporterSeries",
                actions=["cloudwatch:ListMetrics", "cloudwatch:GetMetricData"],
                resources=["*"],
            ),
            iam.PolicyStatement(
                sid="PublishSilence",
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],
                conditions={"StringEquals": {"cloudwatch:namespace": NAMESPACE_GPU}},
            ),
        ):
            self.role.add_to_policy(statement)
        acknowledge_wildcard_resources(
            self.role,
            resources=["*"],
            reason="DescribeInstances, DescribeInstanceTypes, ListMetrics, GetMetricData and "
            "PutMetricData (limited to the GpuInsights namespace by condition) take no "
            "resource ARNs",
        )
        self.function = lambda_.Function(
            self,
            "Function",
            description=description,
            runtime=lambda_.Runtime.PYTHON_3_14,
            handler=HANDLER,
            code=lambda_code(HANDLER),
            layers=[sdk_layer(self)],
            role=self.role,
            timeout=Duration.minutes(2),
            memory_size=MEMORY_MB,
            log_group=function_logs,
            environment=config.environment(),
            retry_attempts=0,
        )
        skip_checks(self.function, {**FUNCTION_REASONS, **NO_RETRY_REASONS})
        skip_checks(function_logs, LOG_GROUP_REASONS)
        self.schedule = events.Rule(
            self,
            "Schedule",
            description=f"Runs: {description}",
            schedule=events.Schedule.rate(Duration.minutes(SCHEDULE_MINUTES)),
            targets=[targets.LambdaFunction(self.function, retry_attempts=0)],
        )
