"""Each workload's GPU-hours and mean power over a day, from the day's GPU-hour attribution and
the holds it was made of: what the serving analysis prices a deployment's replicas with, read
once for the GPU-hour attribution and not again."""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from lambdas.training_analyzer.gpu_hours.attribution import Attribution, Hold, HourClass


@dataclass(frozen=True)
class WorkloadGpu:
    #: The workload's kind as the attribution named it (workloads.JobRef.kind).
    kind: str
    #: GPU-hours its pods held, all classes but lost or faulted (a lost GPU serves nothing).
    gpu_hours: float
    #: Its pods' mean power while they held their GPUs, percent of the GPUs' enforced limit,
    #: weighted by the share of each hour held; None where no hold had a power reading.
    mean_power_percent: float | None


def by_workload(
    attribution: Attribution, holds: Iterable[Hold]
) -> dict[tuple[str, str], WorkloadGpu]:
    """(namespace, workload) -> its GPU-hours and mean power, the workload being the job the
    attribution named for its pods (a serving pod's controller: workloads.serving_controller)."""
    hours: dict[tuple[str, str], float] = defaultdict(float)
    kinds: dict[tuple[str, str], str] = {}
    for pod in attribution.pods.values():
        key = (pod.namespace, pod.job.job)
        hours[key] += pod.held - pod.hours.get(HourClass.FAULTED, 0.0)
        kinds.setdefault(key, pod.job.kind)
    watts: dict[tuple[str, str], float] = defaultdict(float)
    shares: dict[tuple[str, str], float] = defaultdict(float)
    for hold in holds:
        holder = attribution.pods.get((hold.namespace, hold.pod))
        if holder is None or hold.power_utilization is None or hold.share <= 0:
            continue
        key = (holder.namespace, holder.job.job)
        share = min(1.0, hold.share)
        watts[key] += hold.power_utilization * share
        shares[key] += share
    return {
        key: WorkloadGpu(
            kind=kinds[key],
            gpu_hours=held,
            mean_power_percent=watts[key] / shares[key] if shares.get(key) else None,
        )
        for key, held in hours.items()
    }
