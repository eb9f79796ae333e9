"""A Logs Insights query that IAM refuses is a finding a person sees, not a silent gap: the
training analyzer's run publishes an analysis_error naming the refused call, and the rules
that need no ranks still report their findings."""

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from cli.demo.storage import END, REPORT_BUCKET, run_analyzer
from cli.demo.training import CLUSTER, seed
from lambdas.training_analyzer import handler as training_handler


@pytest.fixture
def clients() -> Iterator[dict[str, Any]]:
    with mock_aws():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        made: dict[str, Any] = {
            s: session.client(s) for s in ("s3", "cloudwatch", "events", "logs")
        }
        made["s3"].create_bucket(Bucket=REPORT_BUCKET)
        yield made


def test_a_refused_rank_query_is_published_as_an_analysis_error(
    clients: dict[str, Any],
) -> None:
    seed(clients)
    # The response CloudWatch Logs gives a role without logs:StartQuery on the group.
    logs = boto3.client(
        "logs", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
    )
    stubber = Stubber(logs)
    stubber.add_client_error(
        "start_query",
        service_error_code="AccessDeniedException",
        service_message="User is not authorized to perform: logs:StartQuery",
        http_status_code=400,
    )
    training_handler._clients.update(
        cloudwatch=clients["cloudwatch"], events=clients["events"], s3=clients["s3"], logs=logs
    )
    env = {
        "CLUSTER_NAME": CLUSTER,
        "LOOKBACK_DAYS": "1",
        "GPU_HOUR_USD": "6.88",
        "REPORT_BUCKET": REPORT_BUCKET,
        "EVENT_BUS": "default",
        # seed() publishes Container Insights' Classic series (the OTel path is tested on a
        # PromQL engine in test_gpu_attribution_otel.py).
        "CONTAINER_INSIGHTS_MODE": "classic",
    }
    with stubber:
        # The Monday 07:00 run: its whole-day window is the Sunday the failing job ran.
        summary, findings = run_analyzer(
            training_handler.handler, env, clients["s3"], at=END + 8 * 3600
        )
    stubber.assert_no_pending_responses()
    errors = [f for f in findings if f["kind"] == "analysis_error"]
    # Without ranks, the failed job's pods and nodes are unknown: its logs are not read.
    assert [e["resource"] for e in errors] == [
        f"ranks of {CLUSTER}'s training jobs",
        "job/vit-flaky",
    ]
    assert "AccessDeniedException" in errors[0]["summary"]
    assert "logs:StartQuery" in errors[0]["evidence"]["error"]
    assert "its emitter reported no pod and node" in errors[1]["summary"]
    assert summary["skipped"] == 2  # a count; the findings above name them
    # The rules that need no ranks still ran.
    assert {f["kind"] for f in findings} >= {"training_data_bound", "training_job_failures"}
