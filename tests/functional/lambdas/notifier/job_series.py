"""The labels a training rank's series carry in OTel mode (the emitter's job and rank on the
datapoint, the add-on's cluster, namespace, pod and node on the resource), for the fail-slow
page's PromQL tests."""

from gpu_insights_agent.contract.metrics import OTLP_JOB, OTLP_RANK
from lambdas.shared.dcgm import CLOUDWATCH


def rank_labels(job: str, node: str, rank: str, namespace: str = "nlp") -> dict[str, str]:
    """Rank ``rank`` of ``job`` in its pod ``<job>-worker-<rank>`` on ``node``."""
    labels = CLOUDWATCH
    return {
        labels.cluster: "train",
        labels.namespace: namespace,
        labels.pod: f"{job}-worker-{rank}",
        labels.node: node,
        OTLP_JOB: job,
        OTLP_RANK: rank,
    }
