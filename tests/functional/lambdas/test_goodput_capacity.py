"""The funnel's paid stage read against moto (Classic: Container Insights' ``node_gpu_limit``
per node, GetMetricData in full batches) and its PromQL (OTel: Kube State Metrics' capacity),
with the dimensions and labels the realistic cluster model gives them."""

from datetime import UTC, datetime

import boto3
from moto import mock_aws

from cli.demo.indexed_cloudwatch import indexed_cloudwatch
from cli.demo.realistic import container_insights as ci
from lambdas.shared.aws_clients import client
from lambdas.training_analyzer.goodput.capacity import CapacityQueries, classic_capacity

START = 1_764_000_000 - 1_764_000_000 % 3600


def _minutes(cw: object, metric: str, dims: dict[str, str], value: float, minutes: int) -> None:
    data = [
        {
            "MetricName": metric,
            "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
            "Timestamp": datetime.fromtimestamp(START + 60 * i, UTC),
            "Value": value,
        }
        for i in range(minutes)
    ]
    for first in range(0, len(data), 1000):
        cw.put_metric_data(Namespace="ContainerInsights", MetricData=data[first : first + 1000])  # type: ignore[attr-defined]


def test_each_nodes_gpus_times_the_hours_it_reported() -> None:
    with mock_aws(), indexed_cloudwatch():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        cw = client("cloudwatch", session=session)
        # A p5 all of two hours, a g5.12xlarge (4 GPUs) for the first 30 minutes of the first.
        _minutes(cw, "node_gpu_limit", ci.node_dimensions("c", "p5-node", "i-1"), 8.0, 120)
        _minutes(cw, "node_gpu_limit", ci.node_dimensions("c", "g5-node", "i-2"), 4.0, 30)
        # The per-cluster series is no node's: left out.
        _minutes(cw, "node_gpu_limit", {"ClusterName": "c"}, 12.0, 120)
        for node, kind in (("p5-node", "p5.48xlarge"), ("g5-node", "g5.12xlarge")):
            dims = ci.node_gpu_dimensions("c", node, "i-x", kind, "nvidia0")
            _minutes(cw, "node_gpu_power_draw", dims, 100.0, 1)
        nodes = classic_capacity(cw, "c", start=START, end=START + 7200)
    assert [(n.node, n.instance_type, n.gpu_hours) for n in nodes] == [
        ("g5-node", "g5.12xlarge", 2.0),
        ("p5-node", "p5.48xlarge", 16.0),
    ]


def test_the_otel_query_reads_ksm_gpu_capacity_by_node_and_its_labels() -> None:
    query = CapacityQueries("train").gpus()
    assert query == (
        'max by ("@resource.k8s.node.name", '
        '"@resource.k8s.node.label.node.kubernetes.io/instance-type", '
        '"@resource.k8s.node.label.eks.amazonaws.com/nodegroup", '
        '"@resource.k8s.node.label.karpenter.sh/nodepool") (max_over_time('
        '{__name__="kube_node_status_capacity", "@resource.k8s.cluster.name"="train", '
        'resource="nvidia_com_gpu"}[1h]))'
    )
