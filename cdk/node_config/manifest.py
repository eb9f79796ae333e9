"""The exporter's Kubernetes objects: a namespace, a service account, a DaemonSet.

Rules the DaemonSet keeps, and why:
- it requests no ``nvidia.com/gpu``: that would take GPUs away from jobs. It sees every GPU
  through the NVIDIA container runtime (``NVIDIA_VISIBLE_DEVICES=all``, utility capability
  only, which is what NVML needs), as the DCGM exporter does;
- it runs on every NVIDIA GPU node whatever provisioned it, and on no other node: a node is
  one when NVIDIA's GPU Operator, GPU feature discovery or Node Feature Discovery, or
  Karpenter, labels it so, or when its instance type has NVIDIA GPUs (an EKS managed node group
  on the accelerated AMI with only the device plugin carries no GPU label at all); it
  tolerates the taints the add-on's agents do (cdk/node_config/tolerations.py: every taint
  with ``tolerate_all_taints``, else the GPU taint keys);
- it has resource limits, a read-only root filesystem, runs as nobody with every capability
  dropped, and shares the host's PID namespace only when pod attribution is asked for (NVML
  reports no processes of other PID namespaces, and their cgroups name the pod); of the host's
  files it then mounts, read-only, only the kubelet's log directories whose names name the pods
  (and, over OTLP, the containers), never reading a log.
"""

import re
from collections.abc import Sequence
from typing import Any, Final

from cdk.node_config.gpu_instance_types import node_instance_types
from cdk.node_config.tolerations import taint_tolerations
from gpu_insights_agent.contract.metrics import (
    DEFAULT_EMF_ENDPOINT,
    DEFAULT_OTLP_ENDPOINT,
    EXPORTER_MAX_INTERVAL_S,
    ExporterSink,
)
from gpu_insights_agent.contract.resource_names import cluster_name_problem

#: Kubernetes "Labels and Selectors", syntax and character set (taint keys follow it): an
#: optional DNS-subdomain prefix of at most 253 characters and "/", then a name of 1 to 63
#: characters, alphanumerics with "-", "_", "." inside.
#: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def is_label_key(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and not (len(prefix) <= 253 and _DNS_SUBDOMAIN.fullmatch(prefix)):
        return False
    return _LABEL_NAME.fullmatch(name) is not None


NAME: Final = "gpu-insights-exporter"
#: With pod attribution, the kubelet's pod log directories (``/var/log/pods/<namespace>_<name>_
#: <uid>``, kubernetes/kubernetes pkg/kubelet/kuberuntime/helpers.go) mounted read-only: the
#: exporter names the pods on a GPU by namespace and name from them. Only the directory names
#: are read, never a log.
POD_LOG_MOUNT: Final = "/host/var/log/pods"
#: With pod attribution and the OTLP sink (the only sink with a container label,
#: ``k8s.container.name``), the kubelet's container log symlinks
#: (``/var/log/containers/<pod>_<namespace>_<container>-<id>.log``, kubernetes/kubernetes
#: pkg/kubelet/kuberuntime/legacy.go, ``logSymlink``) mounted read-only: the exporter names the
#: container of a GPU's processes, in a pod of several, by the container ID in their cgroup. Only
#: the link names are read, never a link followed nor a log read. The kubelet makes the directory
#: when it starts (pkg/kubelet/kubelet.go, ``initializeModules``: ``os.MkdirAll(
#: ContainerLogsDir, ...)``), so it is there on every node.
CONTAINER_LOG_MOUNT: Final = "/host/var/log/containers"
#: With the OTLP sink, the exporter's pod asks the add-on agent's ``k8sattributes`` processor to
#: leave it out. That processor (in the agent's OTLP pipeline, with no pod association
#: configured: aws/amazon-cloudwatch-agent translator/translate/otel/processor/
#: k8sattributesprocessor/translator.go) finds the sender's pod by the connection's IP and fills
#: every ``k8s.*`` attribute the sender left unset from it (open-telemetry/
#: opentelemetry-collector-contrib processor/k8sattributesprocessor/pod_association.go,
#: ``extractPodIDNoAssociations``; processor.go, ``setResourceAttribute``): without this, a GPU no
#: pod holds would be labelled with the exporter's own pod, namespace, container and DaemonSet.
#: The processor skips a pod with this annotation (internal/kube/client.go,
#: ``ignoreAnnotation``, ``shouldIgnorePod``).
K8S_ATTRIBUTES_IGNORE: Final = ("opentelemetry.io/k8s-processor/ignore", "true")
POD_LOG_VOLUME: Final = {
    "name": "pod-logs",
    "hostPath": {"path": "/var/log/pods", "type": "Directory"},
}
CONTAINER_LOG_VOLUME: Final = {
    "name": "container-logs",
    "hostPath": {"path": "/var/log/containers", "type": "Directory"},
}
DEFAULT_NAMESPACE: Final = "gpu-insights"


