"""Faults injected into the AWS calls the Lambdas make: throttling and 5xx are retried, a
destination that stays down fails the run loudly without losing the findings it computed."""

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import boto3
import botocore.endpoint
import pytest
from botocore.awsrequest import AWSResponse, HTTPHeaders
from moto import mock_aws

from cli.service_answers import dated_volumes
from lambdas.shared.aws_clients import MAX_ATTEMPTS, RETRIES
from lambdas.shared.findings import Finding, Kind, Severity
from lambdas.shared.publisher import FindingsPublisher, PublishError, queue_keeper
from lambdas.storage_analyzer import handler as storage_handler

THROTTLED = (
    400,
    b"<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code>"
    b"<Message>Rate exceeded</Message></Error></ErrorResponse>",
)
#: CloudWatch speaks JSON now; a 503 is retried whatever its body says.
UNAVAILABLE = (503, b'{"__type": "ServiceUnavailable", "message": "try again"}')
SERVER = (
    500,
    b"<Error><Code>InternalError</Code><Message>We encountered an internal error</Message></Error>",
)


def inject(client: Any, operation: str, failures: int, status_body: tuple[int, bytes]) -> list[str]:
    """The first `failures` sends of the operation get the error response instead of moto's."""
    attempts: list[str] = []

    def maybe_fail(request: Any, **_: Any) -> AWSResponse | None:
        attempts.append(operation)
        if len(attempts) <= failures:
            status, body = status_body
            return AWSResponse(request.url, status, HTTPHeaders(), _Raw(body))
        return None

    client.meta.events.register_first(f"before-send.*.{operation}", maybe_fail)
    return attempts


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    with mock_aws():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        clients: dict[str, Any] = {
            s: session.client(s, config=RETRIES)
            for s in ("ec2", "s3", "cloudwatch", "events", "sqs")
        }
        # botocore sleeps its backoff between retries (seconds, growing): the tests take the
        # delays it asked for instead of waiting them out.
        slept: list[float] = []
        monkeypatch.setattr(botocore.endpoint, "time", SimpleNamespace(sleep=slept.append))
        clients["slept"] = slept
        clients["s3"].create_bucket(Bucket="reports")
        clients["queue"] = clients["sqs"].create_queue(QueueName="failures")["QueueUrl"]
        for service in ("ec2", "s3", "cloudwatch", "events", "sqs"):
            monkeypatch.setitem(storage_handler._clients, service, clients[service])
        for key, value in {
            "CLUSTER_NAME": "train",
            "REPORT_BUCKET": "reports",
            "BUCKETS": "",
            "LOOKBACK_DAYS": "1",
            "FAILURE_QUEUE_URL": clients["queue"],
        }.items():
            monkeypatch.setenv(key, value)
        volume = clients["ec2"].create_volume(
            AvailabilityZone="us-east-1a",
            Size=100,
            VolumeType="gp3",
            TagSpecifications=[
                {
                    "ResourceType": "volume",
                    "Tags": [{"Key": "kubernetes.io/cluster/train", "Value": "owned"}],
                }
            ],
        )
        # Made a month before the run (moto stamps its own clock): past the detached grace.
        made = datetime(2026, 10, 28, tzinfo=UTC).timestamp()
        dated_volumes(clients["ec2"], {volume["VolumeId"]: (made, None)})
        yield clients


EVENT = {"time": datetime(2026, 11, 28, 6, tzinfo=UTC).isoformat()}


@pytest.mark.parametrize(
    ("service", "operation", "error"),
    [
        ("ec2", "DescribeVolumes", THROTTLED),
        ("s3", "PutObject", SERVER),
        ("events", "PutEvents", SERVER),
        ("cloudwatch", "PutMetricData", UNAVAILABLE),
    ],
)
def test_throttling_and_5xx_are_retried_and_the_run_completes(
    aws: dict[str, Any], service: str, operation: str, error: tuple[int, bytes]
) -> None:
    attempts = inject(aws[service], operation, 2, error)
    summary = storage_handler.handler(EVENT, None)
    assert len(attempts) >= 3  # two failures, then success
    body = aws["s3"].get_object(Bucket="reports", Key=summary["key"])["Body"].read().decode()
    assert [json.loads(line)["kind"] for line in body.splitlines()] == ["ebs_idle_volume"]


def test_s3_down_fails_the_run_and_the_findings_reach_the_failure_queue(
    aws: dict[str, Any],
) -> None:
    attempts = inject(aws["s3"], "PutObject", 100, SERVER)
    with pytest.raises(PublishError, match="writing s3://reports/findings/cluster=train"):
        storage_handler.handler(EVENT, None)
    assert (
        len(attempts) == MAX_ATTEMPTS + 1
    )  # the first try and every retry (max_attempts counts retries)
    assert len(aws["slept"]) == MAX_ATTEMPTS  # a backoff before each retry
    (message,) = aws["sqs"].receive_message(QueueUrl=aws["queue"], MessageAttributeNames=["All"])[
        "Messages"
    ]
    assert message["MessageAttributes"]["findings_key"]["StringValue"].endswith("/storage.jsonl")
    assert json.loads(message["Body"].splitlines()[0])["kind"] == "ebs_idle_volume"


def test_large_findings_files_are_kept_in_parts_of_whole_lines(aws: dict[str, Any]) -> None:
    findings = [
        Finding(
            kind=Kind.EBS_IDLE_VOLUME,
            resource=f"vol-{i:05d}",
            severity=Severity.WARNING,
            summary="x" * 500,
            evidence={},
            recommendation="delete it",
        )
        for i in range(1000)
    ]
    keep = queue_keeper(aws["sqs"], aws["queue"])
    publisher = FindingsPublisher(
        s3=aws["s3"],
        events=aws["events"],
        cloudwatch=aws["cloudwatch"],
        bucket="no-such-bucket",
        event_bus="default",
        cluster="train",
        analyzer="storage",
        keep=keep,
    )
    with pytest.raises(PublishError):
        publisher.publish(findings, datetime(2026, 11, 28, tzinfo=UTC).date())
    lines = []
    for _ in range(10):
        batch = (
            aws["sqs"]
            .receive_message(QueueUrl=aws["queue"], MaxNumberOfMessages=10)
            .get("Messages", [])
        )
        lines += [line for m in batch for line in m["Body"].splitlines()]
        if not batch:
            break
    assert sorted(json.loads(line)["resource"] for line in lines) == [
        f"vol-{i:05d}" for i in range(1000)
    ]
