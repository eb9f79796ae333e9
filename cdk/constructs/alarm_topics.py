"""Where notifications go: a critical topic (pages) and a warning topic (a digest), both
encrypted with a customer managed key, and refusing non-TLS access.

The notifier publishes the GPU alarms' notifications (its role's identity policy; the key
policy's account statement delegates to IAM). CloudWatch publishes only for the alarms
:meth:`AlarmTopics.allow_alarm` names: the notifier's own failure alarm, which cannot go
through the notifier. A topic policy replaces the default one SNS gives a topic, so each such
alarm gets an Allow for cloudwatch.amazonaws.com on the topic, with aws:SourceAccount and
aws:SourceArn (that alarm's ARN) against the confused deputy, as in AWS's example for alarms
(https://docs.aws.amazon.com/sns/latest/dg/sns-access-policy-use-cases.html), and the key
policy lets CloudWatch encrypt for it
(https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html#compatibility-with-aws-services).
"""

from aws_cdk import ArnFormat, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from gpu_insights_agent.contract.resource_names import topic_display_name, topic_name


class AlarmTopics(Construct):
    """Attributes: ``key``, ``critical``, ``warning``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_name: str,
        critical_emails: tuple[str, ...],
        critical_https: tuple[str, ...],
        warning_emails: tuple[str, ...],
    ) -> None:
        super().__init__(scope, construct_id)
        self.key = kms.Key(
            self,
            "Key",
            description=f"EKS GPU Insights alarm topics for {cluster_name}",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.critical = self._topic("Critical", cluster_name, "critical")
        self.warning = self._topic("Warning", cluster_name, "warning")
        for email in critical_emails:
            self.critical.add_subscription(subscriptions.EmailSubscription(email))
        for url in critical_https:
            self.critical.add_subscription(subscriptions.UrlSubscription(url))
        for email in warning_emails:
            self.warning.add_subscription(subscriptions.EmailSubscription(email))

    def _topic(self, construct_id: str, cluster_name: str, purpose: str) -> sns.Topic:
        topic = sns.Topic(
            self,
            construct_id,
            topic_name=topic_name(cluster_name, purpose),
            display_name=topic_display_name(cluster_name, purpose),
            master_key=self.key,
            enforce_ssl=True,
        )
        return topic

    def allow_alarm(self, topic: sns.ITopic, alarm_name: str) -> None:
        """Let this one alarm of this account publish to the topic (its alarm action)."""
        stack = Stack.of(self)
        conditions = {
            "StringEquals": {"aws:SourceAccount": stack.account},
            "ArnLike": {
                "aws:SourceArn": stack.format_arn(
                    service="cloudwatch",
                    resource="alarm",
                    resource_name=alarm_name,
                    arn_format=ArnFormat.COLON_RESOURCE_NAME,
                )
            },
        }
        topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[topic.topic_arn],
                conditions=conditions,
            )
        )
        # CloudWatch encrypts the alarm's notification for the topic with this key (the
        # statement of AWS's example, which sets no condition).
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=["*"],
            )
        )
