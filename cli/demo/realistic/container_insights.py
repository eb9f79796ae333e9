"""Container Insights' GPU series as the CloudWatch agent emits them in Classic (enhanced
observability) mode: the ``PodName`` a pod is given by its owner, its ``FullPodName``, and the
dimension sets of the ``pod_gpu_*`` and ``node_gpu_*`` metrics.

Sources, by the agent's pipeline:

- Enhanced mode sets ``prefer_full_pod_name`` and ``add_full_pod_name_metric_label``
  (aws/amazon-cloudwatch-agent translator/translate/otel/receiver/awscontainerinsight/
  translator.go, ``Translate``: ``if EnhancedContainerInsightsEnabled(conf) {
  cfg.AddFullPodNameMetricLabel = true ... cfg.PrefFullPodName = true``). The receiver's
  configuration: "The "PodName" attribute is set based on the name of the relevant controllers
  like Daemonset, Job, ReplicaSet, ReplicationController"; "The "FullPodName" attribute is the
  pod name including suffix".
- dcgm-exporter's ``pod`` label becomes ``FullPodName`` and its ``device`` label ``GpuDevice``
  (amazon-contributing/opentelemetry-collector-contrib receiver/awscontainerinsightreceiver/
  internal/gpu/dcgmscraper_config.go, ``getMetricRelabelConfig``); the scraped metrics are then
  decorated by the pod store (internal/prometheusscraper/decoratorconsumer/decorator.go), whose
  ``addPodOwnersAndPodName`` sets ``PodName`` (internal/stores/podstore.go, commit bc220c0).
- The GPU metrics and their dimension sets: aws/amazon-cloudwatch-agent
  translator/translate/otel/exporter/awsemf/kubernetes.go, ``getGPUMetricDeclarations`` (emitted
  only when enhanced observability and accelerated compute metrics are both on). The EMF
  exporter emits a declared set only where the datapoint carries every dimension of it
  (open-telemetry/opentelemetry-collector-contrib exporter/awsemfexporter/metric_declaration.go,
  ``ExtractDimensions``).
"""

import re
from typing import Final

from cli.demo.realistic.pods import (
    ALPHANUMS,
    CRONJOB,
    DAEMONSET,
    DEPLOYMENT,
    JOB,
    REPLICASET,
    REPLICATION_CONTROLLER,
    STATEFULSET,
    Pod,
)

#: getGPUMetricDeclarations' pod metrics: pod_gpu_utilization, _memory_utilization,
#: _memory_total, _memory_used, _power_draw, _temperature, _tensor_core_utilization. The
#: agent's current kubernetes.go (the one with ``getGaugeMetricsToCompact``; the index pins no
#: commit for it, and its pinned 0316fb693cef predates the tensor-core metric) declares the
#: seventh; AWS's metric table lists it: "pod_gpu_tensor_core_utilization ... The percentage
#: utilization of the tensor cores on the GPU(s) allocated to the pod"
#: (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Container-Insights-metrics-enhanced-EKS.html).
POD_GPU_METRICS: Final = tuple(
    f"pod_gpu_{m}"
    for m in ("utilization", "memory_utilization", "memory_total", "memory_used", "power_draw",
              "temperature", "tensor_core_utilization")
)  # fmt: skip
NODE_GPU_METRICS: Final = tuple(m.replace("pod_", "node_", 1) for m in POD_GPU_METRICS)
#: getGPUMetricDeclarations' dimension sets for pod_gpu_*: no NodeName in any of them; only the
#: last carries the GPU.
POD_GPU_DIMENSION_SETS: Final = (
    ("ClusterName",),
    ("ClusterName", "Namespace"),
    ("ClusterName", "Namespace", "Service"),
    ("ClusterName", "Namespace", "PodName"),
    ("ClusterName", "Namespace", "PodName", "FullPodName"),
    ("ClusterName", "Namespace", "PodName", "FullPodName", "GpuDevice"),
)
#: ... and for node_gpu_*.
NODE_GPU_DIMENSION_SETS: Final = (
    ("ClusterName",),
    ("ClusterName", "NodeName", "InstanceId"),
    ("ClusterName", "NodeName", "InstanceId", "InstanceType", "GpuDevice"),
)
#: The agent's default collection interval, seconds (awscontainerinsight/utils.go
#: ``DefaultMetricsCollectionInterval``: a minute).
DEFAULT_GPU_INTERVAL: Final = 60


def high_frequency(interval: int) -> bool:
    """The agent's high-frequency GPU mode: ``accelerated_compute_gpu_metrics_collection_interval``
    set under 60 s (awscontainerinsight/utils.go ``IsHighFrequencyGPUMetricsEnabled``:
    ``gpuMetricsCollectionInterval < DefaultMetricsCollectionInterval``; "minimum value of 1
    second"). Then kubernetes.go ``getGaugeMetricsToCompact`` names every container, pod and node
    GPU metric, whose samples the EMF exporter compacts into one datapoint a minute of values
    and counts: "metrics are still ingested to CloudWatch at 1-minute intervals. However, you
    can query statistical aggregations ... of the sub-minute datapoints within each 1-minute
    period" (Container-Insights-metrics-enhanced-EKS.html, "Detailed GPU monitoring")."""
    if interval < 1:
        raise ValueError(f"accelerated_compute_gpu_metrics_collection_interval {interval} < 1")
    return interval < DEFAULT_GPU_INTERVAL


def samples_per_minute(interval: int = DEFAULT_GPU_INTERVAL) -> int:
    """The samples one GPU series holds for each minute a pod held the GPU: its SampleCount a
    minute (60 at a 1 s interval, 1 at the default)."""
    return DEFAULT_GPU_INTERVAL // interval if high_frequency(interval) else 1


