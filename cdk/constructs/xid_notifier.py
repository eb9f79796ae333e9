"""The XID notifier: log subscriptions on the exporter's log group (and, if asked, the host
log group) feed a Lambda that sends one readable message per XID to the right topic."""

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_logs_destinations as destinations
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from agent.metric_contract import DIM_XID_CODE
from agent.xid import KERNEL_XID_FILTER_PATTERN
from cdk.constructs.checkov import (
    FUNCTION_REASONS,
    LOG_GROUP_REASONS,
    SSE_SQS_REASONS,
    skip_checks,
)
from cdk.constructs.lambda_code import lambda_code

#: What the function imports: its own code, the shared client factory, and the XID table it
#: shares with the exporter.
MODULES = (
    "lambdas/xid_notifier/handler.py",
    "lambdas/xid_notifier/messages.py",
    "lambdas/shared/aws_clients.py",
    "lambdas/shared/events.py",
    "lambdas/shared/subscription.py",
    "agent/xid.py",
    "agent/metric_contract.py",
)


class XidNotifier(Construct):
    """Attributes: ``function``, ``dead_letters``, ``subscriptions``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_name: str,
        exporter_log_group: logs.ILogGroup,
        host_log_group: logs.ILogGroup | None,
        critical: sns.ITopic,
        warning: sns.ITopic,
        topic_key: kms.IKey,
    ) -> None:
        super().__init__(scope, construct_id)
        self.dead_letters = sqs.Queue(
            self,
            "DeadLetters",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        function_logs = logs.LogGroup(
            self,
            "Logs",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=RemovalPolicy.DESTROY,
        )
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"XID notifier of {cluster_name}: writes its logs, publishes to two topics",
        )
        function_logs.grant_write(role)
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=lambda_.Runtime.PYTHON_3_14,
            handler="lambdas.xid_notifier.handler.handler",
            code=lambda_code(MODULES),
            role=role,
            timeout=Duration.seconds(30),
            memory_size=256,
            log_group=function_logs,
            dead_letter_queue=self.dead_letters,
            retry_attempts=2,
            environment={
                "CLUSTER_NAME": cluster_name,
                "CRITICAL_TOPIC_ARN": critical.topic_arn,
                "WARNING_TOPIC_ARN": warning.topic_arn,
            },
        )
        skip_checks(self.function, FUNCTION_REASONS)
        skip_checks(function_logs, LOG_GROUP_REASONS)
        skip_checks(self.dead_letters, SSE_SQS_REASONS)
        # Listed, not granted through grant_publish: that would add kms:GenerateDataKey*.
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["sns:Publish"], resources=[critical.topic_arn, warning.topic_arn]
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["kms:GenerateDataKey", "kms:Decrypt"], resources=[topic_key.key_arn]
            )
        )
        self.subscriptions = [
            logs.SubscriptionFilter(
                self,
                "ExporterXids",
                log_group=exporter_log_group,
                destination=destinations.LambdaDestination(self.function),
                filter_pattern=logs.FilterPattern.exists(f"$.{DIM_XID_CODE}"),
            )
        ]
        if host_log_group is not None:
            self.subscriptions.append(
                logs.SubscriptionFilter(
                    self,
                    "KernelXids",
                    log_group=host_log_group,
                    destination=destinations.LambdaDestination(self.function),
                    filter_pattern=logs.FilterPattern.literal(KERNEL_XID_FILTER_PATTERN),
                )
            )
