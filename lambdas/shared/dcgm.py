"""DCGM's series as OTel Container Insights sends them: dcgm-exporter's metric names and the
label names CloudWatch's PromQL gives their pod, node and GPU. One declaration for every reader:
the GPU-hour attribution, the PromQL alarms (cdk/alarms/promql.py) and the notifier, which names
a PromQL alarm contributor's GPU by these labels.

CloudWatch exposes an OTLP resource attribute as ``@resource.<name>`` and a datapoint attribute
bare ("PromQL querying", CloudWatch-PromQL-Querying.html: "attributes use a single-@ scope
prefix, for example, @resource.service.name. Datapoint attributes also support bare
(un-prefixed) access"); the add-on promotes dcgm-exporter's pod, namespace and container to
resource attributes and sets the node and cluster (cli/demo/realistic/otel.py).
"""

import re
from dataclasses import dataclass
from typing import Final

from gpu_insights_agent.contract.metrics import (
    DCGM_GPU_METRICS,
    OTLP_DEVICE,
    OTLP_GPU,
    OTLP_MODEL,
    OTLP_XID_CODE,
    GpuMetric,
)

#: dcgm-exporter's metric names, as the add-on sends them (the metric contract's).
DCGM_UTIL: Final = DCGM_GPU_METRICS[GpuMetric.UTILIZATION]
DCGM_POWER: Final = DCGM_GPU_METRICS[GpuMetric.POWER_DRAW]
#: The framebuffer used and its size, in MiB (``DCGM_MIB_METRICS``): the GPU memory
#: right-sizing's reads. The exporter has no capacity metric, so the total, one of the add-on's
#: fields (``ADDON_DCGM_FIELDS``), is named here.
DCGM_FB_USED: Final = DCGM_GPU_METRICS[GpuMetric.MEMORY_USED]
DCGM_FB_TOTAL: Final = "DCGM_FI_DEV_FB_TOTAL"
#: Bytes in the MiB DCGM reports memory in.
MIB: Final = 2**20


@dataclass(frozen=True)
class DcgmLabels:
    """The label names of a DCGM series where it is stored (CloudWatch's by default)."""

    cluster: str = "@resource.k8s.cluster.name"
    node: str = "@resource.k8s.node.name"
    namespace: str = "@resource.k8s.namespace.name"
    pod: str = "@resource.k8s.pod.name"
    #: dcgm-exporter's own labels: the GPU's index, its device (``nvidia0``, Classic's
    #: GpuDevice) and NVML's name of its model ("NVIDIA H100 80GB HBM3").
    gpu: str = OTLP_GPU
    device: str = OTLP_DEVICE
    model: str = OTLP_MODEL
    #: The exporter's XID counters' code label (``contract.metrics.OTLP_XID_CODE``).
    xid_code: str = OTLP_XID_CODE
    #: A node's Kubernetes labels on a series, ``k8s.node.label.<key>``: what the add-on's
    #: ``k8sattributes/cw_k8s_ci_v0_node`` processor sets on Kube State Metrics' series
    #: (aws-observability/helm-charts, charts/amazon-cloudwatch-observability/templates/linux/
    #: _otel-container-insights-cluster-scraper-config.tpl: ``tag_name: "k8s.node.label.$$$1"``).
    node_label_prefix: str = "@resource.k8s.node.label."
    #: A pod's Kubernetes labels on its series, ``k8s.pod.label.<key>``: the add-on's
    #: ``k8sattributes/cw_k8s_ci_v0_pod`` extracts every one (``tag_name:
    #: "k8s.pod.label.$$$1"``, ``key_regex: "(.*)"``; _otel-container-insights-config.tpl).
    pod_label_prefix: str = "@resource.k8s.pod.label."
    job: str = "@resource.k8s.job.name"
    deployment: str = "@resource.k8s.deployment.name"
    daemonset: str = "@resource.k8s.daemonset.name"

    def pod_label(self, key: str) -> str:
        """The label name of the pod label ``key``. Where the store names labels as Prometheus
        2 does (the prefix itself one, as a Prometheus that scraped the series holds them),
        the key's other characters become ``_`` as well."""
        name = self.pod_label_prefix + key
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.pod_label_prefix):
            return re.sub(r"[^A-Za-z0-9_]", "_", name)
        return name

    def owners(self) -> tuple[str, str, str]:
        return self.job, self.deployment, self.daemonset


CLOUDWATCH: Final = DcgmLabels()
