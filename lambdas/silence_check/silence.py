"""Which GPUs are silent: the cluster's running GPU instances against the GPUs the exporter
sent a sample for in the look back. Pure logic, no AWS.

Why a check from outside the node: a per-GPU alarm cannot see silence. A series that a Metrics
Insights query no longer returns takes its contributor to OK "no matter the treat missing data
treatment" (CloudWatch User Guide, "Create a CloudWatch alarm based on a Metrics Insights
query", "Missing data in CloudWatch Metrics Insights alarms"), and everything a node says about
itself (the exporter's series, Container Insights' ``node_gpu_limit``) stops with the node.
Container Insights' leader publishes, from the API server, only ``cluster_node_count`` (every
node object, GPU or not) and ``cluster_failed_node_count`` (nodes with a MemoryPressure,
DiskPressure, PIDPressure or NetworkUnavailable condition not False: a hung node's Ready
condition is not among them), and the GPUs pods request, never the GPUs nodes have
(amazon-contributing/opentelemetry-collector-contrib,
receiver/awscontainerinsightreceiver/internal/k8sapiserver/k8sapiserver.go ``getClusterMetrics``
and ``getAcceleratorCountMetrics``; internal/aws/k8s/k8sclient/node.go ``failedNodeConditions``).
So no series CloudWatch has says how many GPUs should report. EC2 does: the cluster's running
instances and, from the instance type, their NVIDIA GPUs.

The rules: a GPU instance younger than the grace period is not expected yet; an instance that
is not running (stopping, shutting down, terminated: a scale-down) is not expected at all. A
node that sent nothing is one silent entry for all its GPUs; a node that sent some GPUs is one
entry per missing GPU index (a GPU the driver no longer lists).
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from gpu_insights_agent.contract.metrics import (
    ALL_GPUS,
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_NODE,
    SILENT_GPUS_METRIC,
    SILENT_NODES_METRIC,
    GpuMetric,
)

#: What a reporting GPU sends every cycle, lost or not (the exporter's
#: collect_once, agent/gpu_insights_agent/exporter/exporter.py).
REPORTING_METRIC: Final = GpuMetric.HEALTHY


@dataclass(frozen=True)
class GpuNode:
    """A running GPU instance of the cluster, as EC2 describes it."""

    instance_id: str
    instance_type: str
    private_dns_name: str
    #: NVIDIA GPUs of the instance type (EC2's GpuInfo).
    gpus: int
    #: LaunchTime, epoch seconds.
    launched: float

    def names(self) -> tuple[str, ...]:
        """What the node may be called in Kubernetes, so in the exporter's NodeName: the private
        DNS name (EKS's default, with IP or resource names), its host part, or the instance id."""
        dns = self.private_dns_name
        return tuple(dict.fromkeys(n for n in (dns, dns.split(".")[0], self.instance_id) if n))


@dataclass(frozen=True)
class SilentGpus:
    """One silent series: a GPU index, or ``ALL_GPUS`` for a node that sent nothing."""

    node: str
    instance_id: str
    instance_type: str
    gpu: str
    #: GPUs the entry stands for: 1, or all of the node's.
    count: int

    def line(self) -> str:
        what = f"all {self.count} GPUs" if self.gpu == ALL_GPUS else f"GPU {self.gpu}"
        return f"{self.node} ({self.instance_id}, {self.instance_type}): {what} silent"


@dataclass(frozen=True)
class Check:
    """One run's verdict."""

    expected_nodes: int
    expected_gpus: int
    #: GPU instances inside their grace period, not counted.
    young_nodes: int
    silent: tuple[SilentGpus, ...] = field(default=())

    @property
    def silent_gpus(self) -> int:
        return sum(s.count for s in self.silent)

    @property
    def silent_nodes(self) -> int:
        return len({s.instance_id for s in self.silent})


def find_silent(
    nodes: Iterable[GpuNode],
    reported: Mapping[str, Iterable[str]],
    listed: Iterable[str] = (),
    *,
    now: float,
    grace_s: int,
) -> Check:
    """``reported`` maps a NodeName to the GPU indices it sent a sample for in the look back;
    ``listed`` holds NodeNames the exporter used more recently than that (ListMetrics'
    three hours), to name a node that went silent as it was named."""
    sent = {node: {str(g) for g in gpus} for node, gpus in reported.items()}
    known = set(listed) | set(sent)
    expected = young = gpus = 0
    silent: list[SilentGpus] = []
    for node in sorted(nodes, key=lambda n: n.instance_id):
        if now - node.launched < grace_s:
            young += 1
            continue
        expected += 1
        gpus += node.gpus
        names = node.names()
        name = next((n for n in names if n in sent), None) or next(
            (n for n in names if n in known), names[0]
        )
        indices = sent.get(name, set())
        if not indices:
            silent.append(
                SilentGpus(name, node.instance_id, node.instance_type, ALL_GPUS, node.gpus)
            )
            continue
        silent += [
            SilentGpus(name, node.instance_id, node.instance_type, str(i), 1)
            for i in range(node.gpus)
            if str(i) not in indices
        ]
    return Check(expected, gpus, young, tuple(silent))


def metric_data(cluster: str, check: Check, now: float) -> list[dict[str, Any]]:
    """Each silent series (only while silent), then the cluster's two counts (every run: the
    check's heartbeat)."""
    at = datetime.fromtimestamp(now, UTC)

    def datum(metric: str, dims: dict[str, str], value: float) -> dict[str, Any]:
        return {
            "MetricName": metric,
            # In name order, as the alarm's SCHEMA lists them (CloudWatch ignores the order;
            # moto matches a query's dimensions in order).
            "Dimensions": [{"Name": k, "Value": v} for k, v in sorted(dims.items())],
            "Timestamp": at,
            "Value": value,
            "Unit": "Count",
        }

    data = [
        datum(
            SILENT_GPUS_METRIC,
            {DIM_CLUSTER: cluster, DIM_NODE: s.node, DIM_GPU_INDEX: s.gpu},
            s.count,
        )
        for s in check.silent
    ]
    data.append(datum(SILENT_GPUS_METRIC, {DIM_CLUSTER: cluster}, check.silent_gpus))
    data.append(datum(SILENT_NODES_METRIC, {DIM_CLUSTER: cluster}, check.silent_nodes))
    return data