def _label_in(key: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(values)}


#: What marks a node as an NVIDIA GPU node; any one of them is enough (each is a node selector
#: term of its own, and terms are ORed). EKS Auto Mode's own GPU label
#: (eks.amazonaws.com/instance-gpu-manufacturer) is left out on purpose.
GPU_NODE_EXPRESSIONS: Final[tuple[dict[str, Any], ...]] = (
    # The GPU Operator: "nvidia.com/gpu.present" on every node where NFD found an NVIDIA PCI
    # device, "false" once the device is gone (NVIDIA/gpu-operator controllers/state_manager.go,
    # commonGPULabelKey).
    _label_in("nvidia.com/gpu.present", "true"),
    # GPU feature discovery, with or without the Operator: the GPUs the driver counts
    # (NVIDIA/k8s-device-plugin, "Generated Labels": nvidia.com/gpu.count).
    {"key": "nvidia.com/gpu.count", "operator": "Gt", "values": ["0"]},
    # Node Feature Discovery, NVIDIA's PCI vendor id 10de: by vendor as the GPU Operator
    # configures it, or by class and vendor (3D or VGA controller) as NFD does by default; the
    # Operator looks for the same three (state_manager.go gpuNodeLabels).
    _label_in("feature.node.kubernetes.io/pci-10de.present", "true"),
    _label_in("feature.node.kubernetes.io/pci-0302_10de.present", "true"),
    _label_in("feature.node.kubernetes.io/pci-0300_10de.present", "true"),
    # Karpenter, from EC2's GpuInfo (aws/karpenter-provider-aws, instancetype/types.go).
    _label_in("karpenter.k8s.aws/instance-gpu-manufacturer", "nvidia"),
    # Any node, however provisioned, of a type with NVIDIA GPUs: the well-known label the
    # cloud provider sets on every node, as the add-on schedules its DCGM exporter
    # (cdk/node_config/gpu_instance_types.py).
    _label_in("node.kubernetes.io/instance-type", *node_instance_types()),
)
#: Where the exporter can run, whatever the labels: the image is built for linux/amd64 only
#: (cdk/constructs/gpu_exporter.py), and EKS Auto Mode nodes do not hand NVIDIA_VISIBLE_DEVICES
#: to unprivileged containers, so on either it would crash-loop without NVML (preflight and
#: docs/deploy.md say what covers those nodes).
REQUIRED_NODE_EXPRESSIONS: Final[tuple[dict[str, Any], ...]] = (
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["auto"]},
)


class ManifestError(ValueError):
    """A manifest setting that Kubernetes would reject."""


#: An image reference by the grammar of distribution/reference (regexp.go), which the kubelet's
#: container runtimes parse: [domain[:port]/]path[:tag][@digest], path components in lower case.
#: https://github.com/distribution/reference/blob/main/reference.go
_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_IMAGE = re.compile(
    rf"(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*(?::[0-9]+)?/)?"
    rf"{_PATH_PART}(?:/{_PATH_PART})*"
    r"(?::[\w][\w.-]{0,127})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?"
)


def image_problem(image: str) -> str | None:
    """Why ``image`` is not an image reference a node could pull, or None. (The CDK app passes
    its image asset's URI, a token until deploy, so only the command line checks this.)"""
    if _IMAGE.fullmatch(image) and len(image) <= 255 + 128 + 80:
        return None
    return (
        f"--image {image!r} is not an image reference "
        "([registry/]repository[:tag][@sha256:digest], repository in lower case)"
    )


