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
from cdk.settings import Settings
from cdk.stacks.deployment_stack import DeploymentStack
from contract.metrics import NAMESPACE_FINDINGS, NAMESPACE_WASTE, training_log_group
from contract.resource_names import topic_name
from lambdas.shared.shards import STORAGE, TRAINING
from lambdas.training_analyzer.handler import GPU_HOURS_KEY, JOB_COSTS_KEY

STORAGE_MODULES = (
    "lambdas/shared/cluster_tags.py",
    "lambdas/shared/config.py",
    "lambdas/storage_analyzer/config.py",
    "lambdas/shared/aws_clients.py",
    "lambdas/shared/events.py",
    "lambdas/shared/findings.py",
    "lambdas/shared/metric_fetcher.py",
    "lambdas/shared/publisher.py",
    "lambdas/storage_analyzer/aws.py",
    "lambdas/storage_analyzer/ebs_analysis.py",
    "lambdas/storage_analyzer/ebs_plan.py",
    "lambdas/storage_analyzer/fleet.py",
    "lambdas/shared/s3_objects.py",
    "lambdas/shared/shard_parts.py",
    "lambdas/shared/shards.py",
    "lambdas/storage_analyzer/ebs_prices.py",
    "lambdas/storage_analyzer/handler.py",
    "lambdas/storage_analyzer/run.py",
    "lambdas/storage_analyzer/s3_analysis.py",
    "contract/metrics.py",
)


TRAINING_MODULES = (
    "lambdas/shared/config.py",
    "lambdas/training_analyzer/config.py",
    "lambdas/gpu_analyzer/attribution.py",
    "lambdas/gpu_analyzer/aws.py",
    "lambdas/gpu_analyzer/findings.py",
    "lambdas/gpu_analyzer/otel.py",
    "lambdas/gpu_analyzer/metrics.py",
    "lambdas/gpu_analyzer/run.py",
    "lambdas/gpu_analyzer/stepping.py",
    "lambdas/gpu_analyzer/workloads.py",
    "lambdas/shared/container_insights_mode.py",
    "lambdas/shared/promql.py",
    "lambdas/shared/aws_clients.py",
    "lambdas/shared/events.py",
    "lambdas/shared/findings.py",
    "lambdas/shared/metric_fetcher.py",
    "lambdas/shared/publisher.py",
    "lambdas/shared/s3_objects.py",
    "lambdas/training_analyzer/analysis.py",
    "lambdas/training_analyzer/aws.py",
    "lambdas/training_analyzer/fleet.py",
    "lambdas/shared/shard_parts.py",
    "lambdas/shared/shards.py",
    "lambdas/training_analyzer/gpu_prices.py",
    "lambdas/training_analyzer/handler.py",
    "lambdas/training_analyzer/run.py",
    "contract/metrics.py",
)


