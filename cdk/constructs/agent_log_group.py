"""A log group that the CloudWatch agent writes to, and that may already exist.

An ``AWS::Logs::LogGroup`` fails with "already exists" when the group is there, and these
groups often are: the agent creates a group on its first line (the add-on, or the exporter's
DaemonSet applied with kubectl_role_arn, may run before the stack that would create it), and
a retained group outlives ``cdk destroy``. CloudFormation has no "create unless it exists",
so a custom resource makes the group idempotently instead: CreateLogGroup with
ResourceAlreadyExistsException ignored, then PutRetentionPolicy, on create and on every
update (https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_CreateLogGroup.html
lists ResourceAlreadyExistsException; PutRetentionPolicy sets retention on any existing
group). Deleting the stack leaves the group and its data, as RETAIN did.
"""

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr
from constructs import Construct

from cdk.constructs.nag import (
    acknowledge_custom_resource_provider,
    acknowledge_wildcard_resources,
)


class AgentLogGroup(Construct):
    """Attributes: ``log_group`` (by name), ``ready`` (depend on it to need the group)."""

    def __init__(
        self, scope: Construct, construct_id: str, *, log_group_name: str, retention_days: int
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        arn = stack.format_arn(
            service="logs",
            resource="log-group",
            resource_name=log_group_name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        policy = cr.AwsCustomResourcePolicy.from_statements(
            [
                iam.PolicyStatement(
                    actions=["logs:CreateLogGroup", "logs:PutRetentionPolicy"],
                    resources=[arn, f"{arn}:*"],
                )
            ]
        )
        create = cr.AwsSdkCall(
            service="CloudWatchLogs",
            action="CreateLogGroup",
            parameters={"logGroupName": log_group_name},
            physical_resource_id=cr.PhysicalResourceId.of(log_group_name),
            ignore_error_codes_matching="ResourceAlreadyExistsException",
        )
        exists = cr.AwsCustomResource(
            self,
            "Exists",
            on_create=create,
            on_update=create,
            policy=policy,
            install_latest_aws_sdk=False,
        )
        retain = cr.AwsSdkCall(
            service="CloudWatchLogs",
            action="PutRetentionPolicy",
            parameters={"logGroupName": log_group_name, "retentionInDays": retention_days},
            physical_resource_id=cr.PhysicalResourceId.of(f"{log_group_name}/retention"),
        )
        self.ready = cr.AwsCustomResource(
            self,
            "Retention",
            on_create=retain,
            on_update=retain,
            policy=policy,
            install_latest_aws_sdk=False,
        )
        self.ready.node.add_dependency(exists)
        acknowledge_wildcard_resources(
            self,
            resources=[f"{arn}:*"],
            reason="CloudWatch Logs authorizes log-group actions on ARNs below the group's "
            "(log-group:NAME:log-stream:...); ':*' names this one group, no other",
        )
        self.log_group = logs.LogGroup.from_log_group_name(self, "Group", log_group_name)
        acknowledge_custom_resource_provider(stack)
