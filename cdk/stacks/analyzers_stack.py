"""The report bucket and the scheduled analyzers that fill it with findings."""

from aws_cdk import ArnFormat, CfnOutput, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from cdk.constructs.agent_log_group import AgentLogGroup
from cdk.constructs.analyzer_function import AnalyzerFunction
from cdk.constructs.fleet_map import FleetMap
from cdk.constructs.nag import acknowledge_wildcard_resources
from cdk.constructs.report_bucket import ReportBucket
from cdk.constructs.request_metrics import RequestMetrics
from cdk.function_configs import report_config, storage_config, training_config
from cdk.outputs import ANALYZERS, REPORT_BUCKET_NAME, REPORT_TOPIC_ARN
from cdk.settings import Settings
from cdk.stacks.deployment_stack import DeploymentStack
from gpu_insights_agent.contract.metrics import (
    NAMESPACE_FINDINGS,
    NAMESPACE_WASTE,
    container_insights_log_group_prefix,
    training_log_group,
)
from gpu_insights_agent.contract.resource_names import SHARD_SUFFIX, dashboard_name, topic_name
from lambdas.shared.console_links import STORAGE_DASHBOARD
from lambdas.shared.report_keys import FAILURES_KEY, GOODPUT_KEY, GPU_HOURS_KEY, JOB_COSTS_KEY
from lambdas.shared.serving_table import SERVING_KEY
from lambdas.shared.shards import STORAGE, TRAINING
from lambdas.weekly_report.config import MEMORY_MB as REPORT_MEMORY_MB
from lambdas.weekly_report.config import TIMEOUT_S as REPORT_TIMEOUT_S


