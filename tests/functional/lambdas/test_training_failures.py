"""A week of failed training runs, explained: the training analyzer's real handler, run as its
role (the policy synthesized for it, moto's IAM authorization on: tests/functional/lambdas/
iam.py), reads each failed job's pods' and nodes' Container Insights logs in moto and names the
cause, citing the lines; the weekly report's real handler then counts the causes per job and
per node and groups the recurring signatures, priced.

The week: a job dies of CUDA out of memory, one of an XID on its GPU (its ranks' NCCL timeout
follows), a node's kernel OOM killer takes a job's process, and a job fails twice on the same
node with the same disk-full error. Every log line is the sourced corpus's
(tests/data/failure_logs/corpus.json), in the records Fluent Bit writes for Container
Insights (its application records as lambdas/training_analyzer/failure_causes/lines.py reads
them; the host records are the corpus's own JSON records)."""

import csv
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cdk.function_configs import report_config, training_config
from cdk.settings import Settings
from cli.demo.report import alarm_history
from cli.demo.storage import DEMO_CLUSTER, REPORT_BUCKET, environment, run_analyzer
from cli.demo.training import rank_query_results
from cli.service_answers import answer
from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_JOB,
    DIM_NODE,
    NAMESPACE_TRAINING,
    PROP_POD_NAME,
    PROP_RANK,
    TrainingMetric,
    container_insights_log_group_prefix,
    training_log_group,
)
from lambdas.shared.aws_clients import client
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.shared.report_keys import failures_key
from lambdas.training_analyzer import handler as training_handler
from lambdas.weekly_report import handler as report_handler
from lambdas.weekly_report.handler import report_prefix
from lambdas.weekly_report.week import epoch, report_week
from tests.functional.lambdas.iam import resolve, role_statements, run_as_role
from tests.unit.reference_data import failure_log_corpus

CLUSTER = DEMO_CLUSTER
HANDLER = "lambdas.training_analyzer.handler.handler"
PHYSICAL = {"ReportBucket": {"Ref": REPORT_BUCKET, "Arn": f"arn:aws:s3:::{REPORT_BUCKET}"}}
SERVICES = ("s3", "cloudwatch", "events", "logs")
CORPUS = {s.id: s.lines for s in failure_log_corpus()}
GROUPS = container_insights_log_group_prefix(CLUSTER)
#: The deployment: a week's lookback, so the Monday run reads the whole week.
SETTINGS = Settings(
    cluster_name=CLUSTER, lookback_days=7, container_insights_mode=ContainerInsightsMode.CLASSIC
)
PRICE = SETTINGS.gpu_hour_usd
#: The last whole ISO week before now (moto keeps recent metrics), and its Monday-after runs.
WEEK_START = epoch(report_week(datetime.now(UTC))[0])
WEEK_END = WEEK_START + 7 * 86_400
ANALYZER_AT = WEEK_END + 7 * 3600
REPORT_AT = WEEK_END + 8 * 3600
CONTAINER = "0f32894de86edf3d3832702af794874ef8d400b4969acdea4976b12040756e0d"
#: The kernel OOM node: its host record names it by its short name (the corpus's record).
OOM_NODE = "ip-10-0-1-23.ec2.internal"


def _hour(day: int, hour: int) -> float:
    return WEEK_START + day * 86_400 + hour * 3600


#: job -> (its ranks' node, its ranks, its stepping hours, its failed hours)
JOBS: dict[str, tuple[str, int, list[float], list[float]]] = {
    "llm-cuda-oom": (
        "ip-10-0-4-11.ec2.internal",
        2,
        [_hour(1, h) for h in range(6)],
        [_hour(1, 5)],
    ),
    "llm-xid": ("ip-10-0-4-12.ec2.internal", 1, [_hour(2, h) for h in range(4)], [_hour(2, 3)]),
    "bert-host-oom": (OOM_NODE, 1, [_hour(3, 10), _hour(3, 11)], [_hour(3, 11)]),
    "vit-disk-full": (
        "ip-10-0-4-14.ec2.internal",
        1,
        [_hour(4, h) for h in (0, 1, 2, 5, 6)],
        [_hour(4, 2), _hour(4, 6)],
    ),
}


