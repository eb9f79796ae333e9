import boto3
from botocore.stub import Stubber

from lambdas.shared.metric_fetcher import listed_dimensions


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
