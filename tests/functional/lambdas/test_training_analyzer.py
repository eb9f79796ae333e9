"""The training analyzer's real handler against moto, fed by the real emitter, run as its
role: the policy synthesized for it, with moto's IAM authorization on (limits: see
tests/functional/lambdas/iam.py)."""

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from cli.demo.storage import END, REPORT_BUCKET, environment
from cli.demo.training import (
    CLUSTER,
    ENV,
    JOBS,
    RANKS,
    rank_query_results,
    run_training_analyzer,
    seed,
)
from cli.demo.week import START as WEEK_START
from cli.demo.week import WeekPlan, WeekSeeder
from gpu_insights_agent.contract.metrics import training_log_group
from lambdas.shared.aws_clients import client
from lambdas.shared.events import attributed_day
from lambdas.shared.publisher import PublishError
from lambdas.shared.report_keys import gpu_hours_key
from lambdas.training_analyzer import handler as training_handler
from tests.functional.lambdas.iam import Principal, resolve, role_statements, run_as_role, without

HANDLER = "lambdas.training_analyzer.handler.handler"
PHYSICAL = {"ReportBucket": {"Ref": REPORT_BUCKET, "Arn": f"arn:aws:s3:::{REPORT_BUCKET}"}}
SERVICES = ("s3", "cloudwatch", "events", "logs")

#: The analyzer's run the morning after the jobs' day (the default schedule's 07:00): it
#: analyzes the whole UTC day they ran in (handler.training_window), as it attributes it.
RUN_AT = END - END % 86_400 + 86_400 + 7 * 3600


@pytest.fixture
def seeded() -> Iterator[dict[str, Any]]:
    with mock_aws():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        made: dict[str, Any] = {s: client(s, session=session) for s in (*SERVICES, "sqs")}
        made["s3"].create_bucket(Bucket=REPORT_BUCKET)
        seed(made)
        # Every finding event the default bus receives, to count them.
        queue = made["sqs"].create_queue(QueueName="finding-events")["QueueUrl"]
        arn = made["sqs"].get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        made["events"].put_rule(Name="findings", EventPattern='{"source": ["gpu-insights"]}')
        made["events"].put_targets(Rule="findings", Targets=[{"Id": "q", "Arn": arn}])
        made["queue"] = queue
        yield made


def _as_role(
    templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch, drop: str | None = None
) -> tuple[Principal, dict[str, Any]]:
    statements = resolve(role_statements(templates, HANDLER), PHYSICAL)
    if drop:
        statements = without(statements, drop)
    principal = run_as_role(statements, monkeypatch, "training-analyzer")
    return principal, {s: principal.role(s) for s in SERVICES}


def _events(principal: Principal, queue: str) -> int:
    """The events on the queue since the last call: each is deleted once counted, or it would
    come back after SQS's 30 s visibility timeout and be counted again by a slow test."""
    sqs = principal.admin("sqs")
    messages = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", [])
    for message in messages:
        sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
    return len(messages)


