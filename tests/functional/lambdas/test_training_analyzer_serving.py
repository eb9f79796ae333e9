"""The training analyzer's handler leaves the day's serving table in the report bucket, in OTel
mode, from the servers' series read with PromQL (a real engine, Debian's Prometheus, behind the
Region's query API: cli/demo/promql.py ``answering``), and none in Classic, where no serving
series are collected.

One vLLM replica of the Deployment ``chat`` (model ``llama``) is scraped every five minutes of
2026-01-01, the day the run at 07:00 the next morning attributes; it finishes 10 requests and
generates 4,000 tokens every five minutes: 2,880 requests and 1,152,000 tokens in the day."""

from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cli.demo.promql import answering
from cli.demo.storage import REPORT_BUCKET, run_analyzer
from cli.demo.training import CLUSTER
from gpu_insights_agent.contract.metrics import training_log_group
from lambdas.shared.aws_clients import client
from lambdas.shared.dcgm import CLOUDWATCH
from lambdas.shared.serving_table import decode, serving_key
from lambdas.training_analyzer import handler as training_handler
from tests.functional.lambdas.iam import resolve, role_statements, run_as_role
from tests.prometheus import Sample, serve, write_openmetrics

pytestmark = pytest.mark.promql_engine

REGION = "us-east-1"
DAY = date(2026, 1, 1)
START = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp())
RUN_AT = START + 86_400 + 7 * 3600
HANDLER = "lambdas.training_analyzer.handler.handler"
PHYSICAL = {"ReportBucket": {"Ref": REPORT_BUCKET, "Arn": f"arn:aws:s3:::{REPORT_BUCKET}"}}
SERVICES = ("s3", "cloudwatch", "events", "logs")
POD = {
    CLOUDWATCH.cluster: CLUSTER,
    CLOUDWATCH.namespace: "serving",
    CLOUDWATCH.deployment: "chat",
    CLOUDWATCH.pod: "chat-5c8d9f7b6-m2kzp",
    CLOUDWATCH.node: "ip-10-0-1-1.ec2.internal",
    "model_name": "llama",
    "engine": "0",
}


def _series() -> Iterator[Sample]:
    for step in range(1, 289):
        at = START + step * 300
        yield "vllm:request_success_total", {**POD, "finished_reason": "stop"}, at, 10.0 * step
        yield "vllm:generation_tokens_total", POD, at, 4000.0 * step
        yield "vllm:kv_cache_usage_perc", POD, at, 0.25
        yield "vllm:num_requests_waiting", POD, at, 0.0


@pytest.fixture
def clients(tmp_path: Path) -> Iterator[dict[str, Any]]:
    write_openmetrics(tmp_path / "serving.om", _series())
    with mock_aws(), serve(tmp_path / "serving.om", tmp_path / "data") as url:
        session = boto3.Session(
            region_name=REGION, aws_access_key_id="t", aws_secret_access_key="t"
        )
        made = {s: client(s, session=session) for s in SERVICES}
        made["s3"].create_bucket(Bucket=REPORT_BUCKET)
        # A cluster that trains nothing today still has its training log group.
        made["logs"].create_log_group(logGroupName=training_log_group(CLUSTER))
        training_handler._clients.update(made)
        with answering(REGION, url):
            yield made


def _as_role(templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> Any:
    statements = resolve(role_statements(templates, HANDLER), PHYSICAL)
    principal = run_as_role(statements, monkeypatch, "training-analyzer")
    training_handler._clients.update({s: principal.role(s) for s in SERVICES})
    return principal


def _env(mode: str) -> dict[str, str]:
    return {
        "CLUSTER_NAME": CLUSTER,
        "LOOKBACK_DAYS": "1",
        "GPU_HOUR_USD": "6.88",
        "REPORT_BUCKET": REPORT_BUCKET,
        "EVENT_BUS": "default",
        "CONTAINER_INSIGHTS_MODE": mode,
    }


def test_the_handler_writes_the_days_serving_table_in_otel_mode(
    clients: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    s3 = _as_role(templates, monkeypatch).admin("s3")
    summary, findings = run_analyzer(training_handler.handler, _env("otel"), s3, RUN_AT)
    assert [f["summary"] for f in findings if f["kind"] == "analysis_error"] == []
    body = s3.get_object(Bucket=REPORT_BUCKET, Key=serving_key(CLUSTER, DAY))
    table = decode(body["Body"].read())
    (row,) = table.rows
    assert (table.day, table.skipped) == (DAY, [])
    assert (row.namespace, row.workload, row.kind, row.model) == (
        "serving",
        "chat",
        "Deployment",
        "llama",
    )
    assert row.requests == pytest.approx(2880.0)
    assert row.generation_tokens == pytest.approx(1_152_000.0)
    assert row.mean_kv_cache_percent == pytest.approx(25.0)
    assert (row.max_waiting, row.replicas) == (0.0, 1)
    assert summary["serving_rows"] == 1


def test_classic_mode_writes_no_serving_table(clients: dict[str, Any]) -> None:
    summary, _ = run_analyzer(training_handler.handler, _env("classic"), clients["s3"], RUN_AT)
    listed = clients["s3"].list_objects_v2(Bucket=REPORT_BUCKET, Prefix="reports/")
    assert not any(o["Key"].endswith("/serving.json") for o in listed.get("Contents", []))
    assert summary["serving_rows"] == 0
