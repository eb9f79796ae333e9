"""How a finding names the workload whose pods held GPUs: a serving controller by its kind
(``namespace/<ns>/Deployment/<name>``, as the serving findings name it), anything else as a
job (``namespace/<ns>/job/<name>``). One spelling for the GPU-hour findings, the serving
findings and the weekly report's actions, so a Deployment's idle replica and its saturated
queue are findings of one resource.

The serving kinds are what the GPU-hour attribution names a serving pod's workload
(lambdas/training_analyzer/gpu_hours/workloads.py ``serving_controller``: a KServe
InferenceService, a KubeRay RayService, else the Deployment its owner attributes name) and what
a Classic pod's name shows of a Deployment (its pod-template-hash: workloads.py
``controller_job``)."""

from typing import Final

INFERENCE_SERVICE: Final = "InferenceService"
RAY_SERVICE: Final = "RayService"
DEPLOYMENT: Final = "Deployment"
#: Workload kinds whose pods serve requests rather than run to an end.
SERVING_KINDS: Final = frozenset({DEPLOYMENT, INFERENCE_SERVICE, RAY_SERVICE})


def is_serving(kind: str) -> bool:
    """Whether a workload of this kind serves (its pods run until scaled down)."""
    return kind in SERVING_KINDS


def workload_resource(namespace: str, name: str, kind: str) -> str:
    """A finding's ``resource`` for the workload ``name`` of ``kind`` in ``namespace``."""
    return f"namespace/{namespace}/{kind if is_serving(kind) else 'job'}/{name}"
