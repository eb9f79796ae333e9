"""AWS adapters of the GPU analyzer: the exporter's per-GPU hourly series and Container
Insights' per-pod and per-node GPU series, listed and then read with GetMetricData in full
batches. Read-only; the client is injected.

Container Insights' ``pod_gpu_*`` series carry ClusterName, Namespace, PodName, FullPodName and
GpuDevice but no NodeName, and ``node_gpu_*`` carry NodeName and GpuDevice
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Container-Insights-metrics-enhanced-EKS.html;
aws/amazon-cloudwatch-agent translator/translate/otel/exporter/awsemf/kubernetes.go). Both come
from the same DCGM sample, so a pod's GPU is the node GPU of the same device whose hourly mean
power is closest to the pod's: ``resolve_node``.
"""

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from contract.metrics import (
    CI_NODE_GPU_POWER_METRIC,
    CI_POD_GPU_POWER_METRIC,
    CI_POD_GPU_UTILIZATION_METRIC,
    DIM_CLUSTER,
    DIM_GPU_DEVICE,
    DIM_GPU_INDEX,
    DIM_NAMESPACE,
    DIM_NODE,
    DIM_POD_NAME,
    DIM_SHARD,
    NAMESPACE_CONTAINER_INSIGHTS,
    NAMESPACE_GPU,
    GpuMetric,
    gpu_schema,
)
from lambdas.gpu_analyzer.attribution import GpuHour, GpuKey, Hold
from lambdas.shared.metric_fetcher import MetricQuery, fetch, listed_dimensions

HOUR: Final = 3600
#: Container Insights samples GPUs once a minute.
CI_SAMPLES_PER_HOUR: Final = 60
UNKNOWN_NODE: Final = "(unknown node)"
#: (name, metric, statistic) per exporter GPU.
EXPORTER: Final = (
    ("power", GpuMetric.POWER_UTILIZATION, "Average"),
    ("sm", GpuMetric.SM_ACTIVE, "Average"),
    ("healthy", GpuMetric.HEALTHY, "Minimum"),
    ("in_use", GpuMetric.ALLOCATED_POWER_UTILIZATION, "SampleCount"),
)


def _listed(cloudwatch: Any, namespace: str, metric: str, cluster: str) -> Iterator[dict[str, str]]:
    return listed_dimensions(cloudwatch, namespace, metric, {DIM_CLUSTER: cluster})


def exporter_queries(cloudwatch: Any, cluster: str) -> list[MetricQuery]:
    """Every GPU the exporter published (a lost GPU publishes only gpu_healthy). Each metric is
    read with its own per-GPU dimension set (``gpu_schema``): the alarm metrics carry the GPU's
    alarm shard, which only the listing knows."""
    gpus: set[tuple[str, str]] = set()
    shards: dict[tuple[str, str], str] = {}
    for metric in (GpuMetric.POWER_UTILIZATION, GpuMetric.HEALTHY):
        for dims in _listed(cloudwatch, NAMESPACE_GPU, str(metric), cluster):
            if set(dims) == set(gpu_schema(metric)):
                gpu = (dims[DIM_NODE], dims[DIM_GPU_INDEX])
                gpus.add(gpu)
                if DIM_SHARD in dims:
                    shards[gpu] = dims[DIM_SHARD]

    def dimensions(metric: GpuMetric, node: str, gpu: str) -> tuple[tuple[str, str], ...]:
        base = ((DIM_CLUSTER, cluster), (DIM_GPU_INDEX, gpu), (DIM_NODE, node))
        if DIM_SHARD in gpu_schema(metric):
            return (*base, (DIM_SHARD, shards.get((node, gpu), "")))
        return base

    return [
        MetricQuery(
            ("gpu", node, gpu, name),
            NAMESPACE_GPU,
            str(metric),
            dimensions(metric, node, gpu),
            stat,
            HOUR,
        )
        for node, gpu in sorted(gpus)
        for name, metric, stat in EXPORTER
    ]


