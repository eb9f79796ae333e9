import json
from typing import Any

from aws_cdk.assertions import Template

from tests.infra.conftest import Synth, lint_errors, stack_named

PROD = {
    "cluster_name": "train-prod",
    "account": "123456789012",
    "region": "eu-west-1",
    "storage_buckets": "train-data,train-ckpt",
    "s3_enable_request_metrics": "true",
}


def _template(synth: Synth, context: dict[str, Any] = PROD) -> Template:
    return Template.from_stack(stack_named(synth(context), "-Analyzers"))


def _statements(template: Template, role_fragment: str) -> list[dict[str, Any]]:
    return [
        s
        for policy in template.find_resources("AWS::IAM::Policy").values()
        if any(role_fragment in r["Ref"] for r in policy["Properties"]["Roles"])
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_report_bucket_is_private_encrypted_tls_only_versioned_and_logged(synth: Synth) -> None:
    template = _template(synth)
    buckets = template.find_resources("AWS::S3::Bucket")
    ((report_id, report),) = [
        (i, b) for i, b in buckets.items() if "LoggingConfiguration" in b["Properties"]
    ]
    props = report["Properties"]
    rule = props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    assert report["DeletionPolicy"] == "Retain"
    policies = template.find_resources("AWS::S3::BucketPolicy")
    for policy in policies.values():
        deny = policy["Properties"]["PolicyDocument"]["Statement"][0]
        assert deny["Effect"] == "Deny"
        assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    (key,) = template.find_resources("AWS::KMS::Key").values()
    assert key["Properties"]["EnableKeyRotation"] is True
    assert report_id.startswith("ReportBucket")  # stateful: the logical id must not move


def test_storage_analyzer_runs_daily_with_retries_a_failure_queue_and_log_retention(
    synth: Synth,
) -> None:
    template = _template(synth)
    functions = {
        f["Properties"]["Handler"]: f["Properties"]
        for f in template.find_resources("AWS::Lambda::Function").values()
    }
    storage = functions["lambdas.storage_analyzer.handler.handler"]
    assert (storage["Timeout"], storage["MemorySize"], storage["Runtime"]) == (
        900,
        1024,
        "python3.14",
    )
    env = storage["Environment"]["Variables"]
    assert env["BUCKETS"] == "train-data,train-ckpt"
    assert (env["VOLUME_SCOPE"], env["LOOKBACK_DAYS"]) == ("cluster", "14")
    schedules = sorted(
        r["Properties"]["ScheduleExpression"]
        for r in template.find_resources("AWS::Events::Rule").values()
    )
    assert schedules == ["cron(0 6 * * ? *)", "cron(0 7 * * ? *)", "cron(0 8 ? * MON *)"]
    for invoke in template.find_resources("AWS::Lambda::EventInvokeConfig").values():
        assert invoke["Properties"]["MaximumRetryAttempts"] == 2
        assert "OnFailure" in invoke["Properties"]["DestinationConfig"]
    for logs in template.find_resources("AWS::Logs::LogGroup").values():
        assert logs["Properties"]["RetentionInDays"] == 30


def test_storage_analyzer_policy_lists_its_actions(synth: Synth) -> None:
    statements = {s.get("Sid"): s for s in _statements(_template(synth), "StorageAnalyzerRole")}
    for statement in statements.values():
        actions = (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
        assert all("*" not in a for a in actions), actions
    assert statements["WriteFindings"]["Action"] == "s3:PutObject"
    assert json.dumps(statements["WriteFindings"]["Resource"]).endswith('/findings/*"]]}')
    assert statements["CountFindings"]["Condition"] == {
        "StringEquals": {"cloudwatch:namespace": "GpuInsights/Findings"}
    }
    assert statements["ReadRequestMetricsConfigurations"]["Resource"] == [
        {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":s3:::train-data"]]},
        {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":s3:::train-ckpt"]]},
    ]


