"""Where alarms go: a critical topic (pages) and a warning topic (a digest), both encrypted
with a customer managed key that CloudWatch may use, and refusing non-TLS access.

A topic policy replaces the default one SNS gives a topic, so a policy holding only the TLS
Deny leaves CloudWatch no Allow and every alarm action fails. Each topic's policy allows
cloudwatch.amazonaws.com to publish for this account's alarms only: aws:SourceAccount and
aws:SourceArn guard against the confused deputy, as in AWS's example for alarms
(https://docs.aws.amazon.com/sns/latest/dg/sns-access-policy-use-cases.html). The key policy
lets CloudWatch encrypt for the topics
(https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html#compatibility-with-aws-services).
"""

from aws_cdk import ArnFormat, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from contract.resource_names import topic_display_name, topic_name


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
        # CloudWatch publishes alarm notifications to the encrypted topics with this key.
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=["*"],
            )
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
        stack = Stack.of(self)
        topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[topic.topic_arn],
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {
                        "aws:SourceArn": stack.format_arn(
                            service="cloudwatch",
                            resource="alarm",
                            resource_name="*",
                            arn_format=ArnFormat.COLON_RESOURCE_NAME,
                        )
                    },
                },
            )
        )
        return topic
