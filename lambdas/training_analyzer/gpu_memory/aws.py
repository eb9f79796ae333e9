"""Reads each pod's GPU memory from Container Insights: ``pod_gpu_memory_used`` (hourly
Maximum) and ``pod_gpu_memory_total`` (Maximum over the window), both in bytes
(contract.metrics ``CI_POD_GPU_MEMORY_USED_METRIC``), per (Namespace, PodName, FullPodName,
GpuDevice), listed and then read with GetMetricData in full batches. Read-only; the client
is injected.

A pod is its FullPodName; its job is named as the GPU-hour attribution names it
(gpu_hours.workloads.job_of: the emitter's where it reported the pod, else from the
controller). ``pod_gpu_*`` carries no NodeName, so a pod's node is the emitter's where it
reported one, and the node's instance type is read from the listing of ``node_gpu_power_draw``
(ClusterName, NodeName, InstanceId, InstanceType, GpuDevice); a pod of unknown node has its
cluster's GPU instance family where all its GPU nodes share one."""

from collections import defaultdict
from collections.abc import Mapping
from typing import Any, Final

from gpu_insights_agent.contract.metrics import (
    CI_NODE_GPU_POWER_METRIC,
    CI_POD_GPU_MEMORY_TOTAL_METRIC,
    CI_POD_GPU_MEMORY_USED_METRIC,
    DIM_CLUSTER,
    DIM_FULL_POD_NAME,
    DIM_GPU_DEVICE,
    DIM_NAMESPACE,
    DIM_NODE,
    DIM_POD_NAME,
    NAMESPACE_CONTAINER_INSIGHTS,
)
from lambdas.shared.metric_fetcher import (
    MetricDataError,
    MetricQuery,
    fetch,
    listed_dimensions,
    window_period,
)
from lambdas.training_analyzer.gpu_hours.workloads import job_of
from lambdas.training_analyzer.gpu_memory.analysis import GpuMemory
from lambdas.training_analyzer.gpu_memory.mig import family_of

HOUR: Final = 3600
_INSTANCE_TYPE: Final = "InstanceType"
_POD_DIMS: Final = frozenset({DIM_NAMESPACE, DIM_POD_NAME, DIM_FULL_POD_NAME, DIM_GPU_DEVICE})


def memory_queries(cloudwatch: Any, cluster: str, *, start: float, end: float) -> list[MetricQuery]:
    """Two queries per pod and GPU: the hourly peak used, and the device's capacity. The
    dimensions go in the order ListMetrics gives them."""
    queries: list[MetricQuery] = []
    for dims in listed_dimensions(
        cloudwatch, NAMESPACE_CONTAINER_INSIGHTS, CI_POD_GPU_MEMORY_USED_METRIC,
        {DIM_CLUSTER: cluster},
    ):  # fmt: skip
        if not set(dims) >= _POD_DIMS or DIM_NODE in dims:
            continue
        key = (
            dims[DIM_NAMESPACE],
            dims[DIM_FULL_POD_NAME],
            dims[DIM_POD_NAME],
            dims[DIM_GPU_DEVICE],
        )
        listed = tuple(dims.items())
        queries += [
            MetricQuery(
                ("used", *key), NAMESPACE_CONTAINER_INSIGHTS, CI_POD_GPU_MEMORY_USED_METRIC,
                listed, "Maximum", HOUR,
            ),
            MetricQuery(
                ("total", *key), NAMESPACE_CONTAINER_INSIGHTS, CI_POD_GPU_MEMORY_TOTAL_METRIC,
                listed, "Maximum", window_period(start, end),
            ),
        ]  # fmt: skip
    return queries


def instance_types(cloudwatch: Any, cluster: str) -> dict[str, str]:
    """Node name -> instance type, from the node GPU series' dimensions (a listing only)."""
    types: dict[str, str] = {}
    for dims in listed_dimensions(
        cloudwatch, NAMESPACE_CONTAINER_INSIGHTS, CI_NODE_GPU_POWER_METRIC, {DIM_CLUSTER: cluster}
    ):
        if DIM_NODE in dims and _INSTANCE_TYPE in dims:
            types[dims[DIM_NODE]] = dims[_INSTANCE_TYPE]
    return types


def read_gpu_memory(
    cloudwatch: Any,
    cluster: str,
    *,
    start: float,
    end: float,
    exact_jobs: Mapping[str, str] | None = None,
    pod_nodes: Mapping[str, str] | None = None,
) -> list[GpuMemory]:
    """Every pod's memory on every GPU it held in the window. ``exact_jobs`` and ``pod_nodes``
    map pod names to the job and node the training emitter reported from inside them. A
    series CloudWatch failed raises :class:`MetricDataError` (the caller skips the analysis
    rather than judge a job on part of its GPUs)."""
    values: dict[tuple[str, ...], dict[str, list[float]]] = defaultdict(dict)
    for batch in fetch(
        cloudwatch, memory_queries(cloudwatch, cluster, start=start, end=end), start=start, end=end
    ):
        for series in batch:
            if series.error:
                raise MetricDataError(f"{'/'.join(series.query.key)}: {series.error}")
            name, *key = series.query.key
            values[tuple(key)][name] = series.values
    types = instance_types(cloudwatch, cluster) if values else {}
    families = {family_of(t) for t in types.values()}
    # A pod of unknown node ran on one of the cluster's GPU nodes: where they are all of one
    # family, so is its GPU.
    anywhere = min(types.values()) if len(families) == 1 else None
    nodes = pod_nodes or {}
    gpus = []
    for (namespace, pod, controller, device), named in sorted(values.items()):
        node = nodes.get(pod)
        gpus.append(
            GpuMemory(
                namespace=namespace,
                job=job_of(pod, exact_jobs or {}, controller).job,
                pod=pod,
                device=device,
                hourly_peaks=tuple(named.get("used", ())),
                capacity_bytes=max(named.get("total", ()), default=0.0),
                instance_type=types.get(node) if node else anywhere,
            )
        )
    return gpus
