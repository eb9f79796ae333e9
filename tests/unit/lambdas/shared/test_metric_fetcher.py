from datetime import UTC, datetime, timedelta

import boto3
from botocore.stub import ANY, Stubber

from lambdas.shared.metric_fetcher import MetricQuery, fetch, listed_dimensions


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
