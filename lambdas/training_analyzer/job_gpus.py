"""The GPUs each training job's own pods held, hour by hour, from Container Insights' pod
series: Classic's ``pod_gpu_*`` by the pod's own name (FullPodName) and device, on the node
the training emitter reported the pod on (gpu_hours/aws.py ``pod_holds``); OTel's DCGM series,
each labelled with the pod holding the GPU (gpu_hours/otel.py ``read_holds``). A job's GPU
figures (``training_gpu_underutilized``) are then its GPUs', not its nodes': a node's other
pods (another job, a notebook) share none of them.

Only hours a pod held its GPU whole count: the exporter's hourly mean of a GPU held for part
of the hour mixes in the rest of it, whoever (or nothing) held it then."""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any, Final

from lambdas.shared.promql import PromQLClient
from lambdas.training_analyzer.gpu_hours.attribution import Hold
from lambdas.training_analyzer.gpu_hours.aws import pod_holds
from lambdas.training_analyzer.gpu_hours.otel import read_holds

#: A hold of at least this share of the hour is the GPU's whole hour (a sample more or less).
WHOLE_HOUR: Final = 0.95

#: (node, GPU index, hour start in epoch seconds).
GpuHourKey = tuple[str, str, float]


def whole_hours(holds: Iterable[Hold], job_of_pod: Mapping[str, str]) -> dict[str, set[GpuHourKey]]:
    """Each job's GPU-hours its pods (``job_of_pod``: pod -> job) held whole; a job whose pods
    held GPUs only in parts of hours has none (no figure of its own, not its node's)."""
    held: dict[str, set[GpuHourKey]] = defaultdict(set)
    for hold in holds:
        job = job_of_pod.get(hold.pod)
        if job is None:
            continue
        mine = held[job]  # placed, even where only in parts of hours
        if hold.share >= WHOLE_HOUR:
            mine.add((hold.gpu.node, hold.gpu.gpu, float(hold.hour)))
    return dict(held)


def job_gpu_hours(
    *,
    cloudwatch: Any,
    cluster: str,
    start: float,
    end: float,
    job_of_pod: Mapping[str, str],
    pod_nodes: Mapping[str, str],
    dcgm_promql: PromQLClient | None = None,
    classic: bool = False,
) -> dict[str, set[GpuHourKey]]:
    """``whole_hours`` of the jobs' pods, read with ``dcgm_promql`` (OTel mode: DCGM's series
    of the pods' nodes) or, ``classic``, from Container Insights' pod series (the pods' own,
    on the nodes ``pod_nodes`` gives); nothing read otherwise."""
    if dcgm_promql is not None:
        nodes = set(pod_nodes.values())
        holds, _ = read_holds(
            dcgm_promql, cluster, start=start, end=end, gpu_hours=(), only=nodes, power=False
        )
    elif classic:
        mine = {pod: node for pod, node in pod_nodes.items() if pod in job_of_pod}
        holds = pod_holds(cloudwatch, cluster, start=start, end=end, pod_nodes=mine)
    else:
        return {}
    return whole_hours(holds, job_of_pod)
