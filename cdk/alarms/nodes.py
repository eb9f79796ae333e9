"""The GPU nodes under the jobs, OTel mode: a GPU node NotReady, cordoned, or whose GPUs the
node monitoring agent marks bad, and a GPU pod in a crash loop. Four PromQL alarms on Kube State
Metrics, each one contributor per node (or pod), and only nodes with ``nvidia_com_gpu``
capacity (``kube_node_status_capacity``, cdk/alarms/promql.py ``KSM_CAPACITY``): a CPU node's
trouble is not this product's page.

The series are KSM's as the add-on sends them (lambdas/shared/kube_state.py): every 30 s, the
node as ``@resource.k8s.node.name``. KSM sends every status of a condition, 1 on the one that
holds, so ``status!="true"`` catches False and Unknown (a kubelet that stopped posting status).
``kube_node_status_condition`` carries no reason (kubernetes/kube-state-metrics
docs/metrics/cluster/node-metrics.md @c92fe0c5: labels node, condition, status), so the
hardware page names the node and its GPUs and says where the agent's reason is: ``kubectl
describe node`` (Conditions: AcceleratedHardwareReady False, reason ``NvidiaXID79Error`` and
the like) and the node's events.

``AcceleratedHardwareReady`` is the EKS node monitoring agent's condition ("Detect node health
issues and enable automatic node repair", Amazon EKS User Guide, awsdocs/amazon-eks-user-guide
latest/ug/nodes/node-health-nma.adoc @518e5533): without the agent (the EKS add-on
``eks-node-monitoring-agent``, built into Auto Mode) no node has the condition, the query finds
no series and the alarm stays OK: ``gpu-insights preflight`` says where it is missing.

Classic Container Insights has none of them: see ``ALARMS_BY_MODE`` (cdk/alarms/catalog.py).
"""

from dataclasses import dataclass
from typing import Final

from cdk.alarms.model import AlarmSpec, Comparison, MissingData, Severity
from cdk.alarms.promql import (
    CAPACITY_RANGE_S,
    EVALUATION_INTERVAL_S,
    RECOVERY_S,
    PromQLQuery,
)
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.shared.kube_state import (
    CRASH_LOOP_REASON,
    KSM_CAPACITY,
    KSM_GPU_RESOURCE,
    KSM_NODE_CONDITION,
    KSM_NODE_UNSCHEDULABLE,
    KSM_POD_REQUESTS,
    KSM_RESOURCE,
    KSM_WAITING_REASON,
    NODE_GPUS,
    POD_GPUS,
)
from lambdas.shared.promql import quote_label, quote_string

GPU_NODE_NOT_READY: Final = "gpu-node-not-ready"
GPU_NODE_CORDONED: Final = "gpu-node-cordoned"
GPU_NODE_HARDWARE: Final = "gpu-node-hardware-not-ready"
GPU_POD_CRASH_LOOP: Final = "gpu-pod-crash-looping"
NODE_ALARM_KINDS: Final = (
    GPU_NODE_NOT_READY,
    GPU_NODE_CORDONED,
    GPU_NODE_HARDWARE,
    GPU_POD_CRASH_LOOP,
)
#: The node monitoring agent's GPU condition (node-health-nma.adoc @518e5533).
ACCELERATED_HARDWARE_READY: Final = "AcceleratedHardwareReady"
#: Kubernetes' DefaultTolerationSeconds admission plugin gives every pod a NoExecute toleration
#: of ``node.kubernetes.io/not-ready`` for 300 s (kubernetes/kubernetes
#: plugin/pkg/admission/defaulttolerationseconds/admission.go, ``default-not-ready-toleration-
#: seconds`` 300): at five minutes NotReady the node's pods are evicted, the job is lost.
NOT_READY_MINUTES: Final = 5
#: A drain for maintenance takes minutes; a GPU node cordoned for an hour is one forgotten, its
#: GPUs idle and paid for: this project's threshold.
CORDONED_MINUTES: Final = 60
#: The agent sets the condition for faults it already judged serious ("Condition" severity:
#: research on node-health-nma.adoc); one minute past the first sample pages it, well before
#: node auto repair acts on it (10 minutes: node-repair.adoc @dbc0b729).
HARDWARE_MINUTES: Final = 1
#: The kubelet's restart back-off doubles from 10 s and "is capped at five minutes" ("Pod
#: Lifecycle", Container restarts, https://kubernetes.io/docs/concepts/workloads/pods/
#: pod-lifecycle/): ten minutes in CrashLoopBackOff is two restarts at the cap, no blip.
CRASH_LOOP_MINUTES: Final = 10
MIN_MINUTES: Final = 1
#: PromQL alarms' PendingPeriod is at most 86,400 s (cdk/alarms/promql.py ``MAX_PERIOD_S``).
MAX_MINUTES: Final = 1440


class NodeAlarmSettingsError(ValueError):
    """A node alarm setting the alarms cannot use; the message names it."""


