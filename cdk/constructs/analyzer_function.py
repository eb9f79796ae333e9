"""A scheduled analyzer Lambda: its code, its least-privilege role, its logs with retention,
its schedule, and a failure destination that keeps what a failed run was asked to do."""

from collections.abc import Sequence

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Validations
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from cdk.constructs.checkov import (
    FUNCTION_REASONS,
    LOG_GROUP_REASONS,
    ON_FAILURE_REASON,
    SSE_SQS_REASONS,
    skip_checks,
)
from cdk.constructs.lambda_code import lambda_code
from cdk.constructs.sdk_layer import sdk_layer
from lambdas.shared.config import FunctionConfig

#: The field of a function's configuration that names its failure queue, which this construct
#: creates and fills in (lambdas/shared/publisher.py keeps there the findings S3 refuses).
FAILURE_QUEUE_FIELD = "failure_queue_url"


class AnalyzerFunction(Construct):
    """Attributes: ``function``, ``config`` (its environment, declared by its handler),
    ``role``, ``failures`` (queue), ``schedule`` (rule, or None without a schedule)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        description: str,
        handler: str,
        config: FunctionConfig,
        statements: Sequence[iam.PolicyStatement],
        schedule: str | None,
        memory_mb: int,
        timeout: Duration,
    ) -> None:
        super().__init__(scope, construct_id)
        logs_group = logs.LogGroup(
            self,
            "Logs",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=description,
        )
        logs_group.grant_write(self.role)
        for statement in statements:
            self.role.add_to_policy(statement)
        self.failures = sqs.Queue(
            self,
            "Failures",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        Validations.of(self.failures).acknowledge(
            Acknowledgment(
                id="AwsSolutions-SQS3",
                reason="this queue is the function's on-failure destination: the end of the "
                "line for failed runs, read by a person",
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="KeepFindingsOnFailure",
                actions=["sqs:SendMessage"],
                resources=[self.failures.queue_arn],
            )
        )
        # Findings that S3 refuses go to the failure queue rather than being lost, where the
        # function publishes findings (its configuration declares the queue).
        if FAILURE_QUEUE_FIELD in config.variables():
            config = config.replaced(**{FAILURE_QUEUE_FIELD: self.failures.queue_url})
        #: What the function reads from its environment, as its handler declares it.
        self.config = config
        self.function = lambda_.Function(
            self,
            "Function",
            description=description,
            runtime=lambda_.Runtime.PYTHON_3_14,
            handler=handler,
            code=lambda_code(handler),
            layers=[sdk_layer(self)],
            role=self.role,
            timeout=timeout,
            memory_size=memory_mb,
            log_group=logs_group,
            environment=self.config.environment(),
            retry_attempts=2,
            on_failure=destinations.SqsDestination(self.failures),
        )
        skip_checks(self.function, {**FUNCTION_REASONS, **ON_FAILURE_REASON})
        skip_checks(logs_group, LOG_GROUP_REASONS)
        skip_checks(self.failures, SSE_SQS_REASONS)
        #: None where something else starts the function (the fleet state machine).
        self.schedule: events.Rule | None = None
        if schedule is None:
            return
        self.schedule = events.Rule(
            self,
            "Schedule",
            description=f"Runs: {description}",
            schedule=events.Schedule.expression(schedule),
            targets=[targets.LambdaFunction(self.function, retry_attempts=2)],
        )