def shard_statements(
    report: ReportBucket, *, list_shards: bool = True
) -> list[iam.PolicyStatement]:
    """The fleet state machine's staging: its plan and parts under shards/ of the report
    bucket (cdk/constructs/fleet_map.py), read back by the shards and the merge."""
    statements = [
        iam.PolicyStatement(
            sid="WriteAndReadShards",
            actions=["s3:PutObject", "s3:GetObject"],
            resources=[report.bucket.arn_for_objects("shards/*")],
        )
    ]
    if list_shards:
        # A shard's missing part reads as 404, not 403 (lambdas/shared/s3_objects.py).
        statements.append(
            iam.PolicyStatement(
                sid="ListShards",
                actions=["s3:ListBucket"],
                resources=[report.bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": ["shards/*"]}},
            )
        )
    return statements


def findings_statements(stack: Stack, report: ReportBucket) -> list[iam.PolicyStatement]:
    """What every analyzer needs to publish: its findings file, events, counts."""
    return [
        iam.PolicyStatement(
            sid="WriteFindings",
            actions=["s3:PutObject"],
            resources=[report.bucket.arn_for_objects("findings/*")],
        ),
        iam.PolicyStatement(
            sid="EncryptFindings",
            actions=["kms:GenerateDataKey", "kms:Decrypt"],
            resources=[report.key.key_arn],
        ),
        iam.PolicyStatement(
            sid="SendFindingEvents",
            actions=["events:PutEvents"],
            resources=[
                stack.format_arn(service="events", resource="event-bus", resource_name="default")
            ],
        ),
        iam.PolicyStatement(
            sid="CountFindings",
            actions=["cloudwatch:PutMetricData"],
            resources=["*"],
            conditions={"StringEquals": {"cloudwatch:namespace": NAMESPACE_FINDINGS}},
        ),
    ]


class AnalyzersStack(DeploymentStack):
    """Attributes: ``report``, ``storage``."""

    part = ANALYZERS

    def __init__(self, scope: Construct, construct_id: str, *, settings: Settings) -> None:
        super().__init__(
            scope,
            construct_id,
            settings=settings,
            description=f"findings and reports for {settings.cluster_name}",
        )
        self.report = ReportBucket(self, "Report", cluster_name=settings.cluster_name)
        buckets = [f"arn:{self.partition}:s3:::{b}" for b in settings.storage_buckets]
        storage_statements = [
            *findings_statements(self, self.report),
            iam.PolicyStatement(
                sid="ReadMetricsAndVolumes",
                actions=[
                    "cloudwatch:GetMetricData",
                    "ec2:DescribeVolumes",
                    "ec2:DescribeInstances",
                ],
                resources=["*"],
            ),
            # The storage dashboard alone: the run writes the cluster's volumes into its EBS
            # widgets (lambdas/storage_analyzer/dashboard.py). A dashboard's ARN has no Region
            # (arn:aws:cloudwatch::<account>:dashboard/<name>, Service Authorization Reference,
            # Amazon CloudWatch, resource type "dashboard").
            iam.PolicyStatement(
                sid="DrawClusterVolumesOnStorageDashboard",
                actions=["cloudwatch:GetDashboard", "cloudwatch:PutDashboard"],
                resources=[
                    f"arn:{self.partition}:cloudwatch::{self.account}:dashboard/"
                    + dashboard_name(settings.cluster_name, STORAGE_DASHBOARD)
                ],
            ),
        ]
        fleet = settings.storage_fleet_volumes > settings.storage_shard_volumes
        if fleet:
            storage_statements += shard_statements(self.report)
        if buckets:
            storage_statements.append(
                iam.PolicyStatement(
                    sid="ReadRequestMetricsConfigurations",
                    actions=["s3:GetMetricsConfiguration"],
                    resources=buckets,
                )
            )
        self.storage = AnalyzerFunction(
            self,
            "StorageAnalyzer",
            description=f"Storage analyzer of {settings.cluster_name}: EBS and S3 findings",
            handler="lambdas.storage_analyzer.handler.handler",
            config=storage_config(settings, report_bucket=self.report.bucket.bucket_name),
            statements=storage_statements,
            schedule=None if fleet else settings.storage_schedule,
            # lambdas/shared/shards.py STORAGE: 1,024 MB for its CPU share (0.58 of a vCPU),
            # which the synth-time check of storage_shard_volumes x lookback_days assumes.
            memory_mb=STORAGE.memory_mb,
            timeout=Duration.seconds(STORAGE.timeout_s),
        )
        #: The Distributed Map that runs the storage analysis in shards, above the threshold.
        self.storage_fleet: FleetMap | None = None
        if fleet:
            self.storage_fleet = FleetMap(
                self,
                "StorageFleet",
                function=self.storage.function,
                description=f"Storage analyzer of {settings.cluster_name}, in shards of "
                f"{settings.storage_shard_volumes:,} volumes",
                schedule=settings.storage_schedule,
            )
        acknowledge_wildcard_resources(
            self.storage.role,
            resources=[
                "*",
                self.report.bucket.arn_for_objects("findings/*"),
                *([self.report.bucket.arn_for_objects("shards/*")] if fleet else []),
            ],
            reason="GetMetricData, DescribeVolumes/Instances and PutMetricData (limited to "
            "the findings namespace by condition) take no resource ARNs; findings/* is the "
            "analyzers' own prefix of the report bucket",
        )
        # The agent writes training scripts' EMF here (and may have created the group).
        self.training_logs = AgentLogGroup(
            self,
            "TrainingLogs",
            log_group_name=training_log_group(settings.cluster_name),
            retention_days=30,
        )
        # StartQuery is authorized on an ARN below the log group's
        # (".../log-group:NAME:log-stream:", as AccessDenied messages name it), which only
        # "log-group:NAME:*" matches. GetQueryResults carries only a query id:
        # "*" is the one resource that authorizes it however AWS scopes it.
        logs_arn = self.format_arn(
            service="logs",
            resource="log-group",
            resource_name=f"{training_log_group(settings.cluster_name)}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        # The training analyzer writes its findings and, for the weekly report, each day's
        # job costs: that key and no other under reports/.
        job_costs_objects = self.report.bucket.arn_for_objects(
            JOB_COSTS_KEY.format(cluster=settings.cluster_name, day="*")
        )
        gpu_hours_objects = self.report.bucket.arn_for_objects(
            GPU_HOURS_KEY.format(cluster=settings.cluster_name, day="*")
        )
        failures_objects = self.report.bucket.arn_for_objects(
            FAILURES_KEY.format(cluster=settings.cluster_name, day="*")
        )
        serving_objects = self.report.bucket.arn_for_objects(
            SERVING_KEY.format(cluster=settings.cluster_name, day="*")
        )
        goodput_objects = self.report.bucket.arn_for_objects(
            GOODPUT_KEY.format(cluster=settings.cluster_name, day="*")
        )
        # A failed job's pods' and nodes' logs (lambdas/training_analyzer/failure_logs.py):
        # this cluster's Container Insights groups (application, host, dataplane) and their
        # streams, which "log-group:/aws/containerinsights/<cluster>/*" matches, no other
        # cluster's ("/aws/containerinsights/<cluster>-eu/..." lacks the slash).
        container_logs_arn = self.format_arn(
            service="logs",
            resource="log-group",
            resource_name=f"{container_insights_log_group_prefix(settings.cluster_name)}/*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        training_fleet = settings.training_fleet_jobs > settings.training_shard_jobs
        self.training = AnalyzerFunction(
            self,
            "TrainingAnalyzer",
            description=f"Training analyzer of {settings.cluster_name}: job findings",
            handler="lambdas.training_analyzer.handler.handler",
            config=training_config(settings, report_bucket=self.report.bucket.bucket_name),
            statements=[
                *findings_statements(self, self.report),
                iam.PolicyStatement(
                    sid="ReadTrainingMetrics",
                    actions=["cloudwatch:GetMetricData", "cloudwatch:ListMetrics"],
                    resources=["*"],
                ),
                iam.PolicyStatement(
                    sid="QueryTrainingLogs", actions=["logs:StartQuery"], resources=[logs_arn]
                ),
                iam.PolicyStatement(
                    sid="ReadQueryResults",
                    actions=["logs:GetQueryResults"],
                    resources=["*"],
                ),
                iam.PolicyStatement(
                    sid="ReadFailureLogs",
                    actions=["logs:DescribeLogStreams", "logs:GetLogEvents"],
                    resources=[container_logs_arn],
                ),
                iam.PolicyStatement(
                    sid="WriteJobCosts",
                    actions=["s3:PutObject"],
                    resources=[
                        job_costs_objects,
                        gpu_hours_objects,
                        failures_objects,
                        serving_objects,
                        goodput_objects,
                    ],
                ),
                iam.PolicyStatement(
                    sid="PublishWasteTotals",
                    actions=["cloudwatch:PutMetricData"],
                    resources=["*"],
                    conditions={"StringEquals": {"cloudwatch:namespace": NAMESPACE_WASTE}},
                ),
                iam.PolicyStatement(
                    sid="ReadStorageFindings",
                    actions=["s3:GetObject"],
                    resources=[self.report.bucket.arn_for_objects("findings/*")],
                ),
                # A day without storage findings must read as 404, not 403 (S3 answers 404
                # only to a caller that may list the bucket: lambdas/shared/s3_objects.py).
                iam.PolicyStatement(
                    sid="ListReportBucket",
                    actions=["s3:ListBucket"],
                    resources=[self.report.bucket.bucket_arn],
                ),
                # ListReportBucket above already makes a missing part read as 404.
                *(shard_statements(self.report, list_shards=False) if training_fleet else []),
            ],
            schedule=None if training_fleet else settings.training_schedule,
            # lambdas/shared/shards.py TRAINING: the sizing rule is 1.5 x the peak RSS of one
            # run of the default shard (2,000 jobs x 14 days), up to a multiple of 512 MB:
            # 1,024 MB, which also doubles the CPU share 512 MB had.
            memory_mb=TRAINING.memory_mb,
            timeout=Duration.seconds(TRAINING.timeout_s),
        )
        acknowledge_wildcard_resources(
            self.training.role,
            resources=[
                "*",
                self.report.bucket.arn_for_objects("findings/*"),
                logs_arn,
                container_logs_arn,
                job_costs_objects,
                gpu_hours_objects,
                failures_objects,
                serving_objects,
                goodput_objects,
                *([self.report.bucket.arn_for_objects("shards/*")] if training_fleet else []),
            ],
            reason="GetMetricData, ListMetrics and PutMetricData (limited by condition to the "
            "findings namespace) take no resource ARNs; GetQueryResults names only a query id; "
            "StartQuery is authorized on the training log group's ARN with its ':*' suffix; "
            "/aws/containerinsights/<cluster>/* is this cluster's Container Insights log "
            "groups and their streams; "
            "findings/* is the analyzers' own prefix; date=* in the job costs, GPU-hours, "
            "failures and serving keys is one file a day; shards/* is the fleet state "
            "machine's staging prefix",
        )
        #: The Distributed Map that runs the training analysis in shards, above the threshold.
        self.training_fleet: FleetMap | None = None
        if training_fleet:
            self.training_fleet = FleetMap(
                self,
                "TrainingFleet",
                function=self.training.function,
                description=f"Training analyzer of {settings.cluster_name}, in shards of "
                f"{settings.training_shard_jobs:,} jobs",
                schedule=settings.training_schedule,
                counted="jobs",
            )
        #: The summary's topic: the one ``report_topic_arn`` names, or the app's own.
        self.report_topic: sns.ITopic
        existing_topic = settings.topic_arn("report")
        if existing_topic:
            self.report_topic = sns.Topic.from_topic_arn(self, "ReportTopic", existing_topic)
        else:
            self.report_topic = sns.Topic(
                self,
                "ReportTopic",
                topic_name=topic_name(settings.cluster_name, "reports"),
                master_key=self.report.key,
                enforce_ssl=True,
            )
        for email in settings.report_emails:
            self.report_topic.add_subscription(subscriptions.EmailSubscription(email))
        # Publishing to a topic encrypted with a customer managed key needs these on the key
        # (https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html).
        report_topic_key = settings.topic_kms_key_arn("report")
        topic_key_statements = (
            [
                iam.PolicyStatement(
                    sid="EncryptForTopic",
                    actions=["kms:GenerateDataKey", "kms:Decrypt"],
                    resources=[report_topic_key],
                )
            ]
            if report_topic_key
            else []
        )
        bucket = self.report.bucket
        weekly_config = report_config(
            settings, report_bucket=bucket.bucket_name, topic_arn=self.report_topic.topic_arn
        )
        # DescribeAlarmHistory is authorized on the alarm (Service Authorization Reference,
        # Amazon CloudWatch: resource type ``alarm``, arn:...:alarm:NAME): this deployment's
        # alarms by name, a sharded kind's shards by ``-shard-*``, no other cluster's.
        shards = weekly_config.alarm_shards or {}
        alarm_arns = [
            self.format_arn(
                service="cloudwatch",
                resource="alarm",
                resource_name=f"{kind}{SHARD_SUFFIX}*" if kind in shards else kind,
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
            for kind in weekly_config.alarm_kind_names
        ]
        self.weekly_report = AnalyzerFunction(
            self,
            "WeeklyReport",
            description=f"Weekly GPU report of {settings.cluster_name}",
            handler="lambdas.weekly_report.handler.handler",
            config=weekly_config,
            statements=[
                iam.PolicyStatement(
                    sid="ReadFindingsAndReports",
                    actions=["s3:GetObject"],
                    resources=[
                        bucket.arn_for_objects("findings/*"),
                        bucket.arn_for_objects("reports/*"),
                    ],
                ),
                iam.PolicyStatement(
                    sid="ListFindings",
                    actions=["s3:ListBucket"],
                    resources=[bucket.bucket_arn],
                ),
                iam.PolicyStatement(
                    sid="WriteReports",
                    actions=["s3:PutObject"],
                    resources=[bucket.arn_for_objects("reports/*")],
                ),
                iam.PolicyStatement(
                    sid="UseDataKey",
                    actions=["kms:GenerateDataKey", "kms:Decrypt"],
                    resources=[self.report.key.key_arn],
                ),
                iam.PolicyStatement(
                    sid="ReadMetrics",
                    actions=["cloudwatch:GetMetricData", "cloudwatch:ListMetrics"],
                    resources=["*"],
                ),
                *(
                    [
                        iam.PolicyStatement(
                            sid="ReadAlarmHistory",
                            actions=["cloudwatch:DescribeAlarmHistory"],
                            resources=alarm_arns,
                        )
                    ]
                    if alarm_arns
                    else []
                ),
                iam.PolicyStatement(
                    sid="SendSummary",
                    actions=["sns:Publish"],
                    resources=[self.report_topic.topic_arn],
                ),
                *topic_key_statements,
            ],
            schedule=settings.report_schedule,
            memory_mb=REPORT_MEMORY_MB,
            timeout=Duration.seconds(REPORT_TIMEOUT_S),
        )
        acknowledge_wildcard_resources(
            self.weekly_report.role,
            resources=[
                "*",
                bucket.arn_for_objects("findings/*"),
                bucket.arn_for_objects("reports/*"),
            ],
            reason="GetMetricData and ListMetrics take no resource ARNs; findings/* and "
            "reports/* are the app's own prefixes of its report bucket",
        )
        acknowledge_wildcard_resources(
            self.weekly_report.role,
            resources=[arn for arn in alarm_arns if arn.endswith("*")],
            reason="a sharded alarm kind's alarms are its name and -shard-NN, one per shard of "
            "the fleet size setting; this names that kind's shards, no other alarm",
        )
        CfnOutput(
            self,
            REPORT_TOPIC_ARN,
            description="Where the weekly report's summary goes",
            value=self.report_topic.topic_arn,
        )
        if settings.s3_enable_request_metrics and settings.storage_buckets:
            RequestMetrics(self, "RequestMetrics", buckets=settings.storage_buckets)
        CfnOutput(
            self,
            REPORT_BUCKET_NAME,
            description="The reports and findings; `gpu-insights analyze --report-bucket`",
            value=self.report.bucket.bucket_name,
        )
