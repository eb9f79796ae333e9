"""OTel Container Insights: the DCGM series the add-on sends over OTLP (under DCGM's own metric
names, queried with PromQL), and the labels a pod's GPU series carries. Data only, for the mode's
own analyzers and tests.

Source: aws-observability/helm-charts charts/amazon-cloudwatch-observability/templates/linux/
_otel-container-insights-config.tpl (the configuration the add-on's chart renders with
``otelContainerInsights.enabled``), and "Container Insights with OpenTelemetry metrics for Amazon
EKS" (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/container-insights-otel-metrics.html):
"These metrics use metric names from their original sources, including cAdvisor, Prometheus Node
Exporter, NVIDIA DCGM, Kube State Metrics, and AWS Neuron Monitor", "at 30 second granularity",
"Each metric is automatically enriched with up to 150 labels".
"""

from typing import Final

from cli.demo.realistic.pods import (
    CRONJOB,
    DAEMONSET,
    DEPLOYMENT,
    JOB,
    REPLICASET,
    STATEFULSET,
    Pod,
)

#: The receiver ``prometheus/cw_k8s_ci_v0_dcgm`` scrapes ``dcgm-exporter-service:9400`` every
#: ``otelContainerInsights.metricResolution`` (chart default "30s").
SCRAPE_INTERVAL_S: Final = 30
#: The DCGM metrics the config names (``transform/cw_k8s_ci_v0_set_unit``: "DCGM explicit
#: mappings"), with the unit it sets. The exporter sends what its counters CSV lists
#: (contract.metrics ``ADDON_DCGM_FIELDS``, the ten series the add-on sends); these are the ones
#: the add-on gives a unit. ``DCGM_FI_DEV_SM_CLOCK`` is named here but not collected: no such
#: series arrives.
DCGM_METRIC_UNITS: Final = {
    "DCGM_FI_DEV_GPU_UTIL": "%",
    "DCGM_FI_DEV_MEM_COPY_UTIL": "%",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "%",
    "DCGM_FI_DEV_FB_USED": "MiBy",
    "DCGM_FI_DEV_FB_FREE": "MiBy",
    "DCGM_FI_DEV_FB_TOTAL": "MiBy",
    "DCGM_FI_DEV_GPU_TEMP": "Cel",
    "DCGM_FI_DEV_POWER_USAGE": "W",
    "DCGM_FI_DEV_SM_CLOCK": "MHz",
}
#: The driver version every series carries: the metricsConfig's one ``label`` field
#: (contract.metrics ``ADDON_DCGM_LABEL_FIELDS``), written by dcgm-exporter as a label of the
#: field's own name (NVIDIA/dcgm-exporter internal/pkg/collector/base_collector.go:
#: ``labels[counter.FieldName] = v``); the value as its tests give a driver's
#: (internal/pkg/transformation/kubernetes_mig_test.go, "DriverVersion": "575.51.03").
DRIVER_VERSION_LABEL: Final = "DCGM_FI_DRIVER_VERSION"
DRIVER_VERSION: Final = "575.51.03"
#: ``groupbyattrs/cw_k8s_ci_v0_dcgm`` groups by dcgm-exporter's pod, namespace, container;
#: ``transform/cw_k8s_ci_v0_dcgm_promote`` copies them to these resource attributes, keeps the
#: raw labels on the datapoint, and deletes ``Hostname`` and ``pci_bus_id``.
PROMOTED: Final = {
    "pod": "k8s.pod.name",
    "namespace": "k8s.namespace.name",
    "container": "k8s.container.name",
}
DELETED_DATAPOINT_LABELS: Final = ("Hostname", "pci_bus_id")
#: ``k8sattributes/cw_k8s_ci_v0_pod`` ``extract.metadata`` (and every pod label as
#: ``k8s.pod.label.<key>``); ``k8sattributes/cw_k8s_ci_v0_node`` adds every node label as
#: ``k8s.node.label.<key>``.
POD_METADATA: Final = (
    "k8s.pod.uid",
    "k8s.node.name",
    "k8s.deployment.name",
    "k8s.statefulset.name",
    "k8s.daemonset.name",
    "k8s.replicaset.name",
    "k8s.job.name",
    "k8s.cronjob.name",
)
#: ``transform/cw_k8s_ci_v0_set_workload``: the first of these the pod has names its workload
#: (``k8s.workload.name``) and its type (``k8s.workload.type``).
WORKLOAD_PRECEDENCE: Final = (
    ("k8s.deployment.name", "Deployment"),
    ("k8s.statefulset.name", "StatefulSet"),
    ("k8s.daemonset.name", "DaemonSet"),
    ("k8s.job.name", "Job"),
    ("k8s.cronjob.name", "CronJob"),
    ("k8s.replicaset.name", "ReplicaSet"),
)
#: ``awsattributelimit/cw_k8s_ci_v0``: ``max_total_attributes: 150``, and node labels it always
#: drops (some of them).
MAX_ATTRIBUTES: Final = 150
DROPPED_NODE_LABELS: Final = (
    "k8s.node.label.topology.kubernetes.io/zone",
    "k8s.node.label.node.kubernetes.io/instance-type",
    "k8s.node.label.kubernetes.io/hostname",
    "k8s.node.label.eks.amazonaws.com/nodegroup-image",
)
#: Prefixes it always drops: every Node Feature Discovery label, every beta label.
DROPPED_NODE_LABEL_PREFIXES: Final = (
    "k8s.node.label.feature.node.kubernetes.io/",
    "k8s.node.label.beta.kubernetes.io/",
    "k8s.node.label.failure-domain.beta.kubernetes.io/",
    "k8s.node.label.alpha.eksctl.io/",
)