@dataclass(frozen=True, kw_only=True)
class NodeAlarmSettings:
    """How long each condition holds before it pages (the settings ``gpu_node_*_minutes`` and
    ``gpu_pod_crash_loop_minutes``)."""

    not_ready_minutes: int = NOT_READY_MINUTES
    cordoned_minutes: int = CORDONED_MINUTES
    hardware_minutes: int = HARDWARE_MINUTES
    crash_loop_minutes: int = CRASH_LOOP_MINUTES

    def __post_init__(self) -> None:
        for field, key in SETTING_KEYS.items():
            minutes = getattr(self, field)
            if not MIN_MINUTES <= minutes <= MAX_MINUTES:
                raise NodeAlarmSettingsError(
                    f"{key}={minutes} must be {MIN_MINUTES} to {MAX_MINUTES} (a PromQL alarm's "
                    "pending period is at most a day)"
                )


#: Each field's app setting (cdk/settings.py), for the messages that name it.
SETTING_KEYS: Final = {
    "not_ready_minutes": "gpu_node_not_ready_minutes",
    "cordoned_minutes": "gpu_node_cordoned_minutes",
    "hardware_minutes": "gpu_node_hardware_minutes",
    "crash_loop_minutes": "gpu_pod_crash_loop_minutes",
}


def _window() -> str:
    return f"[{CAPACITY_RANGE_S // 60}m]"


def _selector(metric: str, cluster: str, labels: DcgmLabels, *matchers: tuple[str, str]) -> str:
    """``{__name__="metric", cluster="...", label="value"...}``; a matcher's value may start
    with ``!`` for ``!=``."""
    parts = [
        f"__name__={quote_string(metric)}",
        f"{quote_label(labels.cluster)}={quote_string(cluster)}",
    ]
    for name, raw in matchers:
        op, value = ("!=", raw[1:]) if raw.startswith("!") else ("=", raw)
        parts.append(f"{quote_label(name)}{op}{quote_string(value)}")
    return "{" + ", ".join(parts) + "}"


def _gpu_nodes(cluster: str, labels: DcgmLabels) -> str:
    """Each node of ``cluster`` with GPUs, its value their count (``nvidia_com_gpu``
    capacity)."""
    by = ", ".join(quote_label(n) for n in (labels.cluster, labels.node))
    capacity = _selector(KSM_CAPACITY, cluster, labels, (KSM_RESOURCE, KSM_GPU_RESOURCE))
    return f"(max by ({by}) (last_over_time({capacity}{_window()})) > 0)"


def _node_query(cluster: str, breaching: str, minutes: int, labels: DcgmLabels) -> PromQLQuery:
    """Each GPU node whose ``breaching`` series' last value (over two of the add-on's 30 s
    scrapes: one late scrape does not end the wait) is 1, labelled ``NODE_GPUS`` with its GPUs;
    pending ``minutes``."""
    by = ", ".join(quote_label(n) for n in (labels.cluster, labels.node))
    held = f"max by ({by}) (last_over_time({breaching}{_window()})) == 1"
    return PromQLQuery(
        query=(
            f"count_values by ({by}) ({quote_string(NODE_GPUS)}, "
            f"{_gpu_nodes(cluster, labels)} and on ({by}) ({held}))"
        ),
        evaluation_interval_s=EVALUATION_INTERVAL_S,
        pending_period_s=minutes * 60,
        recovery_period_s=RECOVERY_S,
        labels=labels,
        lookback_s=CAPACITY_RANGE_S,
    )


def not_ready_query(cluster: str, minutes: int, labels: DcgmLabels = CLOUDWATCH) -> PromQLQuery:
    """GPU nodes whose Ready condition is False or Unknown."""
    ready = _selector(
        KSM_NODE_CONDITION, cluster, labels, ("condition", "Ready"), ("status", "!true")
    )
    return _node_query(cluster, ready, minutes, labels)


def cordoned_query(cluster: str, minutes: int, labels: DcgmLabels = CLOUDWATCH) -> PromQLQuery:
    """GPU nodes marked unschedulable (``kubectl cordon``, a drain, a repair in progress)."""
    return _node_query(cluster, _selector(KSM_NODE_UNSCHEDULABLE, cluster, labels), minutes, labels)


def hardware_query(cluster: str, minutes: int, labels: DcgmLabels = CLOUDWATCH) -> PromQLQuery:
    """GPU nodes whose ``AcceleratedHardwareReady`` condition is False (the node monitoring
    agent's; no series without the agent)."""
    condition = _selector(
        KSM_NODE_CONDITION,
        cluster,
        labels,
        ("condition", ACCELERATED_HARDWARE_READY),
        ("status", "false"),
    )
    return _node_query(cluster, condition, minutes, labels)


