"""The GPU analyzer's reads against moto: the exporter's per-GPU series and Container Insights'
pod and node GPU series (dimensions as enhanced Container Insights publishes them:
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Container-Insights-metrics-enhanced-EKS.html
and aws/amazon-cloudwatch-agent translator/translate/otel/exporter/awsemf/kubernetes.go),
joined to one attribution."""

from datetime import UTC, datetime

import boto3
import pytest
from moto import mock_aws

from lambdas.gpu_analyzer.attribution import GpuHour, Hold, HourClass, attribute
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


def _two_nodes(
    node_watts: dict[str, float],
    pods: list[tuple[str, float | None, int]],
    pod_nodes: dict[str, str] | None = None,
) -> tuple[list[GpuHour], list[Hold]]:
    """Two p5 nodes' nvidia0 for one hour (exporter percent of a 700 W limit, Container
    Insights' node power), and pods on nvidia0 (power, minutes held)."""
    with mock_aws():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        cw = client("cloudwatch", session=session)
        for node, watts in node_watts.items():
            gpu = {"ClusterName": "c", "NodeName": node, "GpuIndex": "0"}
            alarmed = {**gpu, "Shard": "0"}
            _put(cw, "GpuInsights", "gpu_power_utilization", gpu, [watts / 7] * 12)
            _put(cw, "GpuInsights", "gpu_allocated_power_utilization", alarmed, [watts / 7] * 12)
            _put(cw, "GpuInsights", "gpu_healthy", alarmed, [1.0] * 12)
            ci_node = {
                "ClusterName": "c",
                "NodeName": node,
                "InstanceId": f"i-{node}",
                "InstanceType": "p5.48xlarge",
                "GpuDevice": "nvidia0",
            }
            _put(cw, "ContainerInsights", "node_gpu_power_draw", ci_node, [watts] * 12)
        for pod, pod_watts, minutes in pods:
            dims = {
                "ClusterName": "c",
                "Namespace": "team",
                "PodName": pod,
                "FullPodName": pod,
                "GpuDevice": "nvidia0",
            }
            _put(cw, "ContainerInsights", "pod_gpu_utilization", dims, [50.0] * minutes, 60)
            if pod_watts is not None:
                power = [pod_watts] * minutes
                _put(cw, "ContainerInsights", "pod_gpu_power_draw", dims, power, 60)
        observed = observe(cw, "c", start=START, end=START + 3600, pod_nodes=pod_nodes)
    return observed.gpu_hours, observed.holds


def test_two_pods_at_the_same_power_are_placed_on_two_gpus_not_one() -> None:
    # Both nodes' nvidia0 at 699 W all hour, each held by its own pod: matching by closest
    # power alone put both pods on one node (time-sliced) and left the other GPU "not held".
    gpu_hours, holds = _two_nodes(
        {"n1": 699.0, "n2": 699.0}, [("a-7xk2p", 699.0, 60), ("b-7xk2p", 699.0, 60)]
    )
    assert sorted(h.gpu.node for h in holds) == ["n1", "n2"]
    result = attribute(gpu_hours, holds)
    assert result.classes[HourClass.WORKING] == 2.0
    assert result.classes[HourClass.NOT_HELD] == 0.0
    assert not any(p.time_sliced for p in result.pods.values())


def test_pods_holding_part_of_the_hour_fill_a_gpu_before_sharing_one() -> None:
    # n1/nvidia0: x at 600 W for 15 minutes, then y at 100 W for 45 (mean 225 W); n2/nvidia0:
    # z at 400 W all hour. By closest power alone x (600 W) went to n2 (400 W) and z shared it.
    gpu_hours, holds = _two_nodes(
        {"n1": 225.0, "n2": 400.0},
        [("x-7xk2p", 600.0, 15), ("y-7xk2p", 100.0, 45), ("z-7xk2p", 400.0, 60)],
    )
    assert {h.pod: h.gpu.node for h in holds} == {"x-7xk2p": "n1", "y-7xk2p": "n1", "z-7xk2p": "n2"}
    result = attribute(gpu_hours, holds)
    # Each pod classed by its own power: x worked (600 W of 700), y did not (100 W).
    assert result.pods[("team", "x-7xk2p")].hours[HourClass.WORKING] == pytest.approx(0.25)
    assert result.pods[("team", "y-7xk2p")].hours[HourClass.NOT_WORKING] == pytest.approx(0.75)
    assert sum(result.classes.values()) == pytest.approx(2.0)


def test_the_emitters_node_is_an_exact_join() -> None:
    # Container Insights' pod series carry no NodeName (kubernetes.go above); the training
    # emitter reports its pod with its node, which decides where power cannot.
    _, holds = _two_nodes(
        {"n1": 699.0, "n2": 699.0},
        [("a-7xk2p", 699.0, 60), ("b-7xk2p", 699.0, 60)],
        pod_nodes={"b-7xk2p": "n1"},
    )
    assert {h.pod: h.gpu.node for h in holds} == {"a-7xk2p": "n2", "b-7xk2p": "n1"}


def test_a_pod_without_power_takes_the_one_gpu_left() -> None:
    gpu_hours, holds = _two_nodes(
        {"n1": 84.0, "n2": 616.0}, [("nb-0", None, 60), ("train-7xk2p", 616.0, 60)]
    )
    assert {h.pod: h.gpu.node for h in holds} == {"nb-0": "n1", "train-7xk2p": "n2"}
    result = attribute(gpu_hours, holds)
    assert sum(result.classes.values()) == 2.0
    assert result.pods[("team", "nb-0")].hours[HourClass.NOT_WORKING] == 1.0
