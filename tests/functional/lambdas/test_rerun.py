"""A rerun for the same day changes nothing a reader counts: the same object, the same counts on
the dashboard, and events a consumer can de-duplicate by ``finding_id``.

CloudWatch keeps every datum put, two at the same timestamp included, and a statistic is
computed over all of them (CloudWatch User Guide, "Statistics": Sum adds every value, Maximum
is the highest); so a count put twice doubles a Sum but not a Maximum.
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_concepts.html#Statistic
"""

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from gpu_insights_agent.contract.metrics import (
    FINDINGS_COUNT_METRIC,
    FINDINGS_COUNT_STAT,
    NAMESPACE_FINDINGS,
)
from lambdas.shared.aws_clients import RETRIES
from lambdas.shared.findings import Finding, Kind, Severity
from lambdas.shared.publisher import FindingsPublisher

KINDS = (Kind.EBS_IDLE_VOLUME, Kind.S3_HIGH_LATENCY, Kind.EBS_OVERPROVISIONED_IOPS)


@pytest.fixture
def aws() -> Iterator[dict[str, Any]]:
    with mock_aws():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        clients: dict[str, Any] = {
            s: session.client(s, config=RETRIES) for s in ("s3", "cloudwatch", "events")
        }
        clients["s3"].create_bucket(Bucket="reports")
        yield clients


def _findings() -> list[Finding]:
    """12 findings: four of each kind, two of them about the same bucket (two filters)."""
    return [
        Finding(
            kind=kind,
            resource="arn:aws:s3:::data" if kind is Kind.S3_HIGH_LATENCY else f"vol-{i}",
            severity=Severity.WARNING,
            summary=f"finding {i}",
            evidence={"i": i},
            recommendation="look",
        )
        for kind in KINDS
        for i in range(4)
    ]


def test_a_rerun_for_the_day_leaves_the_same_object_counts_and_event_ids(
    aws: dict[str, Any],
) -> None:
    sent: list[dict[str, Any]] = []
    aws["events"].meta.events.register(
        "provide-client-params.events.PutEvents",
        lambda params, **_: sent.extend(json.loads(e["Detail"]) for e in params["Entries"]),
    )
    publisher = FindingsPublisher(
        s3=aws["s3"],
        events=aws["events"],
        cloudwatch=aws["cloudwatch"],
        bucket="reports",
        event_bus="default",
        cluster="train",
        analyzer="storage",
    )
    day = datetime.now(UTC).date()
    publisher.publish(_findings(), day)
    first = aws["s3"].get_object(Bucket="reports", Key=publisher.publish(_findings(), day).key)
    objects = aws["s3"].list_objects_v2(Bucket="reports")["Contents"]
    assert len(objects) == 1
    assert first["Body"].read().count(b"\n") == 12

    midnight = datetime.combine(day, datetime.min.time(), UTC)
    total = 0.0
    for kind in KINDS:
        points = aws["cloudwatch"].get_metric_statistics(
            Namespace=NAMESPACE_FINDINGS,
            MetricName=FINDINGS_COUNT_METRIC,
            Dimensions=[
                {"Name": "ClusterName", "Value": "train"},
                {"Name": "Kind", "Value": str(kind)},
                {"Name": "Severity", "Value": "warning"},
            ],
            StartTime=midnight,
            EndTime=midnight + timedelta(days=1),
            Period=86400,
            Statistics=[FINDINGS_COUNT_STAT],
        )["Datapoints"]
        (point,) = points
        total += point[FINDINGS_COUNT_STAT]
    assert total == 12  # before: Sum over the day's two runs read 24

    first_run, second_run = sent[:12], sent[12:]
    ids = [event["finding_id"] for event in first_run]
    assert len(set(ids)) == 12  # one per finding, the two about the same bucket included
    assert [event["finding_id"] for event in second_run] == ids
    assert {event["day"] for event in sent} == {day.isoformat()}