#: podstore.go ``kubeProxy``; utils.go ``cronJobAllowedString``; podstore.go ``splitRegexStr``.
_KUBE_PROXY: Final = "kube-proxy"
_SPLIT: Final = re.compile(r"\.|-")


def parse_deployment_from_replicaset(name: str) -> str:
    """utils.go ``parseDeploymentFromReplicaSet``: the name before the last dash, where what
    follows is at least 3 characters of Kubernetes' random alphabet; "" otherwise."""
    head, dash, suffix = name.rpartition("-")
    if not dash or len(suffix) < 3 or any(c not in ALPHANUMS for c in suffix):
        return ""
    return head


def parse_cronjob_from_job(name: str) -> str:
    """utils.go ``parseCronJobFromJob``: the name before the last dash, where what follows is
    exactly 10 digits; "" otherwise. Ten digits is the legacy CronJob controller's suffix
    (``getTimeHash``: ``scheduledTime.Unix()``, seconds); today's controller appends minutes,
    8 digits (``cronjob_job_name``), which this does not take: such a pod's PodName is its
    Job's name, ``<cronjob>-<minutes>``."""
    head, dash, suffix = name.rpartition("-")
    if not dash or len(suffix) != 10 or not suffix.isdigit():
        return ""
    return head


def job_name_prefix(name: str) -> str:
    """podstore.go ``getJobNamePrefix``: the name up to its first '.' or '-'."""
    return _SPLIT.split(name, maxsplit=1)[0]


def owner(pod: Pod, *, prefer_full_pod_name: bool = True) -> tuple[str, str] | None:
    """The (kind, name) the agent records as the pod's owner (``pod_owners``): a ReplicaSet's
    Deployment (from the ReplicaSet informer, ``ReplicaSetToDeployment``, on by default:
    ``watch_replicaset``; else parsed from the name), a Job's CronJob where the name says so,
    a Job's name prefix without ``prefer_full_pod_name``."""
    if pod.owner_kind is None or pod.owner_name is None:
        return None
    kind, name = pod.owner_kind, pod.owner_name
    if kind == REPLICASET:
        parent = pod.workload if pod.workload_kind == DEPLOYMENT else ""
        parent = parent or parse_deployment_from_replicaset(name)
        if parent:
            return DEPLOYMENT, parent
    elif kind == JOB:
        if parent := parse_cronjob_from_job(name):
            return CRONJOB, parent
        if not prefer_full_pod_name:
            return kind, job_name_prefix(name)
    return kind, name


def pod_name(pod: Pod, *, prefer_full_pod_name: bool = True) -> str:
    """``PodName`` as ``addPodOwnersAndPodName`` sets it: a StatefulSet's pod keeps its own name;
    a DaemonSet's, Job's, ReplicaSet's or ReplicationController's pod takes the owner's name
    (after ``owner``: the Deployment, the CronJob, the Job); any other pod (custom resources:
    PyTorchJob, MPIJob workers, RayCluster; bare pods) keeps its own name."""
    recorded = owner(pod, prefer_full_pod_name=prefer_full_pod_name)
    if pod.owner_kind in (DAEMONSET, JOB, REPLICASET, REPLICATION_CONTROLLER) and recorded:
        return recorded[1]
    if pod.owner_kind == STATEFULSET:
        return pod.name
    if pod.name.startswith(_KUBE_PROXY) and not prefer_full_pod_name:
        return _KUBE_PROXY
    return pod.name


def pod_gpu_dimension_sets(
    cluster: str, pod: Pod, device: str, service: str | None = None
) -> list[dict[str, str]]:
    """Each dimension set one ``pod_gpu_*`` datapoint of ``pod`` on ``device`` (``nvidia0``)
    is published with (a set with ``Service`` only where a Service selects the pod)."""
    labels = {
        "ClusterName": cluster,
        "Namespace": pod.namespace,
        "PodName": pod_name(pod),
        "FullPodName": pod.name,
        "GpuDevice": device,
    }
    if service is not None:
        labels["Service"] = service
    return [
        {name: labels[name] for name in sorted(dims)}
        for dims in POD_GPU_DIMENSION_SETS
        if set(dims) <= set(labels)
    ]


def pod_gpu_dimensions(cluster: str, pod: Pod, device: str) -> dict[str, str]:
    """The one ``pod_gpu_*`` set that names the GPU: (ClusterName, FullPodName, GpuDevice,
    Namespace, PodName), in name order."""
    return next(d for d in pod_gpu_dimension_sets(cluster, pod, device) if "GpuDevice" in d)


def node_gpu_dimensions(
    cluster: str, node: str, instance_id: str, instance_type: str, device: str
) -> dict[str, str]:
    """The one ``node_gpu_*`` set that names the GPU, in name order."""
    return {
        "ClusterName": cluster,
        "GpuDevice": device,
        "InstanceId": instance_id,
        "InstanceType": instance_type,
        "NodeName": node,
    }


def node_dimensions(cluster: str, node: str, instance_id: str) -> dict[str, str]:
    """The per-node set of ``node_gpu_limit`` (contract.metrics ``CI_NODE_GPU_LIMIT_SCHEMA``:
    ClusterName, InstanceId, NodeName), in name order."""
    return {"ClusterName": cluster, "InstanceId": instance_id, "NodeName": node}


def gpu_device(index: int) -> str:
    """dcgm-exporter's ``device`` label for GPU ``index`` (``nvidia0``), which the receiver
    relabels to ``GpuDevice``; the node's /dev/nvidiaN."""
    return f"nvidia{index}"
