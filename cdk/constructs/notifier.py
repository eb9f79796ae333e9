"""The notifier: log subscriptions on the exporter's log group (and, if asked, the host log
group) and an EventBridge rule on this app's alarm and contributor state changes feed one
Lambda that sends one readable message per incident to each channel (the right topic, and a
chat webhook where one is set), once per channel (a DynamoDB ledger of what was sent)."""

from collections.abc import Callable, Mapping, Sequence

from aws_cdk import ArnFormat, Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_logs_destinations as destinations
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from cdk.constructs.checkov import (
    FUNCTION_REASONS,
    LOG_GROUP_REASONS,
    SSE_SQS_REASONS,
    skip_checks,
)
from cdk.constructs.lambda_code import lambda_code
from cdk.constructs.nag import acknowledge_wildcard_resources
from cdk.constructs.sdk_layer import sdk_layer
from cdk.outputs import NOTIFIER_FAILING_ALARM_KEY, NOTIFIER_REFUSED_ALARM_KEY
from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_XID_CODE,
    NAMESPACE_GPU,
    NOTIFIER_REFUSED_METRIC,
    training_log_group,
)
from gpu_insights_agent.contract.resource_names import alarm_name
from gpu_insights_agent.contract.xid import KERNEL_XID_FILTER_PATTERN
from lambdas.notifier.config import FUNCTION_TIMEOUT_S, NotifierConfig
from lambdas.notifier.jobs import is_job_kind
from lambdas.shared.fail_slow import FAIL_SLOW_KIND, GOODPUT_LOW_KIND

#: CloudWatch's EventBridge events for an alarm's and a contributor's state
#: (https://docs.aws.amazon.com/eventbridge/latest/ref/events-ref-cloudwatch.html).
#: The function's entry point; its asset holds what this module imports.
HANDLER = "lambdas.notifier.handler.handler"
ALARM_DETAIL_TYPES = (
    "CloudWatch Alarm State Change",
    "CloudWatch Alarm Contributor State Change",
)
#: checkov: the ledger holds incident keys (cluster, node, GPU, code), no secrets.
LEDGER_REASONS: Mapping[str, str] = {
    "CKV_AWS_119": "holds which incidents were notified (names and times, no secrets); "
    "DynamoDB encrypts it at rest with an AWS owned key",
}


#: The notifier's own failure alarm: the one alarm with an SNS action (it cannot page through
#: the notifier that failed). Outside every alarm kind's name, so the rule does not take it.
FAILING_ALARM_KEY = NOTIFIER_FAILING_ALARM_KEY
REFUSED_ALARM_KEY = NOTIFIER_REFUSED_ALARM_KEY
#: EventBridge retries a failed delivery to the function this often within this age, then
#: sends the event to the dead-letter queue
#: (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-retry-policy.html).
RULE_RETRY_ATTEMPTS = 8
RULE_MAX_EVENT_AGE = Duration.hours(2)


def _shortest(prefixes: Sequence[str]) -> list[str]:
    """The prefixes no other one starts: they match the same names in a smaller pattern (a
    fleet count alarm's kind, ``gpu-lost-at-cap``, starts with its kind's ``gpu-lost``)."""
    unique = sorted(set(prefixes))
    return [p for p in unique if not any(p != q and p.startswith(q) for q in unique)]