REPORT_MODULES = (
    "lambdas/shared/config.py",
    "lambdas/training_analyzer/config.py",
    "lambdas/weekly_report/config.py",
    "lambdas/gpu_analyzer/attribution.py",
    "lambdas/gpu_analyzer/aws.py",
    "lambdas/gpu_analyzer/findings.py",
    "lambdas/gpu_analyzer/otel.py",
    "lambdas/gpu_analyzer/metrics.py",
    "lambdas/gpu_analyzer/run.py",
    "lambdas/gpu_analyzer/stepping.py",
    "lambdas/gpu_analyzer/workloads.py",
    "lambdas/shared/container_insights_mode.py",
    "lambdas/shared/promql.py",
    "lambdas/shared/aws_clients.py",
    "lambdas/shared/events.py",
    "lambdas/shared/metric_fetcher.py",
    "lambdas/training_analyzer/analysis.py",
    "lambdas/training_analyzer/aws.py",
    "lambdas/training_analyzer/fleet.py",
    "lambdas/shared/shard_parts.py",
    "lambdas/shared/shards.py",
    "lambdas/training_analyzer/gpu_prices.py",
    "lambdas/training_analyzer/handler.py",
    "lambdas/training_analyzer/run.py",
    "lambdas/shared/findings.py",
    "lambdas/shared/publisher.py",
    "lambdas/shared/s3_objects.py",
    "lambdas/weekly_report/actions.py",
    "lambdas/weekly_report/aws.py",
    "lambdas/weekly_report/charts.py",
    "lambdas/weekly_report/figures.py",
    "lambdas/weekly_report/handler.py",
    "lambdas/weekly_report/job_waste.py",
    "lambdas/weekly_report/render.py",
    "lambdas/weekly_report/waste.py",
    "lambdas/weekly_report/waste_section.py",
    "lambdas/weekly_report/week.py",
    "contract/metrics.py",
    "contract/resource_names.py",
)


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

    part = "Analyzers"

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
            modules=STORAGE_MODULES,
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
        training_fleet = settings.training_fleet_jobs > settings.training_shard_jobs
        self.training = AnalyzerFunction(
            self,
            "TrainingAnalyzer",
            description=f"Training analyzer of {settings.cluster_name}: job findings",
            handler="lambdas.training_analyzer.handler.handler",
            modules=TRAINING_MODULES,
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
                    sid="WriteJobCosts",
                    actions=["s3:PutObject"],
                    resources=[job_costs_objects, gpu_hours_objects],
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
                job_costs_objects,
                gpu_hours_objects,
                *([self.report.bucket.arn_for_objects("shards/*")] if training_fleet else []),
            ],
            reason="GetMetricData, ListMetrics and PutMetricData (limited by condition to the "
            "findings namespace) take no resource ARNs; GetQueryResults names only a query id; "
            "StartQuery is authorized on the training log group's ARN with its ':*' suffix; "
            "findings/* is the analyzers' own prefix; date=* in the job costs and GPU-hours "
            "keys is one file a day; shards/* is the fleet state machine's staging prefix",
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
        self.report_topic = sns.Topic(
            self,
            "ReportTopic",
            topic_name=topic_name(settings.cluster_name, "reports"),
            master_key=self.report.key,
            enforce_ssl=True,
        )
        for email in settings.report_emails:
            self.report_topic.add_subscription(subscriptions.EmailSubscription(email))
        bucket = self.report.bucket
        self.weekly_report = AnalyzerFunction(
            self,
            "WeeklyReport",
            description=f"Weekly GPU report of {settings.cluster_name}",
            handler="lambdas.weekly_report.handler.handler",
            modules=REPORT_MODULES,
            config=report_config(
                settings, report_bucket=bucket.bucket_name, topic_arn=self.report_topic.topic_arn
            ),
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
                    sid="ReadMetricsAndAlarmHistory",
                    actions=[
                        "cloudwatch:GetMetricData",
                        "cloudwatch:ListMetrics",
                        "cloudwatch:DescribeAlarmHistory",
                    ],
                    resources=["*"],
                ),
                iam.PolicyStatement(
                    sid="SendSummary",
                    actions=["sns:Publish"],
                    resources=[self.report_topic.topic_arn],
                ),
            ],
            schedule=settings.report_schedule,
            memory_mb=512,
            timeout=Duration.minutes(5),
        )
        acknowledge_wildcard_resources(
            self.weekly_report.role,
            resources=[
                "*",
                bucket.arn_for_objects("findings/*"),
                bucket.arn_for_objects("reports/*"),
            ],
            reason="GetMetricData, ListMetrics and DescribeAlarmHistory take no resource ARNs; "
            "findings/* and reports/* are the app's own prefixes of its report bucket",
        )
        CfnOutput(self, "ReportTopicArn", value=self.report_topic.topic_arn)
        if settings.s3_enable_request_metrics and settings.storage_buckets:
            RequestMetrics(self, "RequestMetrics", buckets=settings.storage_buckets)
        CfnOutput(self, "ReportBucketName", value=self.report.bucket.bucket_name)
