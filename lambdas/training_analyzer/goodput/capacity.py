"""The funnel's paid stage: each GPU node's GPUs times the hours it ran, read from Container
Insights in either mode. Read-only; clients are injected.

- Classic: ``node_gpu_limit``, "The total number of GPU(s) available on the node", dimensions
  (ClusterName) and (ClusterName, InstanceId, NodeName) (Amazon CloudWatch User Guide, "Amazon
  EKS and Kubernetes Container Insights metrics", Container-Insights-metrics-EKS.html, and
  "... with enhanced observability metrics", Container-Insights-metrics-enhanced-EKS.html),
  read per node hourly with GetMetricData in full batches: its hourly ``Average`` (the GPUs)
  times the share of the hour it reported (its ``SampleCount`` over a full hour's, the most
  common hourly count: gpu_hours/aws.py ``samples_per_hour``). The node's instance type is its
  ``node_gpu_*`` series' ``InstanceType`` dimension (contract.metrics ``CI_NODE_GPU_SCHEMA``).
- OTel: Kube State Metrics' ``kube_node_status_capacity{resource="nvidia_com_gpu"}`` as the
  add-on sends it, labelled with the node and its Kubernetes labels (lambdas/shared/
  kube_state.py), read with PromQL at each hour's end: the GPUs (``max_over_time``) and the
  samples in the hour (``count_over_time``) per node, and the node's instance type and managed
  node group from its labels (``node.kubernetes.io/instance-type``,
  ``eks.amazonaws.com/nodegroup``: the labels EKS managed node groups set, cli/demo/realistic/
  nodes.py).
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any, Final

from gpu_insights_agent.contract.metrics import (
    CI_NODE_GPU_LIMIT_METRIC,
    CI_NODE_GPU_LIMIT_SCHEMA,
    CI_NODE_GPU_POWER_METRIC,
    DIM_CLUSTER,
    DIM_NODE,
    NAMESPACE_CONTAINER_INSIGHTS,
)
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.shared.exporter_promql import hourly, read_hours
from lambdas.shared.kube_state import KSM_CAPACITY, KSM_GPU_RESOURCE, KSM_RESOURCE, ksm_selector
from lambdas.shared.metric_fetcher import MetricQuery, fetch, listed_dimensions
from lambdas.shared.promql import PromQLClient, quote_label
from lambdas.training_analyzer.goodput.funnel import NodeCapacity
from lambdas.training_analyzer.gpu_hours.aws import HOUR, samples_per_hour

DIM_INSTANCE_TYPE: Final = "InstanceType"
#: The Kubernetes labels a node's group is read from (OTel mode), the first found.
INSTANCE_TYPE_LABEL: Final = "node.kubernetes.io/instance-type"
NODE_GROUP_LABELS: Final = ("eks.amazonaws.com/nodegroup", "karpenter.sh/nodepool")
#: The group of a node whose paid GPU-hours are the exporter's (no capacity series).
EXPORTER_VIEW: Final = "(GPUs the exporter saw)"


def node_hours(
    per_node: Mapping[str, Mapping[int, tuple[float, float]]],
) -> dict[str, float]:
    """Each node's GPU-hours from its hourly (GPUs, samples): the GPUs times the share of the
    hour it reported, against the samples a full hour holds."""
    full = samples_per_hour(samples for hours in per_node.values() for _, samples in hours.values())
    return {
        node: sum(gpus * min(1.0, samples / full) for gpus, samples in hours.values())
        for node, hours in per_node.items()
    }


def classic_capacity(
    cloudwatch: Any, cluster: str, *, start: float, end: float
) -> list[NodeCapacity]:
    """Every node's paid GPU-hours in [start, end) from ``node_gpu_limit`` (Classic)."""
    types: dict[str, str] = {}
    for dims in listed_dimensions(
        cloudwatch, NAMESPACE_CONTAINER_INSIGHTS, CI_NODE_GPU_POWER_METRIC, {DIM_CLUSTER: cluster}
    ):
        if DIM_NODE in dims and DIM_INSTANCE_TYPE in dims:
            types[dims[DIM_NODE]] = dims[DIM_INSTANCE_TYPE]
    queries = []
    for dims in listed_dimensions(
        cloudwatch, NAMESPACE_CONTAINER_INSIGHTS, CI_NODE_GPU_LIMIT_METRIC, {DIM_CLUSTER: cluster}
    ):
        if set(dims) != set(CI_NODE_GPU_LIMIT_SCHEMA):
            continue
        for name, stat in (("gpus", "Average"), ("samples", "SampleCount")):
            queries.append(
                MetricQuery(
                    (dims[DIM_NODE], name),
                    NAMESPACE_CONTAINER_INSIGHTS,
                    CI_NODE_GPU_LIMIT_METRIC,
                    tuple(dims.items()),
                    stat,
                    HOUR,
                )
            )
    read: dict[str, dict[str, dict[int, float]]] = defaultdict(dict)
    for batch in fetch(cloudwatch, queries, start=start, end=end):
        for series in batch:
            node, name = series.query.key
            read[node][name] = {
                int(t.timestamp()) // HOUR * HOUR: v
                for t, v in zip(series.timestamps, series.values, strict=True)
            }
    per_node = {
        node: {
            hour: (gpus, named.get("samples", {}).get(hour, 0.0))
            for hour, gpus in named.get("gpus", {}).items()
        }
        for node, named in read.items()
    }
    return [
        NodeCapacity(node=node, gpu_hours=hours, instance_type=types.get(node, ""))
        for node, hours in sorted(node_hours(per_node).items())
    ]