def container_insights_queries(cloudwatch: Any, cluster: str) -> list[MetricQuery]:
    """Per pod and GPU: samples (how long it held the GPU) and mean power; per node GPU: power.
    Dimensions are passed in the order ListMetrics gives them (moto matches them in order)."""
    queries: dict[tuple[str, ...], MetricQuery] = {}
    for dims in _listed(
        cloudwatch, NAMESPACE_CONTAINER_INSIGHTS, CI_POD_GPU_UTILIZATION_METRIC, cluster
    ):
        if {DIM_NAMESPACE, DIM_POD_NAME, DIM_GPU_DEVICE} <= set(dims) and DIM_NODE not in dims:
            key = (dims[DIM_NAMESPACE], dims[DIM_POD_NAME], dims[DIM_GPU_DEVICE])
            listed_dims = tuple(dims.items())
            queries[("pod", *key, "samples")] = MetricQuery(
                ("pod", *key, "samples"),
                NAMESPACE_CONTAINER_INSIGHTS,
                CI_POD_GPU_UTILIZATION_METRIC,
                listed_dims,
                "SampleCount",
                HOUR,
            )
            queries[("pod", *key, "power")] = MetricQuery(
                ("pod", *key, "power"),
                NAMESPACE_CONTAINER_INSIGHTS,
                CI_POD_GPU_POWER_METRIC,
                listed_dims,
                "Average",
                HOUR,
            )
    for dims in _listed(
        cloudwatch, NAMESPACE_CONTAINER_INSIGHTS, CI_NODE_GPU_POWER_METRIC, cluster
    ):
        if {DIM_NODE, DIM_GPU_DEVICE} <= set(dims):
            node_key = ("node", dims[DIM_NODE], dims[DIM_GPU_DEVICE], "power")
            queries[node_key] = MetricQuery(
                node_key,
                NAMESPACE_CONTAINER_INSIGHTS,
                CI_NODE_GPU_POWER_METRIC,
                tuple(dims.items()),
                "Average",
                HOUR,
            )
    return list(queries.values())


def gpu_index(device: str) -> str:
    """DCGM's device name (``nvidia3``) as the exporter's GpuIndex (``3``)."""
    return device.removeprefix("nvidia")


def resolve_node(
    device: str,
    hour: int,
    pod_power: float | None,
    node_power: dict[tuple[str, int], dict[str, float]],
) -> str:
    """The node whose GPU of this device drew, that hour, the power closest to the pod's."""
    candidates = node_power.get((device, hour), {})
    if len(candidates) == 1:
        return next(iter(candidates))
    if not candidates or pod_power is None:
        return UNKNOWN_NODE
    return min(candidates, key=lambda node: (abs(candidates[node] - pod_power), node))


@dataclass
class Observed:
    gpu_hours: list[GpuHour] = field(default_factory=list)
    holds: list[Hold] = field(default_factory=list)


def _hourly(timestamps: Iterable[Any], values: Iterable[float]) -> dict[int, float]:
    return {int(t.timestamp()) // HOUR * HOUR: v for t, v in zip(timestamps, values, strict=True)}


def observe(cloudwatch: Any, cluster: str, *, start: float, end: float) -> Observed:
    """The window's GPU-hours as the exporter saw them, and the pods' holds."""
    exporter: dict[tuple[str, str], dict[str, dict[int, float]]] = defaultdict(dict)
    for batch in fetch(cloudwatch, exporter_queries(cloudwatch, cluster), start=start, end=end):
        for series in batch:
            _, node, gpu, name = series.query.key
            exporter[(node, gpu)][name] = _hourly(series.timestamps, series.values)
    pods: dict[tuple[str, str, str], dict[str, dict[int, float]]] = defaultdict(dict)
    node_power: dict[tuple[str, int], dict[str, float]] = defaultdict(dict)
    queries = container_insights_queries(cloudwatch, cluster)
    for batch in fetch(cloudwatch, queries, start=start, end=end):
        for series in batch:
            values = _hourly(series.timestamps, series.values)
            if series.query.key[0] == "node":
                _, node, device, _ = series.query.key
                for hour, value in values.items():
                    node_power[(device, hour)][node] = value
            else:
                _, namespace, pod, device, name = series.query.key
                pods[(namespace, pod, device)][name] = values
    observed = Observed()
    for (node, gpu), named in sorted(exporter.items()):
        hours = set().union(*(set(v) for v in named.values()))
        for hour in sorted(hours):
            healthy = named.get("healthy", {}).get(hour)
            observed.gpu_hours.append(
                GpuHour(
                    gpu=GpuKey(node, gpu),
                    hour=hour,
                    power_utilization=named.get("power", {}).get(hour),
                    sm_active=named.get("sm", {}).get(hour),
                    faulted=healthy is not None and healthy < 1.0,
                    in_use=named.get("in_use", {}).get(hour, 0.0) > 0,
                )
            )
    for (namespace, pod, device), named in sorted(pods.items()):
        for hour, samples in sorted(named.get("samples", {}).items()):
            node = resolve_node(device, hour, named.get("power", {}).get(hour), node_power)
            observed.holds.append(
                Hold(
                    gpu=GpuKey(node, gpu_index(device)),
                    hour=hour,
                    namespace=namespace,
                    pod=pod,
                    share=min(1.0, samples / CI_SAMPLES_PER_HOUR),
                )
            )
    return observed
