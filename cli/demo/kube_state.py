"""Kube State Metrics' series of the demo's nodes and pods as the add-on sends them in OTel mode
(lambdas/shared/kube_state.py: KSM's names and labels, the pod, namespace and node moved to the
resource, the cluster set on it), every 30 s (the add-on's ``metricResolution`` default), as
samples for the local Prometheus (cli/demo/promql.py ``Sample``).

Two stretches use them: the OTel alarm stage's two hours (cli/demo/otel_alarms.py: every node's
GPU capacity, a GPU pod the scheduler cannot place) and the morning before the replayed hours
of the OTel run (``morning_samples``), whose events the cluster dashboard's Kubernetes widgets
draw: a GPU pod pending for 20 minutes, and a GPU node whose kubelet stops posting its status
(Ready ``unknown`` for 10 minutes) and that is then cordoned for half an hour while it is
checked. The morning's events end hours before the replay, whose PromQL alarms (step 5) they
leave quiet, so the OTel run's alarm history stays the Classic run's.
"""

from collections.abc import Iterable, Iterator
from typing import Final

from cli.demo.exporter import START_EPOCH, pod_uid
from cli.demo.promql import Sample
from cli.demo.realistic import nodes as ec2
from cli.demo.realistic import pods as k8s
from cli.demo.week import NODES
from lambdas.shared.dcgm import CLOUDWATCH as L
from lambdas.shared.kube_state import (
    KSM_CAPACITY,
    KSM_GPU_RESOURCE,
    KSM_NODE_CONDITION,
    KSM_NODE_UNSCHEDULABLE,
    KSM_POD_PHASE,
    KSM_POD_REQUESTS,
    KSM_POD_UNSCHEDULABLE,
    KSM_RESOURCE,
)

#: Kube State Metrics' scrape (the add-on's 30 s metricResolution default).
KSM_STEP_S: Final = 30
#: Kubeflow's PyTorchJob runs its replicas' container named ``pytorch`` (kubeflow/
#: training-operator pkg/apis/kubeflow.org/v1 ``PyTorchJobDefaultContainerName``).
PYTORCH_CONTAINER: Final = "pytorch"
#: A node's Ready condition: KSM writes one series per status, 1 on the one that holds
#: (docs/metrics/cluster/node-metrics.md); a node whose kubelet stops posting is ``unknown``.
STATUSES: Final = ("true", "false", "unknown")


def _times(start: float, end: float) -> Iterator[float]:
    at = start
    while at < end:
        yield at
        at += KSM_STEP_S


def capacity_labels(cluster: str, node: ec2.Node) -> dict[str, str]:
    """The labels of a node's Kube State Metrics ``nvidia.com/gpu`` capacity as the add-on
    sends it: KSM's ``node``, ``resource`` and ``unit``, the node and cluster on the resource
    and the node's Kubernetes labels beside them (lambdas/shared/kube_state.py ``KSM_CAPACITY``)."""
    return {
        L.cluster: cluster,
        L.node: node.name,
        "node": node.name,
        KSM_RESOURCE: KSM_GPU_RESOURCE,
        "unit": "integer",
    } | {L.node_label_prefix + k: v for k, v in node.labels.items()}


def capacity_samples(
    cluster: str, nodes: Iterable[ec2.Node], start: float, end: float
) -> Iterator[Sample]:
    """Each node's ``nvidia.com/gpu`` capacity, its instance type's GPUs (the device plugin
    advertises every GPU of the node): KSM's ``node``, ``resource`` and ``unit`` labels, the
    node and cluster on the resource and the node's labels beside them (cdk/alarms/promql.py
    ``KSM_CAPACITY``)."""
    for node in nodes:
        labels = capacity_labels(cluster, node)
        gpus = node.instance_type.gpu_count
        for at in _times(start, end):
            yield KSM_CAPACITY, labels, at, float(gpus)


