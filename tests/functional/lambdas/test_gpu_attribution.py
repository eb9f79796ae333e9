"""The GPU analyzer's reads against moto: the exporter's per-GPU series and Container Insights'
pod and node GPU series (dimensions as enhanced Container Insights publishes them:
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Container-Insights-metrics-enhanced-EKS.html
and aws/amazon-cloudwatch-agent translator/translate/otel/exporter/awsemf/kubernetes.go),
joined to one attribution."""

from datetime import UTC, datetime

import boto3
from moto import mock_aws

from lambdas.gpu_analyzer.attribution import HourClass, attribute
from lambdas.gpu_analyzer.aws import observe
from lambdas.shared.aws_clients import client

START = 1_764_000_000 - 1_764_000_000 % 3600


def _put(
    cw: object,
    namespace: str,
    metric: str,
    dims: dict[str, str],
    values: list[float],
    step: int = 300,
) -> None:
    data = [
        {
            "MetricName": metric,
            "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
            "Timestamp": datetime.fromtimestamp(START + step * i, UTC),
            "Value": v,
        }
        for i, v in enumerate(values)
    ]
    cw.put_metric_data(Namespace=namespace, MetricData=data)  # type: ignore[attr-defined]


def test_pods_are_joined_to_their_node_gpu_and_classified() -> None:
    with mock_aws():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        cw = client("cloudwatch", session=session)
        for node, power in (("n1", 12.0), ("n2", 88.0)):
            gpu = {"ClusterName": "c", "NodeName": node, "GpuIndex": "0"}
            # The alarm metrics' per-GPU series carry the GPU's alarm shard, as the exporter
            # writes them; the analyzer must read them with it.
            alarmed = {**gpu, "Shard": "0"}
            _put(cw, "GpuInsights", "gpu_power_utilization", gpu, [power] * 12)
            _put(cw, "GpuInsights", "gpu_allocated_power_utilization", alarmed, [power] * 12)
            _put(cw, "GpuInsights", "gpu_healthy", alarmed, [1.0] * 12)
            ci_node = {
                "ClusterName": "c",
                "NodeName": node,
                "InstanceId": f"i-{node}",
                "InstanceType": "p5.48xlarge",
                "GpuDevice": "nvidia0",
            }
            _put(cw, "ContainerInsights", "node_gpu_power_draw", ci_node, [power * 7] * 12)
        for ns, pod, watts, minutes in (
            ("research", "nb-0", 84.0, 12),
            ("vision", "r-7xk2p", 616.0, 6),
        ):
            dims = {
                "ClusterName": "c",
                "Namespace": ns,
                "PodName": pod,
                "FullPodName": pod,
                "GpuDevice": "nvidia0",
            }
            # Container Insights samples once a minute: the notebook all hour, r for half.
            _put(cw, "ContainerInsights", "pod_gpu_utilization", dims, [1.0] * minutes * 5, 60)
            _put(cw, "ContainerInsights", "pod_gpu_power_draw", dims, [watts] * 12)
        observed = observe(cw, "c", start=START, end=START + 3600)
    # gpu_allocated_power_utilization (read with the GPU's Shard) says both GPUs were in use.
    assert {(h.gpu.node, h.gpu.gpu, h.in_use) for h in observed.gpu_hours} == {
        ("n1", "0", True),
        ("n2", "0", True),
    }
    result = attribute(observed.gpu_hours, observed.holds)
    notebook = result.pods[("research", "nb-0")]
    assert {(g.node, g.gpu) for g in notebook.gpus} == {("n1", "0")}
    assert notebook.hours[HourClass.NOT_WORKING] == 1.0
    vision = result.pods[("vision", "r-7xk2p")]
    assert {(g.node, g.gpu) for g in vision.gpus} == {("n2", "0")}
    assert vision.hours[HourClass.WORKING] == 0.5
    assert result.classes[HourClass.NOT_HELD] == 0.5
