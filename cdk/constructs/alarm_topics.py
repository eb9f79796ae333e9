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

A topic the settings name (``critical_topic_arn``, ``warning_topic_arn``) is imported instead:
its policies and subscriptions are its owner's, so the app adds none, and the notifier's role
is granted the topic and, where it is encrypted with a customer managed key, that key
(:attr:`AlarmTopics.publish_key_arns`).
"""

from aws_cdk import Annotations, ArnFormat, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from gpu_insights_agent.contract.resource_names import topic_display_name, topic_name


class AlarmTopics(Construct):
    """Attributes: ``key`` (None when both topics are imported), ``critical``, ``warning``,
    ``publish_key_arns`` (the keys a publisher to either topic must be allowed to use)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_name: str,
        critical_emails: tuple[str, ...],
        critical_https: tuple[str, ...],
        warning_emails: tuple[str, ...],
        existing: dict[str, tuple[str, str | None]] | None = None,
    ) -> None:
        """``existing``: purpose (``critical``, ``warning``) to the ARN of a topic to use and
        its customer managed key's ARN (None for an unencrypted or AWS managed key topic)."""
        super().__init__(scope, construct_id)
        existing = existing or {}
        self.key: kms.Key | None = None
        if len(existing) < 2:
            self.key = kms.Key(
                self,
                "Key",
                description=f"EKS GPU Insights alarm topics for {cluster_name}",
                enable_key_rotation=True,
                removal_policy=RemovalPolicy.RETAIN,
            )
        self.publish_key_arns = [self.key.key_arn] if self.key else []
        self.publish_key_arns += [key for _, key in existing.values() if key]
        self.critical = self._topic("Critical", cluster_name, "critical", existing)
        self.warning = self._topic("Warning", cluster_name, "warning", existing)
        for email in critical_emails:
            self.critical.add_subscription(subscriptions.EmailSubscription(email))
        for url in critical_https:
            self.critical.add_subscription(subscriptions.UrlSubscription(url))
        for email in warning_emails:
            self.warning.add_subscription(subscriptions.EmailSubscription(email))

    def _topic(
        self,
        construct_id: str,
        cluster_name: str,
        purpose: str,
        existing: dict[str, tuple[str, str | None]],
    ) -> sns.ITopic:
        if purpose in existing:
            return sns.Topic.from_topic_arn(self, construct_id, existing[purpose][0])
        return sns.Topic(
            self,
            construct_id,
            topic_name=topic_name(cluster_name, purpose),
            display_name=topic_display_name(cluster_name, purpose),
            master_key=self.key,
            enforce_ssl=True,
        )

    def allow_alarm(self, topic: sns.ITopic, *alarm_names: str) -> None:
        """Let these alarms of this account publish to the topic (their alarm action). On an
        imported topic the owner's policies decide: synth says what they must allow."""
        stack = Stack.of(self)
        if self.key is None or not isinstance(topic, sns.Topic):
            Annotations.of(self).add_warning_v2(
                "gpu-insights:imported-topic-alarm",
                f"The alarms {', '.join(alarm_names)} publish to {topic.topic_arn}: that "
                "topic's policy "
                "must allow cloudwatch.amazonaws.com sns:Publish for it, and a customer "
                "managed key's policy kms:GenerateDataKey and kms:Decrypt "
                "(https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html)",
            )
            return
        conditions = {
            "StringEquals": {"aws:SourceAccount": stack.account},
            "ArnLike": {
                "aws:SourceArn": [
                    stack.format_arn(
                        service="cloudwatch",
                        resource="alarm",
                        resource_name=name,
                        arn_format=ArnFormat.COLON_RESOURCE_NAME,
                    )
                    for name in alarm_names
                ]
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
        # statement of AWS's example), for this account's alarms only: aws:SourceAccount
        # against the confused deputy, as for any service principal in a key policy
        # (https://docs.aws.amazon.com/kms/latest/developerguide/key-policy-services.html;
        # https://docs.aws.amazon.com/IAM/latest/UserGuide/confused-deputy.html).
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=["*"],
                conditions={"StringEquals": {"aws:SourceAccount": stack.account}},
            )
        )
