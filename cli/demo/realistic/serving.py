"""Inference servers' pods as their charts and operators deploy them: a vLLM Deployment from the
vllm-project/production-stack Helm chart, and a KServe InferenceService in raw deployment mode,
each replica holding one GPU. Their pod names are the ReplicaSet controller's
(``pods.deployment_pods``); their labels are what each deployer writes on the pod template.
"""

from dataclasses import dataclass
from typing import Final

from cli.demo.realistic import nodes as ec2
from cli.demo.realistic.pods import Pod, deployment_pods


@dataclass(frozen=True)
class ServingWorkload:
    """One model's Deployment: its pods (one GPU each), the pod template's labels, the name
    its server gives the model (vLLM's ``model_name`` label: the served model name,
    vllm-project/vllm vllm/v1/metrics/loggers.py ``labelnames = ["model_name", "engine"]``)
    and the container that runs the server."""

    deployment: str
    pods: tuple[Pod, ...]
    labels: dict[str, str]
    model: str
    container: str


#: The namespace both serve from.
NAMESPACE: Final = "inference"

#: vllm-project/production-stack helm/templates/deployment-vllm-multi.yaml (@010004ee): the
#: Deployment ``<release>-<modelSpec.name>-deployment-vllm``, its pods labelled ``model:
#: <modelSpec.name>`` and ``helm-release-name: <release>`` plus ``servingEngineSpec.labels``
#: (values.yaml @00c38d1a defaults ``environment: "test"``, ``release: "test"``); the
#: container is ``vllm``. The chart adds no ``app.kubernetes.io/*`` label.
VLLM_RELEASE: Final = "vllm"
VLLM_MODEL_SPEC: Final = "llama3-8b"
VLLM_REPLICAS: Final = 3
#: The served model name, as vLLM's docs/design/metrics.md example labels its series.
VLLM_SERVED_MODEL: Final = "meta-llama/Llama-3.1-8B-Instruct"

#: KServe pkg/constants: ``InferenceServicePodLabelKey`` ``serving.kserve.io/inferenceservice``,
#: ``KServiceComponentLabel`` ``component``, ``RawDeploymentAppLabel`` ``app`` =
#: ``isvc.<isvc>-predictor``; in raw deployment mode the predictor is the Deployment
#: ``<isvc>-predictor`` (its test's componentMeta.Name "default-predictor"); the model server's
#: container is ``kserve-container`` (``InferenceServiceContainerName``).
KSERVE_ISVC: Final = "mistral-7b"
KSERVE_REPLICAS: Final = 1
#: vLLM as the InferenceService's model server: "You can run it as your own Kubernetes
#: Deployment, or as the model server of a KServe InferenceService. Container Insights collects
#: the metrics that each vLLM server exports" ("Collecting vLLM metrics with OTel Container
#: Insights", https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/container-insights-eks-otel-vllm.html).
KSERVE_SERVED_MODEL: Final = "mistralai/Mistral-7B-Instruct-v0.3"


def vllm_workload(
    release: str = VLLM_RELEASE, spec: str = VLLM_MODEL_SPEC, replicas: int = VLLM_REPLICAS
) -> ServingWorkload:
    """The production-stack chart's vLLM Deployment for one ``modelSpec``."""
    deployment = f"{release}-{spec}-deployment-vllm"
    return ServingWorkload(
        deployment=deployment,
        pods=tuple(deployment_pods(NAMESPACE, deployment, replicas)),
        labels={
            "model": spec,
            "helm-release-name": release,
            "environment": "test",
            "release": "test",
        },
        model=VLLM_SERVED_MODEL,
        container="vllm",
    )


def kserve_workload(isvc: str = KSERVE_ISVC, replicas: int = KSERVE_REPLICAS) -> ServingWorkload:
    """A KServe InferenceService's predictor in raw deployment mode."""
    deployment = f"{isvc}-predictor"
    return ServingWorkload(
        deployment=deployment,
        pods=tuple(deployment_pods(NAMESPACE, deployment, replicas)),
        labels={
            "serving.kserve.io/inferenceservice": isvc,
            "component": "predictor",
            "app": f"isvc.{deployment}",
        },
        model=KSERVE_SERVED_MODEL,
        container="kserve-container",
    )


VLLM: Final = vllm_workload()
KSERVE: Final = kserve_workload()
WORKLOADS: Final = (VLLM, KSERVE)
#: The vLLM replica that is allocated its GPU and serves nothing (the router sends it no
#: requests): the planted over-provisioned replica.
IDLE_REPLICA: Final = VLLM.pods[-1]
#: Each serving pod's GPU on the serving node, in order: the vLLM replicas, then KServe's.
SERVING_PODS: Final = tuple(pod for w in WORKLOADS for pod in w.pods)
#: The serving node: a g5.12xlarge (four A10G) of its own managed node group, one GPU a replica.
NODE: Final = ec2.node(
    "10.0.1.20", "i-0f1e2d3c4b5a6978b", ec2.G5_12XLARGE, "us-east-1a", "use1-az4",
    ec2.managed_node_group_labels("gpu-inference", "ami-0c2d3e4f5a6b7c8d9"),
)  # fmt: skip
#: Each serving pod's GPU index on ``NODE``.
GPU_OF: Final = {pod: gpu for gpu, pod in enumerate(SERVING_PODS)}


def workload_of(pod: Pod) -> ServingWorkload:
    """The workload ``pod`` is a replica of."""
    return next(w for w in WORKLOADS if pod in w.pods)
