"""Kube State Metrics' pod series as OTel Container Insights sends them, and the label the
pending-GPU-pod alarm adds: one declaration for the alarm's query (cdk/alarms/cluster.py) and
the notifier, which names the GPUs a pending pod asked for from its contributor's labels.

KSM's own names (kubernetes/kube-state-metrics internal/store/pod.go):
``kube_pod_status_unschedulable`` is 1 for a pod whose ``PodScheduled`` condition is False (the
scheduler found no node for it), with the pod's ``namespace`` and ``pod``;
``kube_pod_container_resource_requests`` is one series per container and resource, labels
``container``, ``resource`` (the resource name with ``.`` and ``/`` made ``_``:
``nvidia_com_gpu``) and ``unit`` (``integer`` for an extended resource such as a GPU).

The add-on's cluster scraper moves each KSM series' ``pod`` and ``namespace`` to the resource
attributes ``k8s.pod.name`` and ``k8s.namespace.name`` and sets ``k8s.cluster.name``
(aws-observability/helm-charts, charts/amazon-cloudwatch-observability/templates/linux/
_otel-container-insights-cluster-scraper-config.tpl: ``groupbyattrs/cw_k8s_ci_v0_ksm``,
``transform/cw_k8s_ci_v0_ksm_promote``, ``transform/cw_k8s_ci_v0_set_cluster_name``), which
CloudWatch's PromQL reads as ``@resource.k8s.pod.name`` and so on: the same names as DCGM's
series carry (lambdas/shared/dcgm.py), so a pod's series join on them.
"""

from typing import Final

from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.shared.promql import quote_label, quote_string

KSM_POD_UNSCHEDULABLE: Final = "kube_pod_status_unschedulable"
KSM_POD_REQUESTS: Final = "kube_pod_container_resource_requests"
#: The label ``count_values`` gives each pending pod's contributor: the GPUs it asked for, as a
#: label so that the page names them (a contributor event carries its series' labels:
#: lambdas/notifier/incidents.py). A pod's GPU request cannot change while it exists, so the
#: label, and the contributor, stay the same while it waits.
GPUS_REQUESTED: Final = "gpus_requested"

#: Kube State Metrics' per-node capacity series, as the add-on sends it: KSM's metric
#: ``kube_node_status_capacity`` with labels ``node``, ``resource`` (the resource name with
#: its dots and slash made underscores) and ``unit`` (kubernetes/kube-state-metrics
#: internal/store/node_test.go: ``kube_node_status_capacity{node="127.0.0.1",
#: resource="nvidia_com_gpu",unit="integer"} 4``; docs/metrics/cluster/node-metrics.md). The
#: add-on's cluster scraper (aws-observability/helm-charts, charts/amazon-cloudwatch-
#: observability/templates/linux/_otel-container-insights-cluster-scraper-config.tpl, pipeline
#: ``metrics/cw_k8s_ci_v0_kube_state_metrics``) groups KSM's series by ``node`` and sets
#: ``k8s.node.name`` from it (``transform/cw_k8s_ci_v0_ksm_promote``), ``k8s.cluster.name``
#: (``transform/cw_k8s_ci_v0_set_cluster_name``) and the node's labels
#: (``k8sattributes/cw_k8s_ci_v0_node``) on the resource: the same ``@resource.`` names as the
#: GPU series carry, so the two join on cluster and node.
KSM_CAPACITY: Final = "kube_node_status_capacity"
KSM_RESOURCE: Final = "resource"
KSM_GPU_RESOURCE: Final = "nvidia_com_gpu"
#: kube_pod_status_phase{phase}: 1 on the pod's phase (kubernetes/kube-state-metrics
#: docs/metrics/workload/pod-metrics.md).
KSM_POD_PHASE: Final = "kube_pod_status_phase"
#: Its ``phase`` while the pod waits to run (scheduling, image pulls).
KSM_PHASE_PENDING: Final = "Pending"


def ksm_selector(metric: str, cluster: str, labels: DcgmLabels, **matchers: str) -> str:
    """``{__name__="<metric>", <cluster>="...", <label>="<value>", ...}``."""
    parts = [
        f"__name__={quote_string(metric)}",
        f"{quote_label(labels.cluster)}={quote_string(cluster)}",
    ]
    parts += [f"{quote_label(k)}={quote_string(v)}" for k, v in matchers.items()]
    return "{" + ", ".join(parts) + "}"


def gpu_pods_waiting(
    cluster: str,
    window: str,
    labels: DcgmLabels = CLOUDWATCH,
    *,
    waiting: str = KSM_POD_UNSCHEDULABLE,
) -> str:
    """Each pod of ``cluster`` that asks for GPUs (``nvidia_com_gpu`` requests summed over its
    containers, its value) and whose latest ``waiting`` series in ``window`` is 1: unschedulable
    (the pending-GPU-pod alarm's, cdk/alarms/cluster.py), or, with ``kube_pod_status_phase``'s
    Pending series, pending for any reason (the cluster dashboard's)."""
    pod = (labels.cluster, labels.namespace, labels.pod)
    by = ", ".join(quote_label(n) for n in pod)
    requests = ksm_selector(KSM_POD_REQUESTS, cluster, labels, **{KSM_RESOURCE: KSM_GPU_RESOURCE})
    extra = {"phase": KSM_PHASE_PENDING} if waiting == KSM_POD_PHASE else {}
    state = ksm_selector(waiting, cluster, labels, **extra)
    asked = f"sum by ({by}) (last_over_time({requests}[{window}]))"
    held = f"max by ({by}) (last_over_time({state}[{window}])) == 1"
    return f"({asked} > 0) and on ({by}) ({held})"


# --- Nodes and crash loops (cdk/alarms/nodes.py) ------------------------------------------------
# KSM's node metrics (kubernetes/kube-state-metrics docs/metrics/cluster/node-metrics.md
# @c92fe0c5): ``kube_node_status_condition`` has the labels ``node``, ``condition`` and
# ``status`` (true|false|unknown, one series each, 1 on the one that holds) and no reason, so a
# condition's reason (the node monitoring agent's ``NvidiaXID79Error``) is only in the Node
# object (kubectl describe node); ``kube_node_spec_unschedulable`` (``node``) is 1 while the
# node is cordoned. The add-on promotes ``node`` to ``k8s.node.name`` on both (see above).
KSM_NODE_CONDITION: Final = "kube_node_status_condition"
KSM_NODE_UNSCHEDULABLE: Final = "kube_node_spec_unschedulable"
#: KSM's pod metrics (docs/metrics/workload/pod-metrics.md @c92fe0c5): one series per container
#: and ``reason`` (CrashLoopBackOff, ImagePullBackOff, ...), labels ``container``, ``pod``,
#: ``namespace``, ``uid``; no node (``kube_pod_container_resource_requests`` has it).
KSM_WAITING_REASON: Final = "kube_pod_container_status_waiting_reason"
CRASH_LOOP_REASON: Final = "CrashLoopBackOff"
#: The label ``count_values`` gives a node alarm's contributor: the node's GPUs (its
#: ``nvidia_com_gpu`` capacity), so that the page says how many GPUs the node takes with it.
NODE_GPUS: Final = "node_gpus"
#: The label a crash-looping GPU pod's contributor carries: the GPUs it holds (its containers'
#: ``nvidia_com_gpu`` requests), named apart from ``GPUS_REQUESTED``, which marks a pod on no
#: node.
POD_GPUS: Final = "pod_gpus"