def pod(job: str, rank: int) -> str:
    return f"{job}-worker-{rank}"


def _app(node: str, line: str) -> str:
    """An application record as Fluent Bit's kubernetes filter sends it."""
    return json.dumps(
        {"log": line + "\n", "stream": "stderr", "kubernetes": {"pod_name": "p", "host": node}}
    )


#: Each failed hour's lines: (log group, rank's pod or None for the node's host log, records).
def _failure_lines(job: str, node: str) -> list[tuple[str, int | None, list[str]]]:
    if job == "llm-cuda-oom":
        return [("application", 0, [_app(node, x) for x in CORPUS["cuda-oom-torch-2x"]])]
    if job == "llm-xid":
        return [
            ("application", 0, [_app(node, x) for x in CORPUS["nccl-timeout-allreduce-2025"]]),
            ("host", None, list(CORPUS["xid-48-host-log-group"])),
        ]
    if job == "bert-host-oom":
        return [("host", None, list(CORPUS["global-oom-host-log-group"]))]
    return [("application", 0, [_app(node, x) for x in CORPUS["disk-full-torch-save"]])]


def _seed(admin: dict[str, Any]) -> None:
    cloudwatch, logs = admin["cloudwatch"], admin["logs"]
    data, documents = [], []
    for job, (node, ranks, stepping, failed) in JOBS.items():
        dims = [{"Name": DIM_CLUSTER, "Value": CLUSTER}, {"Name": DIM_JOB, "Value": job}]
        for at in stepping:
            data.append(
                {
                    "MetricName": str(TrainingMetric.STEPS),
                    "Dimensions": dims,
                    "Timestamp": datetime.fromtimestamp(at + 600, UTC),
                    "Value": 1000.0,
                }
            )
            # What the emitter's EMF puts in the training log group, per rank: the rank
            # query's fields (the job, its rank, steps and step time, node and pod).
            documents += [
                (at + 600, {DIM_JOB: job, PROP_RANK: r, "steps": 1000,
                            "step_time_seconds": 1.5, DIM_NODE: node, PROP_POD_NAME: pod(job, r)})
                for r in range(ranks)
            ]  # fmt: skip
        for at in failed:
            data.append(
                {
                    "MetricName": str(TrainingMetric.JOB_FAILED),
                    "Dimensions": dims,
                    "Timestamp": datetime.fromtimestamp(at + 1800, UTC),
                    "Value": 1.0,
                }
            )
    cloudwatch.put_metric_data(Namespace=NAMESPACE_TRAINING, MetricData=data)
    group = training_log_group(CLUSTER)
    logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName="agent")
    logs.put_log_events(
        logGroupName=group,
        logStreamName="agent",
        logEvents=[
            {"timestamp": int(t * 1000), "message": json.dumps(d)}
            for t, d in sorted(documents, key=lambda x: x[0])
        ],
    )
    for kind in ("application", "host", "dataplane"):
        logs.create_log_group(logGroupName=f"{GROUPS}/{kind}")
    for job, (node, _, _, failed) in JOBS.items():
        for kind, rank, records in _failure_lines(job, node):
            stream = (
                f"{node}.host.dmesg"
                if rank is None
                else f"{node}-application.var.log.containers.{pod(job, rank)}_ml_pytorch-"
                f"{CONTAINER}.log"
            )
            logs.create_log_stream(logGroupName=f"{GROUPS}/{kind}", logStreamName=stream)
            events = [
                {"timestamp": int((at + 1800 + i) * 1000), "message": record}
                for at in failed
                for i, record in enumerate(records)
            ]
            logs.put_log_events(
                logGroupName=f"{GROUPS}/{kind}", logStreamName=stream, logEvents=events
            )


@pytest.fixture
def week() -> Iterator[dict[str, Any]]:
    with mock_aws():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        made: dict[str, Any] = {s: client(s, session=session) for s in (*SERVICES, "sns")}
        made["s3"].create_bucket(Bucket=REPORT_BUCKET)
        made["topic"] = made["sns"].create_topic(Name="reports")["TopicArn"]
        _seed(made)
        yield made


