"""The weekly report's real handler against moto, and its HTML in a real browser."""

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cli.demo.report import alarm_history, chromium, render_png
from cli.demo.storage import environment
from cli.service_answers import answer
from lambdas.shared.report_keys import gpu_hours_key
from lambdas.weekly_report import handler as report_handler
from tests.functional.lambdas.iam import (
    ACCOUNT,
    Principal,
    resolve,
    role_statements,
    run_as_role,
)
from tests.infra.policy.simulate import Request, simulate

RUN = "2026-11-30T08:00:00Z"  # a Monday: the report covers 2026-W48
BUCKET = "reports-bucket"
HANDLER = "lambdas.weekly_report.handler.handler"


def _raised(name: str, day: int) -> dict[str, Any]:
    return {
        "AlarmName": name,
        "AlarmType": "MetricAlarm",
        "Timestamp": datetime(2026, 11, day, 3, tzinfo=UTC),
        "HistoryItemType": "StateUpdate",
        "HistorySummary": "Alarm updated from OK to ALARM",
        "HistoryData": json.dumps({"newState": {"stateValue": "ALARM"}}),
    }


#: CloudWatch's alarm history (moto keeps none): this cluster's, another's, and next week's.
HISTORY = [
    _raised("gpu-insights-train-xid-fatal", 25),
    _raised("gpu-insights-train2-xid-fatal", 25),
    _raised("gpu-insights-train-xid-fatal", 30),
]


@pytest.fixture
def aws() -> Iterator[dict[str, Any]]:
    with mock_aws():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        clients: dict[str, Any] = {s: session.client(s) for s in ("s3", "cloudwatch", "sns", "sqs")}
        clients["s3"].create_bucket(Bucket=BUCKET)
        topic = clients["sns"].create_topic(Name="reports")["TopicArn"]
        queue = clients["sqs"].create_queue(QueueName="inbox")["QueueUrl"]
        arn = clients["sqs"].get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        clients["sns"].subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
        clients.update(topic=topic, queue=queue)
        report_handler._clients.update(
            s3=clients["s3"],
            sns=clients["sns"],
            cloudwatch=clients["cloudwatch"],
        )
        answer(clients["cloudwatch"], "DescribeAlarmHistory", alarm_history(HISTORY))
        yield clients


def _seed(aws: dict[str, Any]) -> None:
    finding = {
        "kind": "ebs_idle_volume",
        "resource": "vol-1",
        "severity": "warning",
        "summary": "vol-1 is idle",
        "recommendation": "delete it",
        "estimated_monthly_waste_usd": 40.0,
        "detected_at": "2026-11-25",
    }
    aws["s3"].put_object(
        Bucket=BUCKET,
        Key="findings/cluster=train/date=2026-11-25/storage.jsonl",
        Body=(json.dumps(finding) + "\n{broken\n").encode(),
    )
    aws["s3"].put_object(
        Bucket=BUCKET,
        Key="findings/cluster=train/date=2026-12-01/storage.jsonl",
        Body=json.dumps({**finding, "resource": "vol-next-week"}).encode(),
    )
    # The GPU analyzer's table of the day: the report's only source of GPU-hours.
    aws["s3"].put_object(
        Bucket=BUCKET,
        Key="reports/cluster=train/date=2026-11-24/gpu-hours.json",
        Body=json.dumps(
            {"classes": {"not_held": 2.0, "held_working": 3.0, "held_not_working": 1.0}}
        ).encode(),
    )
    aws["cloudwatch"].put_metric_data(
        Namespace="GpuInsights",
        MetricData=[
            {
                "MetricName": name,
                "Dimensions": [{"Name": "ClusterName", "Value": "train"}],
                "Timestamp": datetime(2026, 11, 24, h, tzinfo=UTC),
                "Value": value,
            }
            for h in range(6)
            for name, value in (
                ("gpu_power_utilization", 40.0),
                ("gpu_allocated_power_utilization", 40.0),
            )
        ],
    )