def pending_samples(
    cluster: str, pod: k8s.Pod, gpus: int, start: float, end: float
) -> Iterator[Sample]:
    """A pod the scheduler cannot place: ``kube_pod_status_unschedulable`` 1, its phase Pending
    and its container's requests (``gpus`` GPUs, and CPUs the GPU alarm leaves out), the pod
    and namespace on the resource as the add-on moves them, KSM's ``node`` label empty: no
    node holds the pod."""
    labels = {L.cluster: cluster, L.namespace: pod.namespace, L.pod: pod.name, "uid": pod_uid(pod)}
    requests = ((KSM_GPU_RESOURCE, "integer", float(gpus)), ("cpu", "core", 12.0 * gpus))
    for at in _times(start, end):
        yield KSM_POD_UNSCHEDULABLE, labels, at, 1.0
        yield KSM_POD_PHASE, labels | {"phase": "Pending"}, at, 1.0
        for resource, unit, value in requests:
            container = {"container": PYTORCH_CONTAINER, "node": "", KSM_RESOURCE: resource}
            yield KSM_POD_REQUESTS, labels | container | {"unit": unit}, at, value


def node_samples(
    cluster: str,
    node: ec2.Node,
    start: float,
    end: float,
    *,
    unknown: tuple[float, float],
    cordoned: tuple[float, float],
) -> Iterator[Sample]:
    """A GPU node's Ready condition and cordon from ``start`` to ``end``: Ready ``unknown``
    within ``unknown`` (its kubelet stopped posting), ``true`` otherwise; cordoned
    (``kube_node_spec_unschedulable`` 1) within ``cordoned``; its GPU capacity throughout."""
    yield from capacity_samples(cluster, (node,), start, end)
    labels = {L.cluster: cluster, L.node: node.name, "node": node.name}
    for at in _times(start, end):
        holds = "unknown" if unknown[0] <= at < unknown[1] else "true"
        for status in STATUSES:
            condition = labels | {"condition": "Ready", "status": status}
            yield KSM_NODE_CONDITION, condition, at, float(status == holds)
        yield KSM_NODE_UNSCHEDULABLE, labels, at, float(cordoned[0] <= at < cordoned[1])


#: The morning's events, in seconds before the replayed hours: the GPU pod pending for 20
#: minutes five hours before; the research node Ready ``unknown`` for 10 minutes three hours
#: before, then cordoned for 30 minutes (KSM's series of the node from 10 minutes before to 10
#: minutes after).
PENDING_BEFORE_S: Final = 5 * 3600.0
PENDING_S: Final = 20 * 60.0
UNKNOWN_BEFORE_S: Final = 3 * 3600.0
UNKNOWN_S: Final = 10 * 60.0
CORDONED_S: Final = 30 * 60.0
#: The pending pod: a PyTorchJob's master asking for a whole p5.48xlarge (8 GPUs).
MORNING_POD: Final = k8s.pytorchjob_pods("nlp", "bert-large-pretrain", 0)[0]
MORNING_GPUS: Final = 8
#: The node whose kubelet stops posting: the research team's.
MORNING_NODE: Final = next(
    node for node, namespace, _, _ in NODES.values() if namespace == "research"
)


def pending_window() -> tuple[float, float]:
    """When the morning's GPU pod is pending (epoch seconds)."""
    start = START_EPOCH - PENDING_BEFORE_S
    return start, start + PENDING_S


def morning_samples(cluster: str) -> Iterator[Sample]:
    """The morning's Kube State Metrics series (the module's docstring)."""
    yield from pending_samples(cluster, MORNING_POD, MORNING_GPUS, *pending_window())
    unknown = START_EPOCH - UNKNOWN_BEFORE_S
    cordoned = (unknown + UNKNOWN_S, unknown + UNKNOWN_S + CORDONED_S)
    yield from node_samples(
        cluster, MORNING_NODE, unknown - 600, cordoned[1] + 600,
        unknown=(unknown, unknown + UNKNOWN_S), cordoned=cordoned,
    )  # fmt: skip