@pytest.fixture
def analyzed(
    week: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The analyzer's Monday run over the week, as its role."""
    statements = resolve(role_statements(templates, HANDLER), PHYSICAL)
    principal = run_as_role(statements, monkeypatch, "training-analyzer")
    for service in SERVICES:
        monkeypatch.setitem(training_handler._clients, service, principal.role(service))
    rank_query_results(principal.role("logs"), principal.admin("logs"))
    env = training_config(SETTINGS, report_bucket=REPORT_BUCKET).environment()
    summary, findings = run_analyzer(
        training_handler.handler, env, principal.admin("s3"), at=ANALYZER_AT
    )
    # moto's IAM is on: the test reads and the report runs with the admin's clients.
    for service in ("s3", "sns", "cloudwatch"):
        week[service] = principal.admin(service)
    return summary, findings


def test_each_failed_job_gets_its_cause_with_the_lines_that_decided_it(
    week: dict[str, Any], analyzed: tuple[dict[str, Any], list[dict[str, Any]]]
) -> None:
    summary, findings = analyzed
    assert summary["skipped"] == 0
    assert summary["failures_read"] == 5
    causes = {f["resource"]: f for f in findings if f["kind"] == "training_failure_cause"}
    assert sorted(causes) == [f"job/{job}" for job in sorted(JOBS)]

    def cited(job: str) -> list[str]:
        return [line["text"] for line in causes[f"job/{job}"]["evidence"]["lines"]]

    oom = causes["job/llm-cuda-oom"]
    assert (oom["evidence"]["cause"], oom["severity"]) == ("cuda_out_of_memory", "warning")
    assert cited("llm-cuda-oom") == [CORPUS["cuda-oom-torch-2x"][0]]
    assert oom["evidence"]["pods"] == ["llm-cuda-oom-worker-0", "llm-cuda-oom-worker-1"]
    assert oom["evidence"]["nodes"] == ["ip-10-0-4-11.ec2.internal"]
    # Linked to the job's own finding of the run: its failures counted.
    assert "training_job_failures job/llm-cuda-oom" in oom["related"]
    xid = causes["job/llm-xid"]
    assert (xid["evidence"]["cause"], xid["severity"]) == ("gpu_xid", "critical")
    assert xid["evidence"]["detail"]["xid"] == "48"
    assert xid["evidence"]["also_seen"] == ["nccl_timeout"]
    (xid_line,) = cited("llm-xid")
    assert "Xid (PCI:0000:07:00): 48" in xid_line
    host = causes["job/bert-host-oom"]
    assert host["evidence"]["cause"] == "kernel_oom_killer"
    assert "Out of memory: Killed process 15784 (python3)" in cited("bert-host-oom")[0]
    twice = causes["job/vit-disk-full"]
    assert twice["evidence"]["cause"] == "disk_full"
    assert cited("vit-disk-full") == ["OSError: [Errno 28] No space left on device"]
    assert [f["failed_hour"] for f in twice["evidence"]["failures"]] == [
        datetime.fromtimestamp(at, UTC).isoformat() for at in JOBS["vit-disk-full"][3]
    ]
    signatures = {f["signature"] for f in twice["evidence"]["failures"]}
    assert len(signatures) == 1

    # The day's file the report reads.
    day = datetime.fromtimestamp(ANALYZER_AT, UTC).date()
    written = json.loads(
        week["s3"].get_object(Bucket=REPORT_BUCKET, Key=failures_key(CLUSTER, day))["Body"].read()
    )
    by_job = {(r["job"], r["at"]): r for r in written["failures"]}
    # The host record names the node by its short name: counted as the pod's node.
    assert by_job[("bert-host-oom", _hour(3, 11))]["nodes"] == [OOM_NODE]
    # Two ranks x the six hours it stepped, the failed hour included.
    assert by_job[("llm-cuda-oom", _hour(1, 5))]["gpu_hours"] == 12.0
    assert by_job[("vit-disk-full", _hour(4, 2))]["gpu_hours"] == 3.0
    assert by_job[("vit-disk-full", _hour(4, 6))]["gpu_hours"] == 2.0


def test_the_report_counts_causes_per_job_and_node_and_prices_recurring_signatures(
    week: dict[str, Any],
    analyzed: tuple[dict[str, Any], list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The Monday report of that week, with the deployment's price.
    for service in ("s3", "sns", "cloudwatch"):
        monkeypatch.setitem(report_handler._clients, service, week[service])
    answer(week["cloudwatch"], "DescribeAlarmHistory", alarm_history([]))  # moto keeps none
    report_env = report_config(
        SETTINGS, report_bucket=REPORT_BUCKET, topic_arn=week["topic"]
    ).environment()
    with environment(report_env):
        done = report_handler.handler(
            {"time": datetime.fromtimestamp(REPORT_AT, UTC).isoformat()}, None
        )
    prefix = report_prefix(CLUSTER, done["week"])
    document = json.loads(
        week["s3"].get_object(Bucket=REPORT_BUCKET, Key=prefix + "report.json")["Body"].read()
    )
    failures = document["failures"]
    assert failures["failures"] == 5
    assert failures["gpu_hours"] == 12.0 + 4.0 + 2.0 + 5.0
    assert failures["usd"] == pytest.approx(23.0 * PRICE, abs=0.01)
    assert failures["by_job"] == [
        {"job": "vit-disk-full", "cause": "disk_full", "failures": 2, "gpu_hours": 5.0,
         "usd": round(5.0 * PRICE, 2)},
        {"job": "llm-cuda-oom", "cause": "cuda_out_of_memory", "failures": 1, "gpu_hours": 12.0,
         "usd": round(12.0 * PRICE, 2)},
        {"job": "llm-xid", "cause": "gpu_xid", "failures": 1, "gpu_hours": 4.0,
         "usd": round(4.0 * PRICE, 2)},
        {"job": "bert-host-oom", "cause": "kernel_oom_killer", "failures": 1, "gpu_hours": 2.0,
         "usd": round(2.0 * PRICE, 2)},
    ]  # fmt: skip
    nodes = {(n["node"], n["cause"]): (n["failures"], n["jobs"]) for n in failures["by_node"]}
    assert nodes == {
        ("ip-10-0-4-14.ec2.internal", "disk_full"): (2, ["vit-disk-full"]),
        ("ip-10-0-4-11.ec2.internal", "cuda_out_of_memory"): (1, ["llm-cuda-oom"]),
        ("ip-10-0-4-12.ec2.internal", "gpu_xid"): (1, ["llm-xid"]),
        (OOM_NODE, "kernel_oom_killer"): (1, ["bert-host-oom"]),
    }
    top = failures["signatures"][0]
    assert (top["cause"], top["failures"], top["jobs"], top["nodes"]) == (
        "disk_full",
        2,
        ["vit-disk-full"],
        ["ip-10-0-4-14.ec2.internal"],
    )
    assert (top["first_seen"], top["last_seen"]) == (
        datetime.fromtimestamp(_hour(4, 2), UTC).strftime("%Y-%m-%d %H:%M"),
        datetime.fromtimestamp(_hour(4, 6), UTC).strftime("%Y-%m-%d %H:%M"),
    )
    assert top["suspect"] == "none"  # one job on one node: nothing to blame yet
    assert (top["gpu_hours"], top["usd"]) == (5.0, round(5.0 * PRICE, 2))
    assert len(failures["signatures"]) == 4
    html = week["s3"].get_object(Bucket=REPORT_BUCKET, Key=prefix + "report.html")["Body"]
    assert '<h2 id="failures">Training failures</h2>' in html.read().decode()
    rows = (
        week["s3"].get_object(Bucket=REPORT_BUCKET, Key=prefix + "failures.csv")["Body"]
        .read().decode().splitlines()
    )  # fmt: skip
    assert rows[0] == "cluster,week,job,failed_hour,cause,nodes,signature,gpu_hours,usd"
    assert len(rows) == 1 + 5
    first = next(csv.reader([rows[1]]))
    assert first[:6] == [
        CLUSTER,
        done["week"],
        "llm-cuda-oom",
        datetime.fromtimestamp(_hour(1, 5), UTC).strftime("%Y-%m-%d %H:%M"),
        "cuda_out_of_memory",
        "ip-10-0-4-11.ec2.internal",
    ]
    assert first[-2:] == ["12.0", str(round(12.0 * PRICE, 2))]