def _run(aws: dict[str, Any]) -> dict[str, Any]:
    env = {
        "CLUSTER_NAME": "train",
        "REPORT_BUCKET": BUCKET,
        "TOPIC_ARN": aws["topic"],
        "EXPORTER_INTERVAL_SECONDS": "3600",
        # The stack's: the report reads each of its alarms' history by name.
        "ALARM_KIND_NAMES": "gpu-insights-train-xid-fatal",
    }
    with environment(env):
        return report_handler.handler({"time": RUN}, None)


def _as_role(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> tuple[Principal, list[str]]:
    """The handler's clients become the report role's; returns the principal and the S3 keys
    (and listing prefixes) the run reads, recorded once botocore has validated each call."""
    physical = {
        "ReportBucket": {"Ref": BUCKET, "Arn": f"arn:aws:s3:::{BUCKET}"},
        "ReportTopic": {"Ref": aws["topic"]},
    }
    principal = run_as_role(
        resolve(role_statements(templates, HANDLER), physical), monkeypatch, "weekly-report"
    )
    for service in ("s3", "sns", "cloudwatch"):
        monkeypatch.setitem(report_handler._clients, service, principal.role(service))
    answer(principal.role("cloudwatch"), "DescribeAlarmHistory", alarm_history(HISTORY))
    reads: list[str] = []
    for operation, field in (
        ("GetObject", "Key"),
        ("HeadObject", "Key"),
        ("ListObjectsV2", "Prefix"),
    ):
        principal.role("s3").meta.events.register(
            f"before-parameter-build.s3.{operation}",
            lambda params, field=field, **_: reads.append(params[field]),
        )
    return principal, reads


def test_report_is_written_by_iso_week_and_the_summary_sent_once(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run as the report's role, with moto's IAM authorization on (limits:
    tests/functional/lambdas/iam.py)."""
    _seed(aws)
    principal, _ = _as_role(aws, templates, monkeypatch)
    first = _run(aws)
    assert first["week"] == "2026-W48"
    assert first["key"] == "reports/cluster=train/week=2026-W48/report.html"
    assert (first["findings"], first["malformed_finding_lines"], first["summary_sent"]) == (
        1,
        1,
        True,
    )
    s3 = principal.admin("s3")
    document = json.loads(
        s3.get_object(Bucket=BUCKET, Key="reports/cluster=train/week=2026-W48/report.json")[
            "Body"
        ].read()
    )
    # The day's attributed GPU-hours, by class; the power mean is the exporter's.
    assert document["gpu_hours"] == 6.0
    assert (document["held_not_working_gpu_hours"], document["lost_or_faulted_gpu_hours"]) == (
        1.0,
        0.0,
    )
    assert document["power_utilization"] == 40.0
    assert document["storage_waste_usd"] == 40.0  # next week's file is not this week's
    assert document["alarms"] == [
        {"alarm": "gpu-insights-train-xid-fatal", "time": "2026-11-25 03:00"}
    ]
    second = _run(aws)  # a retry of the same week
    assert second["summary_sent"] is False
    sqs = principal.admin("sqs")
    messages = sqs.receive_message(QueueUrl=aws["queue"], MaxNumberOfMessages=10)["Messages"]
    (message,) = [json.loads(m["Body"]) for m in messages]
    assert message["Subject"] == "GPU week 2026-W48: train"
    assert "[warning] ebs_idle_volume: vol-1 is idle" in message["Message"]


def test_every_key_the_report_reads_may_be_listed_so_a_missing_one_is_404(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """S3 answers a missing key with 404 only where the role may list it, else 403
    (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html, Permissions), and
    moto does not model that: so every key the report reads (most may be missing: last week's
    report, the week's job costs, the summary marker) is put to AWS's policy logic
    (@cloud-copilot/iam-simulate) as a ListBucket of the report bucket with that key as
    s3:prefix, against the role's synthesized policy; the same request on another bucket is
    denied."""
    _seed(aws)
    principal, reads = _as_role(aws, templates, monkeypatch)
    _run(aws)
    assert {r.split("/", 1)[0] for r in reads} == {"findings", "reports"}
    assert len(reads) >= 7 + 3  # a listing a day, the job costs, last week's report, the marker
    policy = {"Version": "2012-10-17", "Statement": principal.statements}
    keys = sorted(set(reads))
    verdicts = simulate(
        [
            Request(
                name=f"{bucket}/{key}",
                principal=f"arn:aws:sts::{ACCOUNT}:assumed-role/weekly-report/lambda",
                action="s3:ListBucket",
                resource=f"arn:aws:s3:::{bucket}",
                account_id=ACCOUNT,
                context={"s3:prefix": key},
                identity_policies=[policy],
            )
            for key in keys
            for bucket in (BUCKET, "another-teams-bucket")
        ]
    )
    assert {k for k, v in verdicts.items() if v == "Allowed"} == {f"{BUCKET}/{k}" for k in keys}
    assert {v for k, v in verdicts.items() if k.startswith("another")} == {"ImplicitlyDenied"}


def test_a_bad_finding_line_and_corrupt_job_costs_are_skipped_and_counted(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A string waste figure and a training-jobs.json that is not JSON: before, each aborted
    the report with a TypeError or a JSONDecodeError."""
    _seed(aws)
    bad = {"kind": "ebs_idle_volume", "resource": "vol-2", "estimated_monthly_waste_usd": "40"}
    aws["s3"].put_object(
        Bucket=BUCKET,
        Key="findings/cluster=train/date=2026-11-26/storage.jsonl",
        Body=json.dumps(bad).encode(),
    )
    aws["s3"].put_object(
        Bucket=BUCKET,
        Key="reports/cluster=train/date=2026-11-29/training-jobs.json",
        Body=b'{"llm": {"dollars": 12',
    )
    principal, _ = _as_role(aws, templates, monkeypatch)
    result = _run(aws)
    assert (result["findings"], result["malformed_finding_lines"]) == (1, 2)
    document = json.loads(
        principal.admin("s3")
        .get_object(Bucket=BUCKET, Key="reports/cluster=train/week=2026-W48/report.json")["Body"]
        .read()
    )
    assert document["storage_waste_usd"] == 40.0
    assert (document["costliest_jobs"], document["malformed_job_costs"]) == ([], 1)


def test_a_report_bucket_that_fails_fails_the_run_loudly(aws: dict[str, Any]) -> None:
    env = {"CLUSTER_NAME": "train", "REPORT_BUCKET": "no-such-bucket", "TOPIC_ARN": aws["topic"]}
    with environment(env), pytest.raises(Exception, match="NoSuchBucket"):
        report_handler.handler({"time": RUN}, None)
    assert "Messages" not in aws["sqs"].receive_message(QueueUrl=aws["queue"])


@pytest.mark.skipif(
    chromium() is None, reason="Chromium is not installed (Debian: apt-get install chromium)"
)
def test_the_html_renders_in_headless_chromium(aws: dict[str, Any], tmp_path: Path) -> None:
    _seed(aws)
    summary = _run(aws)
    page = tmp_path / "report.html"
    page.write_bytes(aws["s3"].get_object(Bucket=BUCKET, Key=summary["key"])["Body"].read())
    png = tmp_path / "report.png"
    assert render_png(page, png, width=420, height=1600)  # a phone-sized window
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000  # a page with text and charts, not a blank canvas


def test_the_week_s_findings_are_those_of_the_runs_that_looked_at_it(aws: dict[str, Any]) -> None:
    """A daily run analyses the day before it and files its findings under its own date: the
    Monday after the week (2026-11-30, its 07:00 run, before the report's 08:00) holds the
    week's Sunday; the week's own Monday (2026-11-23) holds the Sunday before the week."""
    _seed(aws)
    for day, resource in (("2026-11-23", "vol-last-sunday"), ("2026-11-30", "vol-this-sunday")):
        aws["s3"].put_object(
            Bucket=BUCKET,
            Key=f"findings/cluster=train/date={day}/training.jsonl",
            Body=json.dumps(
                {
                    "kind": "gpu_held_not_working",
                    "resource": resource,
                    "severity": "warning",
                    "summary": f"{resource} held",
                    "recommendation": "release it",
                    "estimated_monthly_waste_usd": 10.0,
                }
            ).encode(),
        )
    result = _run(aws)
    assert result["findings"] == 2  # vol-1 (Wednesday's run) and the week's Sunday
    document = json.loads(
        aws["s3"]
        .get_object(Bucket=BUCKET, Key="reports/cluster=train/week=2026-W48/report.json")["Body"]
        .read()
    )
    assert "vol-this-sunday" in json.dumps(document)
    assert "vol-last-sunday" not in json.dumps(document)


def test_the_week_s_serving_tables_are_read_once_each_and_priced(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two days of the week's serving tables and one of the week before, read as the report's
    role: the JSON's serving object, the CSV and the summary's line; each of the fourteen
    days' keys read once."""
    _seed(aws)
    row = {
        "namespace": "ml", "workload": "chat", "kind": "Deployment", "model": "llama-3-8b",
        "replicas": 2, "gpu_hours": 48.0, "cost_usd": 192.0, "requests": 1e4,
        "prompt_tokens": 1e6, "generation_tokens": 64e6, "mean_power_percent": None,
        "mean_kv_cache_percent": None, "max_waiting": None, "preemptions": 0.0,
        "ttft_p99_s": None,
    }  # fmt: skip
    for day, tokens in (("2026-11-24", 64e6), ("2026-11-25", 64e6), ("2026-11-17", 48e6)):
        aws["s3"].put_object(
            Bucket=BUCKET,
            Key=f"reports/cluster=train/date={day}/serving.json",
            Body=json.dumps({"day": day, "rows": [{**row, "generation_tokens": tokens}]}).encode(),
        )
    principal, reads = _as_role(aws, templates, monkeypatch)
    _run(aws)
    serving_reads = [r for r in reads if r.endswith("/serving.json")]
    assert len(serving_reads) == len(set(serving_reads)) == 14
    s3 = principal.admin("s3")
    prefix = "reports/cluster=train/week=2026-W48/"
    document = json.loads(s3.get_object(Bucket=BUCKET, Key=prefix + "report.json")["Body"].read())
    (model,) = document["serving"]["models"]
    assert (model["cost_usd"], model["usd_per_million_output_tokens"]) == (384.0, 3.0)
    assert model["last_week_usd_per_million_output_tokens"] == 4.0
    assert len(document["serving"]["missing_days"]) == 5
    table = s3.get_object(Bucket=BUCKET, Key=prefix + "serving.csv")["Body"].read().decode()
    assert '"train","2026-W48","ml","chat","Deployment","llama-3-8b",2,96.0,384.0' in table
    messages = principal.admin("sqs").receive_message(QueueUrl=aws["queue"])["Messages"]
    assert (
        "Serving: 96.0 GPU-hours ($384); llama-3-8b $3.00 per million output tokens."
        in (json.loads(messages[0]["Body"])["Message"])
    )


def test_a_week_without_serving_tables_writes_no_serving_file_or_line(aws: dict[str, Any]) -> None:
    _seed(aws)
    _run(aws)
    prefix = "reports/cluster=train/week=2026-W48/"
    listed = aws["s3"].list_objects_v2(Bucket=BUCKET, Prefix=prefix)["Contents"]
    assert prefix + "serving.csv" not in {o["Key"] for o in listed}
    assert prefix + "failures.csv" in {o["Key"] for o in listed}
    document = json.loads(
        aws["s3"].get_object(Bucket=BUCKET, Key=prefix + "report.json")["Body"].read()
    )
    # No serving object at all: Classic mode writes no tables, and a week that served nothing
    # reads the same in either mode.
    assert document["serving"] == {}
    (message,) = aws["sqs"].receive_message(QueueUrl=aws["queue"])["Messages"]
    assert "Serving" not in json.loads(message["Body"])["Message"]


def _thirty_days_of_four_nodes(aws: dict[str, Any], nodes: list[str]) -> None:
    """30 days of GPU-hour tables before the week's end: each node's GPUs 24 GPU-hours a day."""
    for day in range(30):
        key = gpu_hours_key("train", date(2026, 10, 31) + timedelta(days=day))
        table = {"classes": {"held_working": 96.0}, "seen_by_node": dict.fromkeys(nodes, 24.0)}
        aws["s3"].put_object(Bucket=BUCKET, Key=key, Body=json.dumps(table).encode())


def _week_report(aws: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The W48 report's report.json and report.html, once the report has run."""
    _run(aws)
    prefix = "reports/cluster=train/week=2026-W48/"
    read = aws["s3"].get_object
    document = json.loads(read(Bucket=BUCKET, Key=prefix + "report.json")["Body"].read())
    return document, read(Bucket=BUCKET, Key=prefix + "report.html")["Body"].read().decode()


def test_the_lemon_nodes_of_30_days_are_listed_with_what_to_do(aws: dict[str, Any]) -> None:
    """30 days of GPU-hour tables (four nodes' GPUs, 24 GPU-hours a day each), a failed run on
    one node three weeks before the week and 4 XIDs on it in the week: it holds 5 of the
    fleet's 5 events on a quarter of its GPU-hours, 4x the fleet's rate; its name is escaped."""
    bad, nodes = "ip-10-0-1-17<b>", ["ip-10-0-1-17<b>", "n-2", "n-3", "n-4"]
    _thirty_days_of_four_nodes(aws, nodes)
    failed = {"job": "bert", "at": datetime(2026, 11, 2, 3, tzinfo=UTC).timestamp(),
              "cause": "xid_79", "signature": "s", "nodes": [bad], "gpu_hours": 16.0}  # fmt: skip
    aws["s3"].put_object(
        Bucket=BUCKET,
        Key="reports/cluster=train/date=2026-11-03/training-failures.json",
        Body=json.dumps({"failures": [failed]}).encode(),
    )
    aws["cloudwatch"].put_metric_data(
        Namespace="GpuInsights",
        MetricData=[
            {
                "MetricName": "gpu_xid_errors",
                "Dimensions": [{"Name": "ClusterName", "Value": "train"},
                               {"Name": "NodeName", "Value": bad},
                               {"Name": "XidCode", "Value": "79"}],
                "Timestamp": datetime(2026, 11, 25, 3, tzinfo=UTC),
                "Value": 4.0,
            }
        ],
    )  # fmt: skip
    document, html = _week_report(aws)
    (lemon,) = document["lemons"]["lemons"]
    assert (lemon["node"], lemon["score"], lemon["failures"], lemon["xids"]) == (bad, 4.0, 1, 4)
    assert lemon["gpu_hours"] == 720.0
    assert "AcceleratedHardwareReady=False" in lemon["action"]
    assert 'id="lemon-nodes"' in html
    assert "ip-10-0-1-17&lt;b&gt;" in html
    assert "ip-10-0-1-17<b>" not in html


def test_the_fail_slow_pages_that_named_a_node_make_it_a_lemon(aws: dict[str, Any]) -> None:
    """The notifier's records of fail-slow culprits (fail_slow_culprits, one per page:
    lambdas/notifier/culprit_record.py) over the 30 days: 2 on n-2 three weeks before the week
    and 1 in it, none elsewhere, are 3 of the fleet's 3 events on a quarter of its GPU-hours,
    4x the fleet's rate; no XID, so no node condition for auto repair. A culprit on a node no
    table saw is named as not scored."""
    _thirty_days_of_four_nodes(aws, ["n-1", "n-2", "n-3", "n-4"])
    for node, day, count in (("n-2", 2, 2.0), ("n-2", 25, 1.0), ("n-9", 25, 1.0)):
        aws["cloudwatch"].put_metric_data(
            Namespace="GpuInsights",
            MetricData=[
                {
                    "MetricName": "fail_slow_culprits",
                    "Dimensions": [{"Name": "ClusterName", "Value": "train"},
                                   {"Name": "NodeName", "Value": node}],
                    "Timestamp": datetime(2026, 11, day, 3, tzinfo=UTC),
                    "Value": count,
                }
            ],
        )  # fmt: skip
    document, html = _week_report(aws)
    (lemon,) = document["lemons"]["lemons"]
    assert (lemon["node"], lemon["score"], lemon["fail_slows"]) == ("n-2", 4.0, 3)
    assert (lemon["failures"], lemon["xids"], lemon["events"]) == (0, 0, 3)
    assert "EKS node auto repair (AcceleratedHardwareReady) will not act" in lemon["action"]
    assert document["lemons"]["refused"] == ["node n-9: 0.0 GPU-hours (must be above 0)"]
    assert ">Fail-slows<" in html
