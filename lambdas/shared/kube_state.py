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

KSM_POD_UNSCHEDULABLE: Final = "kube_pod_status_unschedulable"
KSM_POD_REQUESTS: Final = "kube_pod_container_resource_requests"
#: The label ``count_values`` gives each pending pod's contributor: the GPUs it asked for, as a
#: label so that the page names them (a contributor event carries its series' labels:
#: lambdas/notifier/incidents.py). A pod's GPU request cannot change while it exists, so the
#: label, and the contributor, stay the same while it waits.
GPUS_REQUESTED: Final = "gpus_requested"

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
