from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import ANY, Stubber

from benchmarks import wire
from lambdas.shared.metric_fetcher import (
    MetricQuery,
    add_series,
    fetch,
    listed_dimensions,
    sum_terms,
)
from lambdas.storage_analyzer.ebs_plan import TOTAL


def _metric(**dims: str) -> dict[str, object]:
    return {
        "Namespace": "GpuInsights",
        "MetricName": "gpu_healthy",
        "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
    }


def test_each_listed_series_comes_once_across_pages_with_the_filter_sent() -> None:
    """ListMetrics pages with NextToken (botocore's paginator follows it); a series listed
    twice (moto lists one per datapoint) is yielded once."""
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    a = _metric(ClusterName="train", NodeName="n1", GpuIndex="0")
    b = _metric(ClusterName="train", NodeName="n1", GpuIndex="1")
    wanted = {
        "Namespace": "GpuInsights",
        "MetricName": "gpu_healthy",
        "Dimensions": [{"Name": "ClusterName", "Value": "train"}],
    }
    with Stubber(cloudwatch) as stub:
        stub.add_response("list_metrics", {"Metrics": [a, a], "NextToken": "t"}, wanted)
        stub.add_response("list_metrics", {"Metrics": [b, a]}, {**wanted, "NextToken": "t"})
        listed = list(
            listed_dimensions(cloudwatch, "GpuInsights", "gpu_healthy", {"ClusterName": "train"})
        )
        stub.assert_no_pending_responses()
    assert [d["GpuIndex"] for d in listed] == ["0", "1"]
    assert listed[0] == {"ClusterName": "train", "NodeName": "n1", "GpuIndex": "0"}


START = datetime(2025, 11, 27, tzinfo=UTC)
END = START + timedelta(hours=3)


def _stamps(*hours: int) -> list[datetime]:
    return [START + timedelta(hours=h) for h in hours]


def test_partial_data_is_paged_and_failed_results_are_not_read_as_data() -> None:
    """Each MetricDataResult has a StatusCode: ``PartialData`` is continued with NextToken;
    ``InternalError`` and ``Forbidden`` mean the points are not the series
    (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_MetricDataResult.html),
    so the series comes back with ``error`` and no values."""
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    queries = [
        MetricQuery(("vol-1", "read_ops"), "AWS/EBS", "VolumeReadOps", (), "Sum", 3600),
        MetricQuery(("vol-2", "read_ops"), "AWS/EBS", "VolumeReadOps", (), "Sum", 3600),
        MetricQuery(("vol-3", "read_ops"), "AWS/EBS", "VolumeReadOps", (), "Sum", 3600),
    ]
    first = {
        "MetricDataResults": [
            {"Id": "q0", "StatusCode": "PartialData", "Timestamps": _stamps(0), "Values": [1.0]},
            {"Id": "q1", "StatusCode": "Forbidden", "Timestamps": _stamps(0), "Values": [9.0],
             "Messages": [{"Code": "Forbidden", "Value": "no access to AWS/EBS"}]},
            {"Id": "q2", "StatusCode": "InternalError", "Timestamps": [], "Values": []},
        ],
        "NextToken": "page-2",
    }  # fmt: skip
    second = {
        "MetricDataResults": [
            {"Id": "q0", "StatusCode": "Complete", "Timestamps": _stamps(1, 2),
             "Values": [2.0, 3.0]},
            {"Id": "q2", "StatusCode": "Complete", "Timestamps": _stamps(1), "Values": [7.0]},
        ]
    }  # fmt: skip
    with Stubber(cloudwatch) as stub:
        stub.add_response("get_metric_data", first)
        stub.add_response("get_metric_data", second, {
            "MetricDataQueries": ANY, "StartTime": ANY, "EndTime": ANY, "ScanBy": ANY,
            "NextToken": "page-2",
        })  # fmt: skip
        (batch,) = fetch(cloudwatch, queries, start=START.timestamp(), end=END.timestamp())
        stub.assert_no_pending_responses()
    complete, forbidden, internal = batch
    assert (complete.values, complete.error) == ([1.0, 2.0, 3.0], "")
    assert complete.timestamps == _stamps(0, 1, 2)
    assert (forbidden.values, forbidden.timestamps) == ([], [])
    assert forbidden.error == "GetMetricData returned Forbidden: no access to AWS/EBS"
    # A later page does not make a failed series whole: its first page's points are missing.
    assert (internal.values, internal.error) == ([], "GetMetricData returned InternalError")


