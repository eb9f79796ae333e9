"""A volume CloudWatch answers with a failed StatusCode is skipped by name, not judged on
points it does not have (botocore's Stubber answers GetMetricData)."""

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from botocore.stub import Stubber

from lambdas.shared.findings import Kind
from lambdas.storage_analyzer.ebs_analysis import Volume
from lambdas.storage_analyzer.run import analyze_volumes

START = datetime(2025, 11, 27, tzinfo=UTC)
HOURS = 3
VOLUMES = [Volume(f"vol-{i}", "gp3", 500, "in-use", 3000, 125, "i-1") for i in (1, 2)]


def _result(query_id: str, status: str = "Complete", hourly: bool = True) -> dict[str, Any]:
    hours = HOURS if hourly else 1
    return {
        "Id": query_id,
        "StatusCode": status,
        "Timestamps": [START + timedelta(hours=h) for h in range(hours)],
        "Values": [1000.0 * 3600] * hours if hourly else [0.0],
    }


def test_a_forbidden_series_skips_its_volume_and_the_other_is_analyzed() -> None:
    """Each volume's first pass: two hourly math totals (q0, q1) and three window screens."""
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    results = []
    for v in range(2):
        for j in range(5):
            failed = (v, j) == (1, 3)  # vol-2's IOPS-exceeded screen
            results.append(
                _result(f"q{v * 5 + j}", "Forbidden" if failed else "Complete", hourly=j < 2)
            )
    with Stubber(cloudwatch) as stub:
        stub.add_response("get_metric_data", {"MetricDataResults": results})
        run = analyze_volumes(
            cloudwatch,
            VOLUMES,
            START.timestamp(),
            (START + timedelta(hours=HOURS)).timestamp(),
        )
        stub.assert_no_pending_responses()
    assert run.skipped == ["vol-2"]
    assert run.volumes == 1
    (error,) = [f for f in run.findings if f.kind is Kind.ANALYSIS_ERROR]
    assert error.resource == "vol-2"
    assert error.evidence["error"] == "iops_exceeded: GetMetricData returned Forbidden"