def test_the_five_simulated_jobs_get_exactly_their_findings(
    seeded: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    principal, clients = _as_role(templates, monkeypatch)
    summary, findings = run_training_analyzer(clients, principal.admin("logs"), at=RUN_AT)
    assert summary["jobs"] == len(JOBS)
    assert summary["skipped"] == 0
    assert RANKS == 2
    assert summary["gpu_hours"] == 2 * (8 + 8 + 8 + 8 + 6)  # two ranks; the flaky job ran 6 h
    found = sorted((f["resource"], f["kind"]) for f in findings)
    assert found == [
        ("job/bert-data-bound", "training_data_bound"),
        ("job/bert-data-bound", "training_low_goodput"),
        ("job/gpt-regressing", "training_throughput_regression"),
        ("job/llama-slow-checkpoint", "training_low_goodput"),
        ("job/llama-slow-checkpoint", "training_slow_checkpoint"),
        ("job/vit-flaky", "training_failure_cause"),
        ("job/vit-flaky", "training_job_failures"),
        ("job/vit-flaky", "training_low_goodput"),
    ]
    goodput = {f["resource"]: f for f in findings if f["kind"] == "training_low_goodput"}
    # Its largest badput each: waiting for data, saving checkpoints, redoing the steps after
    # the checkpoint its second run resumed from.
    assert {
        r: (
            f["evidence"]["goodput"],
            f["evidence"]["largest_badput"],
            f["evidence"]["steps_redone"],
        )
        for r, f in goodput.items()
    } == {
        "job/bert-data-bound": (0.5971, "data_loading", 0.0),
        "job/llama-slow-checkpoint": (0.7703, "checkpoint_save", 0.0),
        "job/vit-flaky": (0.7899, "progress_lost", 1780.0),
    }
    by_kind = {f["kind"]: f for f in findings if f["kind"] != "training_low_goodput"}
    # Its cause is read from Container Insights' log groups, which this cluster lacks: said.
    cause = by_kind["training_failure_cause"]
    assert (cause["severity"], cause["evidence"]["cause"]) == ("info", "unknown")
    assert cause["evidence"]["log_groups_missing"] == [
        f"/aws/containerinsights/{CLUSTER}/{kind}" for kind in ("application", "dataplane", "host")
    ]
    assert cause["related"] == [
        "training_job_failures job/vit-flaky",
        "training_low_goodput job/vit-flaky",
    ]
    bound = by_kind["training_data_bound"]["evidence"]
    assert bound["data_wait_share"] == pytest.approx(0.4, abs=0.01)
    assert by_kind["training_job_failures"]["evidence"]["failures"] == 2.0
    drop = by_kind["training_throughput_regression"]["evidence"]["drop"]
    assert drop == pytest.approx(1 - 2.0 / 3.0, abs=0.02)  # steps went from 2 s to 3 s
    assert by_kind["training_slow_checkpoint"]["evidence"]["mean_checkpoint_save_seconds"] == 420.0
    # The weekly report's costliest jobs read this file; the role may write it.
    key = summary["key"].replace("findings/", "reports/").rsplit("/", 1)[0]
    costs = principal.admin("s3").get_object(Bucket=REPORT_BUCKET, Key=f"{key}/training-jobs.json")
    assert sorted(json.loads(costs["Body"].read())) == sorted(j.name for j in JOBS)
    # And the jobs' goodput over the attributed day, keyed by that day (the role may write
    # it): the day before the run's, the one-day lookback's whole day.
    day = attributed_day(RUN_AT)[2]
    key = f"reports/cluster={CLUSTER}/date={day.isoformat()}/goodput.json"
    body = json.loads(
        principal.admin("s3").get_object(Bucket=REPORT_BUCKET, Key=key)["Body"].read()
    )
    assert body["day"] == day.isoformat()
    assert sorted(j["job"] for j in body["jobs"]) == sorted(j.name for j in JOBS)
    assert _events(principal, seeded["queue"]) == len(findings)


def test_a_denied_costs_write_fails_the_run_before_any_event_or_count(
    seeded: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the statement that lets it write job costs, the run fails with AccessDenied,
    and since Lambda retries a failed run twice, nothing that is not idempotent went out."""
    principal, clients = _as_role(templates, monkeypatch, drop="WriteJobCosts")
    with pytest.raises(PublishError, match=r"training-jobs\.json.*AccessDenied"):
        run_training_analyzer(clients, principal.admin("logs"), at=RUN_AT)
    assert _events(principal, seeded["queue"]) == 0
    counts = principal.admin("cloudwatch").list_metrics(Namespace="GpuInsights/Findings")
    assert counts["Metrics"] == []


def test_without_the_failure_logs_grant_the_failed_job_is_named_and_nothing_else_lost(
    seeded: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The role without ReadFailureLogs: the failed job's read is refused (AccessDenied), its
    analysis_error names it, and the run's other findings are all there."""
    principal, clients = _as_role(templates, monkeypatch, drop="ReadFailureLogs")
    summary, findings = run_training_analyzer(clients, principal.admin("logs"), at=RUN_AT)
    assert summary["skipped"] == 1
    (error,) = [f for f in findings if f["kind"] == "analysis_error"]
    assert error["resource"] == "job/vit-flaky"
    assert "AccessDenied" in error["summary"]
    assert sorted((f["resource"], f["kind"]) for f in findings if f is not error) == [
        ("job/bert-data-bound", "training_data_bound"),
        ("job/bert-data-bound", "training_low_goodput"),
        ("job/gpt-regressing", "training_throughput_regression"),
        ("job/llama-slow-checkpoint", "training_low_goodput"),
        ("job/llama-slow-checkpoint", "training_slow_checkpoint"),
        ("job/vit-flaky", "training_job_failures"),
        ("job/vit-flaky", "training_low_goodput"),
    ]


def test_the_fleet_state_machine_path_writes_the_single_runs_files(
    seeded: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """plan, shards of two jobs (run in reverse, as the Map may), merge, as the training role
    with IAM on: the day's findings, job costs and GPU-hours are byte for byte the single
    run's, and the merge alone publishes (each finding's event once per path)."""
    principal, clients = _as_role(templates, monkeypatch)
    single, findings = run_training_analyzer(clients, principal.admin("logs"), at=RUN_AT)
    s3 = principal.admin("s3")
    day = single["key"].rsplit("/", 1)[0]
    reports = day.replace("findings/", "reports/")
    # The GPU-hours are the whole UTC day before the run's, keyed by it.
    attributed = attributed_day(RUN_AT)[2]
    keys = [
        single["key"],
        f"{reports}/training-jobs.json",
        gpu_hours_key(CLUSTER, attributed),
    ]
    expected = {k: s3.get_object(Bucket=REPORT_BUCKET, Key=k)["Body"].read() for k in keys}
    for key in keys:
        s3.delete_object(Bucket=REPORT_BUCKET, Key=key)
    assert _events(principal, seeded["queue"]) == len(findings)
    event = {"time": datetime.fromtimestamp(RUN_AT, UTC).isoformat()}
    with environment({**ENV, "SHARD_JOBS": "2"}):
        planned = training_handler.handler({**event, "mode": "plan"}, None)
        assert planned["jobs"] == len(JOBS)
        assert [s["count"] for s in planned["shards"]] == [2, 2, 1]
        for item in reversed(planned["shards"]):
            training_handler.handler({**event, "mode": "shard", **item}, None)
        assert _events(principal, seeded["queue"]) == 0  # shards publish nothing
        merged = training_handler.handler({**event, "mode": "merge", **planned}, None)
    assert merged == single
    assert {k: s3.get_object(Bucket=REPORT_BUCKET, Key=k)["Body"].read() for k in keys} == expected
    assert _events(principal, seeded["queue"]) == len(findings)


def test_the_plan_stages_the_jobs_only_with_the_shards_grant(
    seeded: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    principal, clients = _as_role(templates, monkeypatch, drop="WriteAndReadShards")
    training_handler._clients.update(clients)
    rank_query_results(clients["logs"], principal.admin("logs"))
    event = {"time": datetime.fromtimestamp(RUN_AT, UTC).isoformat(), "mode": "plan"}
    with environment(ENV), pytest.raises(ClientError, match=r"AccessDenied.*PutObject"):
        training_handler.handler(event, None)


def test_each_gpu_hour_table_is_the_whole_utc_day_it_is_keyed_by(
    templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default schedule, cron(0 7 * * ? *): Tuesday's 07:00 run attributes Monday
    00:00-24:00 and keys it Monday; Wednesday's, Tuesday. nlp's job starts on Tuesday at 03:00,
    so a window that ended at 07:00 (Monday 07:00 to Tuesday 07:00, keyed Tuesday) would give
    Monday's table none of it and Tuesday's 4 hours of each of its two GPUs."""
    plan = WeekPlan(WEEK_START, nlp_from_hour=24 + 3, lost_at_hour=None)
    with mock_aws():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        admin: dict[str, Any] = {s: client(s, session=session) for s in SERVICES}
        admin["s3"].create_bucket(Bucket=REPORT_BUCKET)
        admin["logs"].create_log_group(logGroupName=training_log_group(CLUSTER))
        week = iter(WeekSeeder(admin["cloudwatch"], CLUSTER, plan))
        tuesday = next(week)  # Monday written; Tuesday 00:00
        wednesday = next(week)  # Tuesday written
        principal, clients = _as_role(templates, monkeypatch)
        run_training_analyzer(
            clients, principal.admin("logs"), earlier_runs=[tuesday + 7 * 3600],
            at=wednesday + 7 * 3600,
        )  # fmt: skip
        tables = {}
        s3 = principal.admin("s3")
        for day in (0, 1, 2):
            date = datetime.fromtimestamp(WEEK_START + day * 86_400, UTC).date()
            key = gpu_hours_key(CLUSTER, date)
            listed = s3.list_objects_v2(Bucket=REPORT_BUCKET, Prefix=key)
            if listed.get("KeyCount"):
                body = s3.get_object(Bucket=REPORT_BUCKET, Key=key)["Body"].read()
                tables[day] = json.loads(body)
    assert sorted(tables) == [0, 1]  # Monday's and Tuesday's; Wednesday not yet attributed

    def nlp(table: dict[str, Any]) -> float:
        rows = [r for r in table["namespaces"] if r["namespace"] == "nlp"]
        return float(sum(r["not_working_gpu_hours"] for r in rows))

    # Every GPU-hour of the day, each table: the three p5.48xlarge's 24 GPUs x 24 hours.
    assert [sum(t["classes"].values()) for t in tables.values()] == [576.0, 576.0]
    assert nlp(tables[0]) == 0.0  # Monday: nlp's job had not started
    assert nlp(tables[1]) == 2 * 21.0  # Tuesday 03:00-24:00, two GPUs