def gpu_node_terms(labels: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The DaemonSet's ``nodeSelectorTerms``: one term per GPU mark (``GPU_NODE_EXPRESSIONS``,
    then each ``key=value`` of ``labels``, the ``gpu_node_labels`` setting), each ANDed with
    ``REQUIRED_NODE_EXPRESSIONS``."""
    marks = list(GPU_NODE_EXPRESSIONS)
    for label in labels:
        key, sep, value = label.partition("=")
        if not sep or not key or not value:
            raise ManifestError(f"GPU node label {label!r} is not key=value")
        if not is_label_key(key):
            raise ManifestError(
                f"GPU node label key {key!r} is not a Kubernetes label key ([prefix/]name: a DNS "
                "subdomain of at most 253 characters, then 1 to 63 alphanumerics, '-', '_', "
                "'.', starting and ending alphanumeric)"
            )
        if not _LABEL_NAME.fullmatch(value):
            raise ManifestError(
                f"GPU node label value {value!r} is not a Kubernetes label value (1 to 63 "
                "alphanumerics, '-', '_', '.', starting and ending alphanumeric)"
            )
        marks.append(_label_in(key, value))
    # Expressions within a term are ANDed, terms ORed: each GPU mark with the requirements.
    return [{"matchExpressions": [mark, *REQUIRED_NODE_EXPRESSIONS]} for mark in marks]


def exporter_manifests(
    *,
    image: str,
    cluster_name: str,
    namespace: str = DEFAULT_NAMESPACE,
    interval_s: int = 10,
    emf_endpoint: str = DEFAULT_EMF_ENDPOINT,
    sink: ExporterSink = ExporterSink.EMF,
    otlp_endpoint: str = DEFAULT_OTLP_ENDPOINT,
    gpu_node_labels: Sequence[str] = (),
    gpu_taint_keys: Sequence[str] = ("nvidia.com/gpu",),
    tolerate_all_taints: bool = True,
    pod_attribution: bool = False,
    alarm_shards: int = 1,
) -> list[dict[str, Any]]:
    """The objects to apply, in order. ``sink`` (the exporter_sink setting) says where the
    exporter sends: the agent's EMF listener, or its OTLP endpoint in OTel mode."""
    if not 1 <= interval_s <= EXPORTER_MAX_INTERVAL_S:
        raise ManifestError(
            f"exporter interval {interval_s} s must be 1 to {EXPORTER_MAX_INTERVAL_S} s"
        )
    if not image.strip():
        raise ManifestError("the image must not be empty")
    problem = cluster_name_problem(cluster_name)
    if problem:
        raise ManifestError(problem)
    for key in gpu_taint_keys:
        if not is_label_key(key):
            raise ManifestError(
                f"taint key {key!r} is not a Kubernetes label key ([prefix/]name: a DNS "
                "subdomain of at most 253 characters, then 1 to 63 alphanumerics, '-', '_', "
                "'.', starting and ending alphanumeric)"
            )
    labels = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "eks-gpu-insights"}
    args = [
        "--cluster-name", cluster_name,
        "--node-name", "$(NODE_NAME)",
        "--interval", str(interval_s),
        "--alarm-shards", str(alarm_shards),
    ]  # fmt: skip
    if sink is ExporterSink.OTLP:
        args += ["--sink", "otlp", "--otlp-endpoint", otlp_endpoint]
    else:
        args += ["--emf-endpoint", emf_endpoint]
    if pod_attribution:
        args += ["--proc-root", "/proc", "--pod-log-root", POD_LOG_MOUNT]
    # Container names only where a series can carry them: EMF's documents have no container.
    name_containers = pod_attribution and sink is ExporterSink.OTLP
    if name_containers:
        args += ["--container-log-root", CONTAINER_LOG_MOUNT]
    container = {
        "name": "exporter",
        "image": image,
        "args": args,
        "env": [
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
            {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility"},
            {"name": "PYTHONUNBUFFERED", "value": "1"},
        ],
        "resources": {
            "requests": {"cpu": "10m", "memory": "48Mi"},
            "limits": {"cpu": "200m", "memory": "128Mi"},
        },
        "securityContext": {
            "readOnlyRootFilesystem": True,
            "allowPrivilegeEscalation": False,
            "runAsNonRoot": True,
            "runAsUser": 65534,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    # Each host directory read, with where it is mounted: read-only, names only.
    host_dirs = [(POD_LOG_VOLUME, POD_LOG_MOUNT)] if pod_attribution else []
    if name_containers:
        host_dirs.append((CONTAINER_LOG_VOLUME, CONTAINER_LOG_MOUNT))
    volumes = [volume for volume, _ in host_dirs]
    if host_dirs:
        container["volumeMounts"] = [
            {"name": volume["name"], "mountPath": path, "readOnly": True}
            for volume, path in host_dirs
        ]
    daemon_set = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": namespace, "labels": labels},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%"}},
            "template": {
                "metadata": {
                    "labels": labels,
                    **(
                        {"annotations": dict([K8S_ATTRIBUTES_IGNORE])}
                        if sink is ExporterSink.OTLP
                        else {}
                    ),
                },
                "spec": {
                    "serviceAccountName": NAME,
                    "automountServiceAccountToken": False,
                    "terminationGracePeriodSeconds": 15,
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": gpu_node_terms(gpu_node_labels)
                            }
                        }
                    },
                    "tolerations": [
                        toleration.to_dict()
                        for toleration in taint_tolerations(
                            tolerate_all_taints=tolerate_all_taints, gpu_taint_keys=gpu_taint_keys
                        )
                    ],
                    "containers": [container],
                    **({"hostPID": True, "volumes": volumes} if pod_attribution else {}),
                },
            },
        },
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace, "labels": labels},
        },
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": NAME, "namespace": namespace, "labels": labels},
            "automountServiceAccountToken": False,
        },
        daemon_set,
    ]