def test_training_analyzer_queries_only_its_log_group_and_prices_gpu_hours(synth: Synth) -> None:
    template = _template(synth, {**PROD, "gpu_instance_type": "p4d.24xlarge"})
    statements = {s.get("Sid"): s for s in _statements(template, "TrainingAnalyzerRole")}
    for statement in statements.values():
        actions = (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
        assert all("*" not in a for a in actions), actions
    start = json.dumps(statements["QueryTrainingLogs"]["Resource"])
    assert start.endswith(':log-group:/aws/gpu-insights/train-prod/training:*"]]}')
    # GetQueryResults names only a query id: authorized on "*", not on an ARN pattern.
    assert statements["ReadQueryResults"]["Action"] == "logs:GetQueryResults"
    assert statements["ReadQueryResults"]["Resource"] == "*"
    functions = {
        f["Properties"]["Handler"]: f["Properties"]
        for f in template.find_resources("AWS::Lambda::Function").values()
    }
    env = functions["lambdas.training_analyzer.handler.handler"]["Environment"]["Variables"]
    assert env["GPU_HOUR_USD"] == "2.75"  # an A100 GPU-hour of a p4d.24xlarge


def test_request_metrics_are_turned_on_for_exactly_the_configured_buckets(synth: Synth) -> None:
    template = _template(synth)
    resources = template.find_resources("Custom::AWS")
    creates = [json.loads(_flat(r["Properties"]["Create"])) for r in resources.values()]
    on_s3 = [c for c in creates if c["service"] == "S3"]
    assert sorted(c["parameters"]["Bucket"] for c in on_s3) == ["train-ckpt", "train-data"]
    assert all(c["action"] == "PutBucketMetricsConfiguration" for c in on_s3)
    # IAM's action for both PutBucketMetricsConfiguration and DeleteBucketMetricsConfiguration
    # is s3:PutMetricsConfiguration (S3 API Reference, DeleteBucketMetricsConfiguration:
    # "you must have permissions to perform the s3:PutMetricsConfiguration action").
    granted = {
        json.dumps(statement["Resource"]): statement["Action"]
        for logical_id, policy in template.find_resources("AWS::IAM::Policy").items()
        if logical_id.startswith("RequestMetrics")
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    }
    assert len(granted) == 2
    assert set(granted.values()) == {"s3:PutMetricsConfiguration"}
    off = _template(synth, {**PROD, "s3_enable_request_metrics": "false"})
    services = {
        json.loads(_flat(r["Properties"]["Create"]))["service"]
        for r in off.find_resources("Custom::AWS").values()
    }
    assert services == {"CloudWatchLogs"}  # only the training log group's


def _flat(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "".join(p if isinstance(p, str) else "x" for p in value["Fn::Join"][1])


def test_cfn_lint_passes_on_the_analyzers_stack(synth: Synth) -> None:
    assert lint_errors(stack_named(synth(PROD), "-Analyzers"), ["eu-west-1"]) == []


def test_weekly_report_runs_on_mondays_writes_reports_and_publishes_encrypted(synth: Synth) -> None:
    template = _template(synth, {**PROD, "report_emails": "lead@example.com"})
    statements = {s.get("Sid"): s for s in _statements(template, "WeeklyReportRole")}
    for statement in statements.values():
        actions = (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
        assert all("*" not in a for a in actions), actions
    assert json.dumps(statements["WriteReports"]["Resource"]).endswith('/reports/*"]]}')
    # On the report bucket with no s3:prefix condition: S3's documentation does not say that
    # the implicit ListBucket check behind GetObject's 404 carries s3:prefix, so a prefix
    # condition could turn every missing key into a 403.
    assert "Condition" not in statements["ListFindings"]
    assert statements["ListFindings"]["Action"] == "s3:ListBucket"
    (topic,) = template.find_resources("AWS::SNS::Topic").values()
    assert topic["Properties"]["TopicName"] == "gpu-insights-train-prod-reports"
    assert "KmsMasterKeyId" in topic["Properties"]
    (subscription,) = template.find_resources("AWS::SNS::Subscription").values()
    assert subscription["Properties"]["Endpoint"] == "lead@example.com"


def test_training_analyzer_memory_holds_a_run_of_the_default_shard(synth: Synth) -> None:
    """The floor plan's peak over one run of the default shard (2,000 jobs x 14 days) is
    about 530 MiB (benchmarks/training_analyzer.py): the function gets 1.5 x that, up to a
    multiple of 512 MB, so 1,024 MB (512 MB would run out of memory), and with it the CPU
    share (0.58 of a vCPU) the shard-size check at synth assumes."""
    functions = {
        f["Properties"]["Handler"]: f["Properties"]
        for f in _template(synth).find_resources("AWS::Lambda::Function").values()
    }
    training = functions["lambdas.training_analyzer.handler.handler"]
    assert (training["MemorySize"], training["Timeout"]) == (1024, 600)
    assert training["MemorySize"] >= 1.5 * 530


def test_with_the_otlp_sink_the_exporters_readers_are_told_so_and_may_query_promql(
    synth: Synth,
) -> None:
    """exporter_sink=otlp: the exporter's series are in the OTLP store only, so the training
    analyzer and the weekly report read them with PromQL (their ``EXPORTER_SINK``), and their
    roles allow what the query API asks of the caller: "the calling identity must have both of
    the following IAM actions: cloudwatch:GetMetricData, cloudwatch:ListMetrics" ("QueryMetrics",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-PromQL-API-QueryMetrics.html)."""
    readers = {
        "lambdas.training_analyzer.handler.handler": "TrainingAnalyzerRole",
        "lambdas.weekly_report.handler.handler": "WeeklyReportRole",
    }
    # The EMF sink pinned, and OTel mode's default sink (OTLP, settings.default_sink).
    for context, sink in (({**PROD, "exporter_sink": "emf"}, "emf"), (PROD, "otlp")):
        template = _template(synth, {**context, "container_insights_mode": "otel"})
        functions = {
            f["Properties"]["Handler"]: f["Properties"]
            for f in template.find_resources("AWS::Lambda::Function").values()
        }
        for handler, role in readers.items():
            assert functions[handler]["Environment"]["Variables"]["EXPORTER_SINK"] == sink
            granted = {
                action
                for s in _statements(template, role)
                if s["Effect"] == "Allow" and s["Resource"] == "*"
                for action in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
            }
            assert {"cloudwatch:GetMetricData", "cloudwatch:ListMetrics"} <= granted, handler