def test_the_storage_total_counts_a_missing_datapoint_of_either_input_as_zero() -> None:
    """Metric math adds series timestamp by timestamp; ``FILL(m, 0)`` gives each input's
    missing datapoints 0, so an hour with reads and no write datapoint still has a total
    (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html)."""
    reads = ([0, 1, 2], [10.0, 20.0, 30.0])
    writes = ([0, 2], [1.0, 3.0])  # hour 1 has no write datapoint
    terms = sum_terms(TOTAL.format("q0i0", "q0i1"))
    assert terms == [("q0i0", 0.0), ("q0i1", 0.0)]
    filled = [(*reads, terms[0][1]), (*writes, terms[1][1])]
    assert add_series(filled) == ([0, 1, 2], [11.0, 20.0, 33.0])
    # Unfilled, as "{0} + {1}" was: the hour has no total, and the idle rule lost it.
    assert add_series([(*reads, None), (*writes, None)]) == ([0, 2], [11.0, 33.0])
    assert sum_terms("q0") is None
    assert sum_terms("q0 * 2 + q1") is None


def _limited_cloudwatch(points: int) -> Any:
    """The benchmarks' fake at the HTTP layer, under GetMetricData's limits: every metric
    query answered with ``points`` points."""
    client = wire.client("cloudwatch")

    def results(params: dict[str, Any]) -> list[dict[str, Any]]:
        stamps = [START.timestamp() + 60 * i for i in range(points)]
        return [
            {"Id": q["Id"], "Timestamps": stamps, "Values": [float(i) for i in range(points)]}
            for q in params["MetricDataQueries"]
        ]

    wire.serve_json(
        client, {"GetMetricData": lambda p: wire.metric_data_page(p, lambda: results(p))}
    )
    return client


def test_the_fake_refuses_more_than_500_queries_and_pages_past_100800_points() -> None:
    """GetMetricData takes at most 500 MetricDataQueries and returns at most 100,800
    datapoints a call (MaxDatapoints' default), the rest behind NextToken with the cut
    result's StatusCode PartialData
    (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_GetMetricData.html);
    the fetcher follows NextToken until each series is whole."""
    query = {"MetricStat": {"Metric": {"Namespace": "N", "MetricName": "m"}, "Period": 60,
                            "Stat": "Sum"}}  # fmt: skip
    cloudwatch = _limited_cloudwatch(60_000)
    with pytest.raises(ClientError) as err:
        cloudwatch.get_metric_data(
            MetricDataQueries=[{"Id": f"q{i}", **query} for i in range(501)],
            StartTime=START, EndTime=END,
        )  # fmt: skip
    assert err.value.response["Error"]["Code"] == "ValidationError"
    first = cloudwatch.get_metric_data(
        MetricDataQueries=[{"Id": f"q{i}", **query} for i in range(2)], StartTime=START,
        EndTime=END,
    )  # fmt: skip
    assert [(r["StatusCode"], len(r["Values"])) for r in first["MetricDataResults"]] == [
        ("Complete", 60_000),
        ("PartialData", 40_800),
    ]
    queries = [
        MetricQuery((f"s{i}",), "N", "m", (), "Sum", 60 * 14 * 24 * 60) for i in range(2)
    ]  # one point each by period, 60,000 by the fake: 120,000 in all, in two pages
    (batch,) = fetch(cloudwatch, queries, start=START.timestamp(), end=END.timestamp())
    assert [len(s.values) for s in batch] == [60_000, 60_000]
    assert batch[1].values[40_799:40_801] == [40_799.0, 40_800.0]