def crash_loop_query(cluster: str, minutes: int, labels: DcgmLabels = CLOUDWATCH) -> PromQLQuery:
    """Each pod that holds GPUs (its containers' ``nvidia_com_gpu`` requests summed, on the node
    KSM names on the requests) with a container waiting in CrashLoopBackOff, labelled
    ``POD_GPUS`` with its GPUs; pending ``minutes``."""
    pod = (labels.cluster, labels.namespace, labels.pod)
    by = ", ".join(quote_label(n) for n in pod)
    by_node = ", ".join(quote_label(n) for n in (*pod, labels.node))
    requests = _selector(KSM_POD_REQUESTS, cluster, labels, (KSM_RESOURCE, KSM_GPU_RESOURCE))
    waiting = _selector(KSM_WAITING_REASON, cluster, labels, ("reason", CRASH_LOOP_REASON))
    held = f"(sum by ({by_node}) (last_over_time({requests}{_window()})) > 0)"
    looping = f"max by ({by}) (last_over_time({waiting}{_window()})) == 1"
    return PromQLQuery(
        query=(
            f"count_values by ({by_node}) ({quote_string(POD_GPUS)}, "
            f"{held} and on ({by}) ({looping}))"
        ),
        evaluation_interval_s=EVALUATION_INTERVAL_S,
        pending_period_s=minutes * 60,
        recovery_period_s=RECOVERY_S,
        labels=labels,
        lookback_s=CAPACITY_RANGE_S,
    )


_NODE_NAMES = (
    f"Each contributor (cluster and node) names the node, {NODE_GPUS} how many GPUs it has."
)
_NODE_GONE = (
    "a node the query does not return is back, has no GPUs, or left the cluster; absent for "
    "the recovery period, its contributor is OK"
)


def node_alarms(cluster: str, settings: NodeAlarmSettings) -> list[AlarmSpec]:
    """OTel mode's four alarms, one PromQL alarm per kind (the fleet count alarms come from
    catalog.cap_alarms)."""
    s = settings
    rows: tuple[tuple[str, str, Severity, PromQLQuery, str], ...] = (
        (
            GPU_NODE_NOT_READY,
            "GPU node NotReady",
            Severity.CRITICAL,
            not_ready_query(cluster, s.not_ready_minutes),
            f"A GPU node's Ready condition has been False or Unknown for {s.not_ready_minutes} "
            "minutes: its kubelet stopped reporting (the instance is down, out of memory or "
            "off the network) or reports itself unhealthy. Kubernetes evicts its pods after 5 "
            "minutes NotReady (DefaultTolerationSeconds), so the jobs on it are lost. kubectl "
            "describe node for the condition's reason and message, the instance's status "
            "checks in EC2, and whether node auto repair replaces it (after 30 minutes: "
            f"gpu-insights status). {_NODE_NAMES}",
        ),
        (
            GPU_NODE_CORDONED,
            "GPU node cordoned",
            Severity.WARNING,
            cordoned_query(cluster, s.cordoned_minutes),
            f"A GPU node has been unschedulable (cordoned) for {s.cordoned_minutes} minutes: "
            "no new pod lands on it, so its GPUs idle while still paid for. A drain that "
            "stalled (a PodDisruptionBudget), maintenance forgotten, or a repair that did not "
            "finish. kubectl describe node (Taints, Unschedulable, the events); uncordon it "
            f"or replace it. {_NODE_NAMES}",
        ),
        (
            GPU_NODE_HARDWARE,
            "GPU hardware not ready",
            Severity.CRITICAL,
            hardware_query(cluster, s.hardware_minutes),
            f"The EKS node monitoring agent has set {ACCELERATED_HARDWARE_READY}=False on a "
            f"GPU node for {s.hardware_minutes} minutes: it found a GPU fault it judges "
            "serious (a well-known XID, a double-bit ECC error, an NVLink error, a DCGM "
            "failure). Kube State Metrics carries no reason: kubectl describe node names it "
            "(Conditions: e.g. NvidiaXID79Error), kubectl get events the agent's events. With "
            "node auto repair on, EKS reboots or replaces the node 10 minutes after the "
            f"condition (gpu-insights status). {_NODE_NAMES}",
        ),
        (
            GPU_POD_CRASH_LOOP,
            "GPU pod crash looping",
            Severity.WARNING,
            crash_loop_query(cluster, s.crash_loop_minutes),
            f"A pod that holds GPUs has had a container in CrashLoopBackOff for "
            f"{s.crash_loop_minutes} minutes: it starts, fails and waits up to 5 minutes "
            "before the next try, while its GPUs stay allocated to it. kubectl logs "
            "--previous for why it exits (a CUDA error, out of memory, a bad image or "
            "config), kubectl describe pod for the exit code and restarts. Each contributor "
            f"(cluster, namespace, pod, node) names the pod, {POD_GPUS} the GPUs it holds.",
        ),
    )
    return [
        AlarmSpec(
            key=kind,
            kind=kind,
            title=title,
            description=description,
            severity=severity,
            metric=query,
            period_s=query.evaluation_interval_s,
            evaluation_periods=1,
            datapoints_to_alarm=1,
            threshold=1,
            comparison=Comparison.GREATER_OR_EQUAL,
            missing_data=MissingData.NOT_BREACHING,
            missing_data_reason=(
                _NODE_GONE
                if kind != GPU_POD_CRASH_LOOP
                else "a pod the query does not return runs, holds no GPU or is gone; absent for "
                "the recovery period, its contributor is OK"
            ),
        )
        for kind, title, severity, query, description in rows
    ]
