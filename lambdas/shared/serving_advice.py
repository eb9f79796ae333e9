"""What to tell a serving workload's owner about its replica count: the autoscaler its kind
scales with, on the server's own queue rather than CPU or GPU utilisation. One wording for the
idle-replica finding (gpu_hours/findings.py), the serving findings (serving/analysis.py) and the
weekly report's actions.

Sources:
- vLLM production-stack, "Autoscaling with KEDA"
  (https://docs.vllm.ai/projects/production-stack/en/latest/use_cases/autoscaling-keda.html):
  a KEDA ScaledObject on Prometheus' ``vllm:num_requests_waiting``, built into the chart from
  v0.1.9.
- Amazon EKS, "Autoscale AI inference with HPA and KEDA"
  (https://docs.aws.amazon.com/eks/latest/userguide/ml-inference-autoscaling-hpa-keda.html):
  KEDA creates the HPA and scales a vLLM Deployment on its queue depth (the primary demand
  signal), with p95 end-to-end latency as an SLO guardrail.
- KServe, "Autoscale InferenceService with LLM metrics"
  (https://kserve.github.io/website/docs/model-serving/generative-inference/autoscaling): the
  annotation ``serving.kserve.io/autoscalerClass: keda`` scales an InferenceService on vLLM's
  waiting requests or KV-cache use, in Standard (raw deployment) mode only.
- Ray Serve, "Ray Serve Autoscaling" (https://docs.ray.io/en/latest/serve/autoscaling-guide.html):
  a deployment's ``autoscaling_config`` (``min_replicas``, ``max_replicas``,
  ``target_ongoing_requests``) scales on each replica's ongoing and queued requests.
"""

from typing import Final

from gpu_insights_agent.contract.serving import Server, Signal, serving_metric
from lambdas.shared.workload_resource import INFERENCE_SERVICE, RAY_SERVICE


def _queue() -> str:
    metric = serving_metric(Server.VLLM, Signal.WAITING)
    assert metric is not None
    return metric.names[0]


#: vLLM's requests-waiting gauge, the queue the autoscalers above scale on.
VLLM_QUEUE: Final = _queue()

_AUTOSCALERS: Final = {
    INFERENCE_SERVICE: (
        f"KServe's KEDA autoscaler (serving.kserve.io/autoscalerClass: keda, raw deployment "
        f"mode) on its server's queue ({VLLM_QUEUE} for vLLM)"
    ),
    RAY_SERVICE: (
        "Ray Serve's autoscaling_config (min_replicas, max_replicas, target_ongoing_requests)"
    ),
}
#: A Deployment's (and any other serving kind's).
_DEPLOYMENT_AUTOSCALER: Final = (
    f"a KEDA ScaledObject (or an HPA on a custom metric) on its server's queue ({VLLM_QUEUE} "
    "for vLLM; the vLLM production-stack chart has KEDA built in)"
)


def autoscaler(kind: str) -> str:
    """The autoscaler a serving workload of ``kind`` scales with, in words."""
    return _AUTOSCALERS.get(kind, _DEPLOYMENT_AUTOSCALER)


def idle_replicas_advice(name: str, kind: str) -> str:
    """What to do about a serving workload whose replicas held GPUs without serving (the
    caller adds what an idle GPU-hour costs)."""
    return (
        f"Its replicas held GPUs without serving in these hours: scale {name} to the replicas "
        f"its load needs, or let {autoscaler(kind)} do it; a replica that stays idle while "
        "the others serve gets no requests (check its readiness and the router's or "
        "Service's endpoints);"
    )