def dcgm_pod_labels(cluster: str, node: str, pod: Pod, container: str, gpu: int) -> dict[str, str]:
    """The labels of one DCGM datapoint of ``pod``'s GPU ``gpu`` (before pod and node labels):
    dcgm-exporter's own (``gpu``, ``device``, the driver version; ``UUID`` and ``modelName``
    left out here), the
    raw pod labels, and the attributes the pipeline adds: the pod's own name, never its
    controller's, and the node it runs on (``transform/cw_k8s_ci_v0_set_node_name``, from
    ``K8S_NODE_NAME``; ``k8s.cluster.name`` from ``transform/cw_k8s_ci_v0_set_cluster_name``)."""
    return {
        "gpu": str(gpu),
        "device": f"nvidia{gpu}",
        DRIVER_VERSION_LABEL: DRIVER_VERSION,
        "pod": pod.name,
        "namespace": pod.namespace,
        "container": container,
        "k8s.pod.name": pod.name,
        "k8s.namespace.name": pod.namespace,
        "k8s.container.name": container,
        "k8s.node.name": node,
        "node_name": node,
        "k8s.cluster.name": cluster,
    }


#: How CloudWatch's PromQL names an OTLP attribute: "attributes use a single-@ scope prefix, for
#: example, @resource.service.name. Datapoint attributes also support bare (un-prefixed)
#: access" ("PromQL querying",
#: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-PromQL-Querying.html).
RESOURCE_PREFIX: Final = "@resource."


def _owner_attributes(pod: Pod) -> dict[str, str]:
    """``k8sattributes/cw_k8s_ci_v0_pod``'s owner attributes of ``pod`` (the processor walks
    a ReplicaSet to its Deployment and a Job to its CronJob), and the workload
    ``transform/cw_k8s_ci_v0_set_workload`` names by ``WORKLOAD_PRECEDENCE``."""
    found: dict[str, str] = {}
    if pod.owner_kind == JOB and pod.owner_name:
        found["k8s.job.name"] = pod.owner_name
        if pod.workload_kind == CRONJOB:
            found["k8s.cronjob.name"] = pod.workload
    elif pod.owner_kind == REPLICASET and pod.owner_name:
        found["k8s.replicaset.name"] = pod.owner_name
        if pod.workload_kind == DEPLOYMENT:
            found["k8s.deployment.name"] = pod.workload
    elif pod.owner_kind == STATEFULSET and pod.owner_name:
        found["k8s.statefulset.name"] = pod.owner_name
    elif pod.owner_kind == DAEMONSET and pod.owner_name:
        found["k8s.daemonset.name"] = pod.owner_name
    for attribute, kind in WORKLOAD_PRECEDENCE:
        if attribute in found:
            found["k8s.workload.name"] = found[attribute]
            found["k8s.workload.type"] = kind
            break
    return found


def dcgm_promql_labels(
    cluster: str,
    node: str,
    gpu: int,
    pod: Pod | None = None,
    container: str = "main",
    model: str | None = None,
) -> dict[str, str]:
    """The labels CloudWatch's PromQL gives one DCGM datapoint of GPU ``gpu`` on ``node``,
    held by ``pod`` (None: a GPU no pod holds, whose datapoint carries no pod labels):
    dcgm-exporter's labels on the datapoint, bare (its ``modelName``, NVML's name of the
    device, where ``model`` is given: dcgm-exporter writes it on every series, as in its
    /metrics), and the driver version label (``DRIVER_VERSION_LABEL``);
    the resource attributes the pipeline sets (pod, namespace, container promoted; node and
    cluster; the pod's owners) under ``@resource.``."""
    datapoint = {"gpu": str(gpu), "device": f"nvidia{gpu}", DRIVER_VERSION_LABEL: DRIVER_VERSION}
    if model is not None:
        datapoint["modelName"] = model
    resource = {"k8s.node.name": node, "k8s.cluster.name": cluster}
    if pod is not None:
        datapoint |= {"pod": pod.name, "namespace": pod.namespace, "container": container}
        resource |= {PROMOTED[k]: v for k, v in datapoint.items() if k in PROMOTED}
        resource |= _owner_attributes(pod)
    return datapoint | {RESOURCE_PREFIX + k: v for k, v in resource.items()}