class CapacityQueries:
    """The PromQL over Kube State Metrics' GPU capacity of one cluster's nodes."""

    def __init__(self, cluster: str, labels: DcgmLabels = CLOUDWATCH) -> None:
        self.cluster, self.labels = cluster, labels

    def keys(self) -> tuple[str, ...]:
        group = (self.labels.node_label_prefix + k for k in NODE_GROUP_LABELS)
        instance = self.labels.node_label_prefix + INSTANCE_TYPE_LABEL
        return (self.labels.node, instance, *group)

    def _over(self, function: str) -> str:
        selector = ksm_selector(
            KSM_CAPACITY, self.cluster, self.labels, **{KSM_RESOURCE: KSM_GPU_RESOURCE}
        )
        by = ", ".join(quote_label(k) for k in self.keys())
        return f"max by ({by}) ({function}({selector}[1h]))"

    def gpus(self) -> str:
        return self._over("max_over_time")

    def samples(self) -> str:
        return self._over("count_over_time")


def otel_capacity(
    promql: PromQLClient,
    cluster: str,
    *,
    start: float,
    end: float,
    labels: DcgmLabels = CLOUDWATCH,
) -> list[NodeCapacity]:
    """Every node's paid GPU-hours in [start, end) from Kube State Metrics' capacity (OTel)."""
    queries = CapacityQueries(cluster, labels)
    instance_label = labels.node_label_prefix + INSTANCE_TYPE_LABEL
    group_labels = [labels.node_label_prefix + k for k in NODE_GROUP_LABELS]
    names: dict[str, tuple[str, str]] = {}
    gpus: dict[str, dict[int, float]] = defaultdict(dict)
    samples: dict[str, dict[int, float]] = defaultdict(dict)
    for target, query in ((gpus, queries.gpus()), (samples, queries.samples())):
        for series in read_hours(promql, query, start, end):
            node = series.labels.get(labels.node, "")
            if not node:
                continue
            group = next((series.labels[g] for g in group_labels if series.labels.get(g)), "")
            names[node] = (series.labels.get(instance_label, ""), group)
            for hour, value in hourly(series).items():
                target[node][hour] = max(value, target[node].get(hour, 0.0))
    per_node = {
        node: {hour: (count, samples[node].get(hour, 0.0)) for hour, count in hours.items()}
        for node, hours in gpus.items()
    }
    return [
        NodeCapacity(
            node=node, gpu_hours=hours, instance_type=names[node][0], node_group=names[node][1]
        )
        for node, hours in sorted(node_hours(per_node).items())
    ]


def exporter_capacity(seen_by_node: Mapping[str, float]) -> list[NodeCapacity]:
    """The paid GPU-hours where Container Insights reported no node's capacity: the GPU-hours
    the exporter saw on each node (every GPU of every node it runs on, lost ones included),
    marked as the exporter's."""
    return [
        NodeCapacity(node=node, gpu_hours=hours, node_group=EXPORTER_VIEW)
        for node, hours in sorted(seen_by_node.items())
    ]


def capacity_rows(nodes: Iterable[NodeCapacity]) -> list[dict[str, Any]]:
    """The day table's ``capacity``: one row per node."""
    return [{"node": n.node, "gpu_hours": round(n.gpu_hours, 4), "group": n.group} for n in nodes]