class Notifier(Construct):
    """Attributes: ``function``, ``config`` (its environment, declared by its handler),
    ``dead_letters``, ``subscriptions``, ``sent``, ``alarm_rule``, ``failing`` (an alarm on
    the dead letters, with ``failing_name``), ``refused`` (an alarm on the refused log
    events, with ``refused_name``).

    ``config`` gives the function's configuration for the name of the sent ledger, which this
    construct creates (cdk/function_configs.py ``notifier_config``)."""

    def _log_group_arn(self, name: str) -> str:
        """A log group's ARN with ':*', the form FilterLogEvents is authorized on."""
        return Stack.of(self).format_arn(
            service="logs",
            resource="log-group",
            resource_name=f"{name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: Callable[[str], NotifierConfig],
        exporter_log_group: logs.ILogGroup,
        host_log_group: logs.ILogGroup | None,
        critical: sns.ITopic,
        warning: sns.ITopic,
        topic_key_arns: Sequence[str],
        alarm_kind_names: Sequence[str],
    ) -> None:
        super().__init__(scope, construct_id)
        self.sent = dynamodb.Table(
            self,
            "Sent",
            partition_key=dynamodb.Attribute(name="incident", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute="expires_at",
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=RemovalPolicy.DESTROY,
        )
        skip_checks(self.sent, LEDGER_REASONS)
        self.config = config(self.sent.table_name)
        cluster_name = self.config.cluster_name
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
            description=f"Notifier of {cluster_name}: logs, a sent ledger, two topics",
        )
        function_logs.grant_write(role)
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=lambda_.Runtime.PYTHON_3_14,
            handler=HANDLER,
            code=lambda_code(HANDLER),
            layers=[sdk_layer(self)],
            role=role,
            timeout=Duration.seconds(FUNCTION_TIMEOUT_S),
            memory_size=256,
            log_group=function_logs,
            dead_letter_queue=self.dead_letters,
            retry_attempts=2,
            environment=self.config.environment(),
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
        # Publishing to a topic encrypted with a customer managed key needs these on the key
        # (https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html, "Allow a user
        # to send messages to a topic with SSE": kms:GenerateDataKey* and kms:Decrypt).
        if topic_key_arns:
            role.add_to_policy(
                iam.PolicyStatement(
                    sid="EncryptForTopics",
                    actions=["kms:GenerateDataKey", "kms:Decrypt"],
                    resources=list(topic_key_arns),
                )
            )
        # Claim an incident (a conditional put; an XID's, also a conditional update of its
        # GPU's last page time) and release it when the publish fails.
        role.add_to_policy(
            iam.PolicyStatement(
                sid="SentLedger",
                actions=["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"],
                resources=[self.sent.table_arn],
            )
        )
        # The chat webhook's URL, where one is set: that one SecureString parameter (its aws/ssm
        # key decrypts for any principal of the account, lambdas/notifier/webhook.py).
        parameter = self.config.webhook_url_parameter
        if parameter:
            role.add_to_policy(
                iam.PolicyStatement(
                    sid="WebhookUrl",
                    actions=["ssm:GetParameter"],
                    resources=[
                        Stack.of(self).format_arn(
                            service="ssm",
                            resource="parameter",
                            resource_name=parameter.removeprefix("/"),
                        )
                    ],
                )
            )
        # Which pods hold the GPU an alarm names: the exporter's newest document for it.
        exporter_arn = self._log_group_arn(exporter_log_group.log_group_name)
        role.add_to_policy(
            iam.PolicyStatement(
                sid="PodsOnTheGpu", actions=["logs:FilterLogEvents"], resources=[exporter_arn]
            )
        )
        # Where a job an alarm names runs: its ranks' newest documents (pods, nodes, GPUs).
        training_arn = self._log_group_arn(training_log_group(cluster_name))
        role.add_to_policy(
            iam.PolicyStatement(
                sid="JobPlacement", actions=["logs:FilterLogEvents"], resources=[training_arn]
            )
        )
        # Where a PromQL job alarm's job runs (OTel mode): its ranks' series' labels, read with
        # CloudWatch's PromQL API, which needs "both of the following IAM actions:
        # cloudwatch:GetMetricData, cloudwatch:ListMetrics" ("QueryMetrics",
        # https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-PromQL-API-QueryMetrics.html);
        # neither has resource-level permissions.
        if any(is_job_kind(k) for k in self.config.promql_alarm_kinds or ()):
            role.add_to_policy(
                iam.PolicyStatement(
                    sid="JobPlacementPromQL",
                    actions=["cloudwatch:GetMetricData", "cloudwatch:ListMetrics"],
                    resources=["*"],
                )
            )
            acknowledge_wildcard_resources(
                role,
                resources=["*"],
                reason="GetMetricData and ListMetrics authorize only '*'; the PromQL API needs "
                "both to read the ranks of a job an alarm names",
            )
        # A Classic fail-slow page's culprit and goodput page's badput
        # (lambdas/notifier/fail_slow_classic.py): the job's nodes' GPU and CPU series and its
        # emitter series, found with ListMetrics and read with GetMetricData, neither of which
        # has resource-level permissions.
        elif {FAIL_SLOW_KIND, GOODPUT_LOW_KIND} & set(self.config.alarm_kinds):
            role.add_to_policy(
                iam.PolicyStatement(
                    sid="FailSlowCulprit",
                    actions=["cloudwatch:GetMetricData", "cloudwatch:ListMetrics"],
                    resources=["*"],
                )
            )
            acknowledge_wildcard_resources(
                role,
                resources=["*"],
                reason="GetMetricData and ListMetrics authorize only '*'; the fail-slow and "
                "goodput pages read the series of the job and its GPUs and nodes",
            )
        # Whether the node's kernel log confirms an exporter XID: Container Insights' host log
        # group, read (lambdas/notifier/kernel_log.py), whether or not it is subscribed.
        read_arns = [exporter_arn, training_arn]
        if self.config.host_log_group:
            kernel_arn = self._log_group_arn(self.config.host_log_group)
            role.add_to_policy(
                iam.PolicyStatement(
                    sid="KernelLogConfirms",
                    actions=["logs:FilterLogEvents"],
                    resources=[kernel_arn],
                )
            )
            read_arns.append(kernel_arn)
        acknowledge_wildcard_resources(
            role,
            resources=read_arns,
            reason="CloudWatch Logs authorizes FilterLogEvents on ARNs below the group's "
            "(log-group:NAME:log-stream:...); ':*' names this one group, no other",
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
        # This app's alarms only: each starts with one of its kinds' names (a shard adds
        # "-shard-NN"). Not gpu-insights-<cluster>- alone: that also matches the alarms of a
        # cluster whose name starts with this one's and a hyphen (prod, prod-eu).
        self.alarm_rule = events.Rule(
            self,
            "AlarmStateChanges",
            description=f"State changes of {cluster_name}'s GPU alarms and their contributors",
            # This account's alarms only: a rule on the default bus also matches events
            # other accounts send to it where the bus policy lets them ("account" is the
            # event's source account, "Amazon EventBridge events",
            # https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-events-structure.html).
            event_pattern=events.EventPattern(
                source=["aws.cloudwatch"],
                account=[Stack.of(self).account],
                detail_type=list(ALARM_DETAIL_TYPES),
                detail={
                    "alarmName": events.Match.any_of(
                        *(events.Match.prefix(name) for name in _shortest(alarm_kind_names))
                    )
                },
            ),
            # Delivery to the function (throttling, a missing permission) is retried and then
            # dead-lettered, as the function's own failures are after its retries: a state
            # change that cannot be notified is kept, not dropped.
            targets=[
                targets.LambdaFunction(
                    self.function,
                    dead_letter_queue=self.dead_letters,
                    retry_attempts=RULE_RETRY_ATTEMPTS,
                    max_event_age=RULE_MAX_EVENT_AGE,
                )
            ],
        )
        # Anything in the dead letters is a notification nobody received: page for it.
        self.failing_name = alarm_name(cluster_name, FAILING_ALARM_KEY)
        self.failing = cloudwatch.CfnAlarm(
            self,
            "Failing",
            alarm_name=self.failing_name,
            alarm_description=(
                f"[critical] The notifier of {cluster_name} failed to send a notification: "
                f"its event is in the dead-letter queue {self.dead_letters.queue_name}. Read "
                "the function's log for the error; the queue's messages are the events."
            ),
            namespace="AWS/SQS",
            metric_name="ApproximateNumberOfMessagesVisible",
            dimensions=[{"name": "QueueName", "value": self.dead_letters.queue_name}],
            statistic="Maximum",
            period=300,
            evaluation_periods=1,
            datapoints_to_alarm=1,
            threshold=1,
            comparison_operator="GreaterThanOrEqualToThreshold",
            treat_missing_data="notBreaching",
            alarm_actions=[critical.topic_arn],
        )
        # A log event that named an XID but was refused may be a GPU fault that paged no one
        # (or a forged document): page for it, as for the dead letters.
        self.refused_name = alarm_name(cluster_name, REFUSED_ALARM_KEY)
        self.refused = cloudwatch.CfnAlarm(
            self,
            "Refused",
            alarm_name=self.refused_name,
            alarm_description=(
                f"[critical] The notifier of {cluster_name} refused log events that named an "
                "XID (a field not as the exporter or the kernel writes it): each may be a GPU "
                "fault that paged no one. The function's log says which event and why "
                '("refused log event"); see docs/paging.md.'
            ),
            namespace=NAMESPACE_GPU,
            metric_name=NOTIFIER_REFUSED_METRIC,
            dimensions=[{"name": DIM_CLUSTER, "value": cluster_name}],
            statistic="Sum",
            period=300,
            evaluation_periods=1,
            datapoints_to_alarm=1,
            threshold=1,
            comparison_operator="GreaterThanOrEqualToThreshold",
            treat_missing_data="notBreaching",
            alarm_actions=[critical.topic_arn],
        )
