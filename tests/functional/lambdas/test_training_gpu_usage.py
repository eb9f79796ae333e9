"""A training job's GPU figures read from the exporter's series in CloudWatch (moto): the GPUs
its pods held (Container Insights' pod series), else those of its nodes in use only. A
p5.48xlarge reports all eight GPUs (NVML lists every GPU of the node); a job that holds two of
them is judged on those two, never on the six no pod asked for, idle at 5% of their limit."""

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from moto import mock_aws

from cli.demo.realistic import container_insights as ci
from cli.demo.realistic import pods as k8s
from gpu_insights_agent.contract.metrics import (
    CI_NODE_GPU_POWER_METRIC,
    CI_POD_GPU_UTILIZATION_METRIC,
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_NODE,
    DIM_SHARD,
    NAMESPACE_CONTAINER_INSIGHTS,
    NAMESPACE_GPU,
    GpuMetric,
    alarm_shard,
    gpu_schema,
)
from lambdas.shared.aws_clients import new_session
from lambdas.training_analyzer.analysis import GpuUsage
from lambdas.training_analyzer.job_gpus import job_gpu_hours
from lambdas.training_analyzer.run import _gpu_usage

CLUSTER = "c"
NODE = "ip-10-0-2-21.ec2.internal"
HOUR = datetime(2026, 11, 30, 10, tzinfo=UTC).timestamp()


@pytest.fixture
def cloudwatch() -> Iterator[Any]:
    with mock_aws():
        session = new_session(
            aws_access_key_id="t", aws_secret_access_key="t", region_name="us-east-1"
        )
        yield session.client("cloudwatch")


def _datum(metric: GpuMetric, gpu: int, value: float) -> dict[str, Any]:
    dims = {DIM_CLUSTER: CLUSTER, DIM_NODE: NODE, DIM_GPU_INDEX: str(gpu)}
    if DIM_SHARD in gpu_schema(metric):  # as the exporter writes the alarm metrics
        dims[DIM_SHARD] = alarm_shard(NODE, gpu, 1)
    return {
        "MetricName": str(metric),
        "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
        "Timestamp": datetime.fromtimestamp(HOUR + 1800, UTC),
        "Value": value,
    }


def test_a_jobs_gpu_figures_leave_out_its_nodes_gpus_no_pod_holds(cloudwatch: Any) -> None:
    data = []
    for gpu in range(8):
        held = gpu < 2
        power, sm = (88.0, 86.0) if held else (5.0, 0.0)
        data += [
            _datum(GpuMetric.POWER_UTILIZATION, gpu, power),
            _datum(GpuMetric.SM_ACTIVE, gpu, sm),
        ]
        if held:  # the exporter's allocated reading: a process holds the GPU
            data.append(_datum(GpuMetric.ALLOCATED_POWER_UTILIZATION, gpu, power))
    cloudwatch.put_metric_data(Namespace=NAMESPACE_GPU, MetricData=data)
    usage = _gpu_usage(
        cloudwatch, CLUSTER, {"resnet": {NODE}}, {"resnet": [HOUR]}, HOUR, HOUR + 3600
    )
    # All eight GPUs' mean would be 25.75% and 21.5%: the job would read as underutilized.
    assert usage == {"resnet": GpuUsage(power_utilization=88.0, sm_active=86.0)}


def test_without_pod_series_a_job_is_judged_on_its_nodes_gpus_in_use(cloudwatch: Any) -> None:
    """bert (22% of the limit) and llama (85%) each hold two of the node's GPUs and no
    Container Insights pod series says which (the add-on not on the node): each job's figure
    is the node's GPUs in use, all four (53.5%), as docs/analyzers.md says of that case; the
    GPUs another job's pods are known to have held are left out of it."""
    data = []
    for gpu, power in ((0, 22.0), (1, 22.0), (2, 85.0), (3, 85.0)):
        for metric in (
            GpuMetric.POWER_UTILIZATION,
            GpuMetric.SM_ACTIVE,
            GpuMetric.ALLOCATED_POWER_UTILIZATION,
        ):
            data.append(_datum(metric, gpu, power))
    cloudwatch.put_metric_data(Namespace=NAMESPACE_GPU, MetricData=data)
    usage = _gpu_usage(
        cloudwatch,
        CLUSTER,
        {"bert": {NODE}, "llama": {NODE}},
        {"bert": [HOUR], "llama": [HOUR]},
        HOUR,
        HOUR + 3600,
    )
    assert usage["bert"] == usage["llama"] == GpuUsage(power_utilization=53.5, sm_active=53.5)
    # Where Container Insights placed llama's pods on GPUs 2 and 3, bert (whose emitter names
    # no pod) is judged on the node's GPUs in use that no other job's pods held: 0 and 1.
    placed = {"llama": {(NODE, "2", HOUR), (NODE, "3", HOUR)}}
    usage = _gpu_usage(
        cloudwatch, CLUSTER, {"bert": {NODE}, "llama": {NODE}},
        {"bert": [HOUR], "llama": [HOUR]}, HOUR, HOUR + 3600, placed=placed,
    )  # fmt: skip
    assert usage == {"bert": GpuUsage(22.0, 22.0), "llama": GpuUsage(85.0, 85.0)}


