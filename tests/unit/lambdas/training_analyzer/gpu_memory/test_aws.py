"""The GPU memory reader against moto's CloudWatch, with Container Insights' own dimension
sets (cli/demo/realistic/container_insights.py) and its unit: bytes, the agent scaling DCGM's MiB
by 1024 * 1024 (aws/amazon-cloudwatch-agent translator/translate/otel/processor/
metricstransformprocessor/translator.go)."""

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cli.demo.datums import statistic_set
from cli.demo.realistic import container_insights as ci
from cli.demo.realistic import pods as k8s
from gpu_insights_agent.contract.metrics import (
    CI_NODE_GPU_POWER_METRIC,
    CI_POD_GPU_MEMORY_TOTAL_METRIC,
    CI_POD_GPU_MEMORY_USED_METRIC,
    NAMESPACE_CONTAINER_INSIGHTS,
)
from lambdas.shared.metric_fetcher import MAX_QUERIES_PER_CALL
from lambdas.training_analyzer.gpu_memory.aws import memory_queries, read_gpu_memory

CLUSTER = "train"
START = 1_764_547_200.0  # 2025-12-01 00:00 UTC
MIB = 2**20
GIB = 2**30
H100 = 81_559 * MIB


@pytest.fixture
def cloudwatch() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("cloudwatch", region_name="us-east-1")


def _put(cloudwatch: Any, data: list[dict[str, Any]]) -> None:
    for first in range(0, len(data), 1000):
        cloudwatch.put_metric_data(
            Namespace=NAMESPACE_CONTAINER_INSIGHTS, MetricData=data[first : first + 1000]
        )


def _pod_hours(pod: k8s.Pod, device: str, used_gib: list[float]) -> list[dict[str, Any]]:
    dims = ci.pod_gpu_dimensions(CLUSTER, pod, device)
    data = []
    for hour, used in enumerate(used_gib):
        at = START + hour * 3600
        data += [
            statistic_set(CI_POD_GPU_MEMORY_USED_METRIC, dims, at, [used * GIB], "Bytes", 60),
            statistic_set(CI_POD_GPU_MEMORY_TOTAL_METRIC, dims, at, [H100], "Bytes", 60),
        ]
    return data


def _gpu_node(cloudwatch: Any, node: str, instance_id: str, instance_type: str) -> None:
    """A GPU node's ``node_gpu_power_draw``, whose dimensions name its instance type."""
    dims = ci.node_gpu_dimensions(CLUSTER, node, instance_id, instance_type, "nvidia0")
    _put(cloudwatch, [statistic_set(CI_NODE_GPU_POWER_METRIC, dims, START, [600.0])])


def test_each_pods_gpu_is_read_with_its_job_and_node_type(cloudwatch: Any) -> None:
    # A PyTorchJob's two pods on one p5 (the emitter reported their node) and a notebook.
    master, worker = k8s.pytorchjob_pods("nlp", "bert", 1)
    notebook = k8s.notebook_pod("research", "jupyter-alice")
    _put(
        cloudwatch,
        _pod_hours(master, "nvidia0", [70, 71, 70])
        + _pod_hours(worker, "nvidia1", [69, 70, 71])
        + _pod_hours(notebook, "nvidia0", [6, 9]),
    )
    node = "ip-10-0-2-22.ec2.internal"
    _gpu_node(cloudwatch, node, "i-0123", "p5.48xlarge")
    gpus = read_gpu_memory(
        cloudwatch, CLUSTER, start=START, end=START + 86_400,
        pod_nodes={master.name: node, worker.name: node},
    )  # fmt: skip
    by_pod = {g.pod: g for g in gpus}
    assert by_pod[master.name].hourly_peaks == (70 * GIB, 71 * GIB, 70 * GIB)
    assert by_pod[master.name].capacity_bytes == H100
    assert by_pod[master.name].instance_type == "p5.48xlarge"
    assert {by_pod[master.name].job, by_pod[worker.name].job} == {"bert"}
    assert by_pod[notebook.name].job == "jupyter-alice"
    # No node known for it, but the cluster's GPU nodes are all p5s: so is its GPU's.
    assert by_pod[notebook.name].instance_type == "p5.48xlarge"
    assert by_pod[notebook.name].hourly_peaks == (6 * GIB, 9 * GIB)
    # A p4d joins the cluster: the notebook's GPU may be either node's.
    _gpu_node(cloudwatch, "ip-2", "i-0456", "p4d.24xlarge")
    mixed = read_gpu_memory(
        cloudwatch, CLUSTER, start=START, end=START + 86_400,
        pod_nodes={master.name: node, worker.name: node},
    )  # fmt: skip
    by_pod = {g.pod: g for g in mixed}
    assert by_pod[notebook.name].instance_type is None
    assert by_pod[master.name].instance_type == "p5.48xlarge"


def test_a_fleet_is_read_in_full_batches(cloudwatch: Any) -> None:
    # 300 pods' GPUs: 600 queries, two GetMetricData calls (500 + 100), never one per series.
    pods = k8s.job_pods("batch", "sweep", 300)
    _put(cloudwatch, [d for p in pods for d in _pod_hours(p, "nvidia0", [5])])
    calls: list[int] = []
    cloudwatch.meta.events.register(
        "provide-client-params.cloudwatch.GetMetricData",
        lambda params, **_: calls.append(len(params["MetricDataQueries"])),
    )
    assert len(memory_queries(cloudwatch, CLUSTER, start=START, end=START + 3600)) == 600
    gpus = read_gpu_memory(cloudwatch, CLUSTER, start=START, end=START + 3600)
    assert calls == [MAX_QUERIES_PER_CALL, 100]
    assert len(gpus) == 300
    assert all(g.hourly_peaks == (5 * GIB,) for g in gpus)
