"""Serving pods as the vLLM production-stack chart and KServe's raw deployment mode make them."""

import re

from cli.demo.realistic import pods as k8s
from cli.demo.realistic.serving import IDLE_REPLICA, KSERVE, SERVING_PODS, VLLM, workload_of

RANDOM = f"[{k8s.ALPHANUMS}]{{5}}"
# pod-template-hash: a decimal FNV hash's digits, each made one of ALPHANUMS[48..57 % 27].
HASH = "[456789bcdf]+"


def test_the_vllm_deployment_is_the_charts_and_its_pods_the_replicasets() -> None:
    assert VLLM.deployment == "vllm-llama3-8b-deployment-vllm"
    assert len(VLLM.pods) == 3
    for pod in VLLM.pods:
        assert re.fullmatch(f"vllm-llama3-8b-deployment-vllm-{HASH}-{RANDOM}", pod.name)
        assert pod.owner_kind == k8s.REPLICASET
        assert pod.name.startswith(f"{pod.owner_name}-")
        assert (pod.workload, pod.workload_kind) == (VLLM.deployment, k8s.DEPLOYMENT)
    assert len({p.owner_name for p in VLLM.pods}) == 1  # one ReplicaSet
    assert VLLM.labels == {
        "model": "llama3-8b",
        "helm-release-name": "vllm",
        "environment": "test",
        "release": "test",
    }
    assert not any(k.startswith("app.kubernetes.io/") for k in VLLM.labels)
    assert VLLM.container == "vllm"


def test_the_inferenceservice_is_its_predictor_deployment_in_raw_mode() -> None:
    assert KSERVE.deployment == "mistral-7b-predictor"
    (pod,) = KSERVE.pods
    assert re.fullmatch(f"mistral-7b-predictor-{HASH}-{RANDOM}", pod.name)
    assert KSERVE.labels == {
        "serving.kserve.io/inferenceservice": "mistral-7b",
        "component": "predictor",
        "app": "isvc.mistral-7b-predictor",
    }
    assert KSERVE.container == "kserve-container"


def test_each_pod_is_one_gpu_and_the_idle_replica_is_vllms() -> None:
    assert (*VLLM.pods, *KSERVE.pods) == SERVING_PODS
    assert len(set(SERVING_PODS)) == 4
    assert workload_of(IDLE_REPLICA) is VLLM
    assert workload_of(KSERVE.pods[0]) is KSERVE