def _insights(pod: k8s.Pod, gpu: int, samples: int = 60) -> list[dict[str, Any]]:
    """Container Insights' hour of ``pod`` on GPU ``gpu`` of NODE (``samples`` one-minute
    samples) and of the node's GPU: the series that say which GPU the pod held."""
    device = ci.gpu_device(gpu)
    stamp = datetime.fromtimestamp(HOUR + 1800, UTC)

    def datum(name: str, dims: dict[str, str], count: int) -> dict[str, Any]:
        stats = {"SampleCount": count, "Sum": 50.0 * count, "Minimum": 50.0, "Maximum": 50.0}
        dimensions = [{"Name": k, "Value": v} for k, v in dims.items()]
        return {"MetricName": name, "Dimensions": dimensions, "Timestamp": stamp,
                "StatisticValues": stats}  # fmt: skip

    node = ci.node_gpu_dimensions(CLUSTER, NODE, "i-0123", "p5.48xlarge", device)
    return [
        datum(CI_POD_GPU_UTILIZATION_METRIC, ci.pod_gpu_dimensions(CLUSTER, pod, device), samples),
        datum(CI_NODE_GPU_POWER_METRIC, node, 60),
    ]


@pytest.mark.parametrize(
    ("bert", "llama"),
    [((22.0, 8.0), (85.0, 85.0)), ((10.0, 2.0), (10.0, 2.0))],
    ids=["one-busy", "both-idle"],
)
def test_each_job_on_a_shared_node_is_judged_on_the_gpus_its_pods_held(
    cloudwatch: Any, bert: tuple[float, float], llama: tuple[float, float]
) -> None:
    """bert's pods hold GPUs 0 and 1 of a node, llama's 2 and 3, both stepping the hour; a
    notebook holds GPU 4 for part of it. Container Insights' pod series say which GPU each pod
    held, so each job is judged on its own two (the node's mean of all four would call a busy
    llama underutilized, and two idle jobs on one node get each its own figure, not none)."""
    bert_pods = k8s.pytorchjob_pods("nlp", "bert", 1)
    llama_pods = k8s.pytorchjob_pods("nlp", "llama", 1)
    notebook = k8s.notebook_pod("research", "jupyter")
    data, insights = [], []
    placed = [(bert_pods[0], 0, bert), (bert_pods[1], 1, bert)]
    placed += [(llama_pods[0], 2, llama), (llama_pods[1], 3, llama)]
    for pod, gpu, (power, sm) in placed:
        for metric, value in (
            (GpuMetric.POWER_UTILIZATION, power),
            (GpuMetric.SM_ACTIVE, sm),
            (GpuMetric.ALLOCATED_POWER_UTILIZATION, power),
        ):
            data.append(_datum(metric, gpu, value))
        insights += _insights(pod, gpu)
    insights += _insights(notebook, 4, samples=20)
    cloudwatch.put_metric_data(Namespace=NAMESPACE_GPU, MetricData=data)
    cloudwatch.put_metric_data(Namespace=NAMESPACE_CONTAINER_INSIGHTS, MetricData=insights)
    pods = {p.name: "bert" for p in bert_pods} | {p.name: "llama" for p in llama_pods}
    held = job_gpu_hours(
        cloudwatch=cloudwatch, cluster=CLUSTER, start=HOUR, end=HOUR + 3600,
        job_of_pod=pods, pod_nodes=dict.fromkeys(pods, NODE), classic=True,
    )  # fmt: skip
    assert held == {
        "bert": {(NODE, "0", HOUR), (NODE, "1", HOUR)},
        "llama": {(NODE, "2", HOUR), (NODE, "3", HOUR)},
    }
    both = {"bert": {NODE}, "llama": {NODE}}
    usage = _gpu_usage(
        cloudwatch, CLUSTER, both, {"bert": [HOUR], "llama": [HOUR]}, HOUR, HOUR + 3600,
        placed=held,
    )  # fmt: skip
    assert usage == {"bert": GpuUsage(*bert), "llama": GpuUsage(*llama)}
