"""AWS adapters of the GPU analyzer: the exporter's per-GPU hourly series and Container
Insights' per-pod and per-node GPU series, listed and then read with GetMetricData in full
batches. Read-only; the client is injected.

Container Insights' ``pod_gpu_*`` series carry ClusterName, Namespace, PodName, FullPodName and
GpuDevice but no NodeName, and ``node_gpu_*`` carry NodeName and GpuDevice
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Container-Insights-metrics-enhanced-EKS.html;
aws/amazon-cloudwatch-agent translator/translate/otel/exporter/awsemf/kubernetes.go). Both come
from the same DCGM sample, so a pod's GPU is the node GPU of the same device whose hourly mean
power is closest to the pod's: ``resolve_node``.

A pod is its FullPodName, its own name: PodName is the controller's name for a Job's,
ReplicaSet's, DaemonSet's or ReplicationController's pod, so the pods of one Job on GPU 0 of
two nodes share it (contract.metrics ``DIM_POD_NAME``). PodName is kept as the pod's
controller, from which its job is named (workloads.job_of).
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from gpu_insights_agent.contract.metrics import (
    CI_NODE_GPU_POWER_METRIC,
    CI_POD_GPU_POWER_METRIC,
    CI_POD_GPU_UTILIZATION_METRIC,
    DIM_CLUSTER,
    DIM_FULL_POD_NAME,
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
from lambdas.shared.metric_fetcher import MetricQuery, fetch, listed_dimensions
from lambdas.training_analyzer.gpu_hours.attribution import UNPLACED_NODE, GpuHour, GpuKey, Hold

HOUR: Final = 3600
#: Container Insights samples GPUs once a minute by default; with
#: ``accelerated_compute_gpu_metrics_collection_interval`` under 60 s (down to 1 s) the agent
#: publishes every sub-minute sample in each minute's datapoint ("Detailed GPU monitoring",
#: Container-Insights-metrics-enhanced-EKS.html), so an hour holds up to 3,600: the samples a
#: full hour holds are read from the node GPU series themselves (``samples_per_hour``).
CI_SAMPLES_PER_HOUR: Final = 60
UNKNOWN_NODE: Final = UNPLACED_NODE
#: Shares are sample counts over expected samples: a GPU-hour holds a sample more or less.
_CAPACITY: Final = 1.05
#: (name, metric, statistic) per exporter GPU.
EXPORTER: Final = (
    ("power", GpuMetric.POWER_UTILIZATION, "Average"),
    ("sm", GpuMetric.SM_ACTIVE, "Average"),
    ("healthy", GpuMetric.HEALTHY, "Minimum"),
    ("in_use", GpuMetric.ALLOCATED_POWER_UTILIZATION, "SampleCount"),
)


def exporter_queries(cloudwatch: Any, cluster: str) -> list[MetricQuery]:
    """Every GPU the exporter published (a lost GPU publishes only gpu_healthy). Each metric is
    read with its own per-GPU dimension set (``gpu_schema``): the alarm metrics carry the GPU's
    alarm shard, which only the listing knows."""
    gpus: set[tuple[str, str]] = set()
    shards: dict[tuple[str, str], str] = {}
    for metric in (GpuMetric.POWER_UTILIZATION, GpuMetric.HEALTHY):
        for dims in listed_dimensions(
            cloudwatch, NAMESPACE_GPU, str(metric), {DIM_CLUSTER: cluster}
        ):
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
    A pod's key is (namespace, FullPodName, PodName, device). Dimensions are passed in the
    order ListMetrics gives them (moto matches them in order)."""
    queries: dict[tuple[str, ...], MetricQuery] = {}
    pod_dims = {DIM_NAMESPACE, DIM_POD_NAME, DIM_FULL_POD_NAME, DIM_GPU_DEVICE}
    for dims in listed_dimensions(
        cloudwatch,
        NAMESPACE_CONTAINER_INSIGHTS,
        CI_POD_GPU_UTILIZATION_METRIC,
        {DIM_CLUSTER: cluster},
    ):
        if pod_dims <= set(dims) and DIM_NODE not in dims:
            key = (
                dims[DIM_NAMESPACE],
                dims[DIM_FULL_POD_NAME],
                dims[DIM_POD_NAME],
                dims[DIM_GPU_DEVICE],
            )
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
    for dims in listed_dimensions(
        cloudwatch, NAMESPACE_CONTAINER_INSIGHTS, CI_NODE_GPU_POWER_METRIC, {DIM_CLUSTER: cluster}
    ):
        if {DIM_NODE, DIM_GPU_DEVICE} <= set(dims):
            for name, stat in (("power", "Average"), ("samples", "SampleCount")):
                node_key = ("node", dims[DIM_NODE], dims[DIM_GPU_DEVICE], name)
                queries[node_key] = MetricQuery(
                    node_key,
                    NAMESPACE_CONTAINER_INSIGHTS,
                    CI_NODE_GPU_POWER_METRIC,
                    tuple(dims.items()),
                    stat,
                    HOUR,
                )
    return list(queries.values())


def samples_per_hour(node_samples: Iterable[float]) -> float:
    """The samples a GPU series holds in a full hour at the agent's collection interval: the
    most common hourly SampleCount of the node GPU series (a node reports all hour but the hour
    it starts or stops; the interval is the add-on's, one for the cluster), the larger of
    equally common ones; ``CI_SAMPLES_PER_HOUR`` where no node reported."""
    counts: dict[int, int] = defaultdict(int)
    for samples in node_samples:
        counts[round(samples)] += 1
    if not counts:
        return float(CI_SAMPLES_PER_HOUR)
    return float(max(counts, key=lambda n: (counts[n], n)))


def gpu_index(device: str) -> str:
    """DCGM's device name (``nvidia3``) as the exporter's GpuIndex (``3``)."""
    return device.removeprefix("nvidia")


@dataclass(frozen=True)
class PodOnDevice:
    """One pod's series on one GPU device in one hour, to be placed on a node."""

    pod: str
    share: float
    #: The pod's mean power (watts) on the device; None where Container Insights has none.
    watts: float | None


def resolve_nodes(
    pods: Sequence[PodOnDevice],
    candidates: Mapping[str, float],
    known: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Each pod's node among the ``candidates`` (node -> that hour's mean power, watts, of its
    GPU of the pods' device): a pod whose node is ``known`` (the emitter's) goes there; the rest
    are matched to GPUs with hour left, greedily by smallest power difference, so that two pods
    at the same power go to two GPUs, not one; a pod that finds no GPU with hour left shared
    one (time slicing), the closest. A pod without power takes the one GPU with hour left, if
    only one has; otherwise, or with no candidate, its node is ``UNKNOWN_NODE``. Which of two
    equally drawing GPUs a pod gets is then a guess, but each GPU-hour is counted once."""
    placed: dict[str, str] = {}
    left = dict.fromkeys(candidates, _CAPACITY)
    for pod in pods:
        node = (known or {}).get(pod.pod)
        if node is not None:
            placed[pod.pod] = node
            left[node] = left.get(node, _CAPACITY) - min(1.0, pod.share)
    rest = [p for p in pods if p.pod not in placed]
    if len(candidates) == 1:
        return placed | {p.pod: next(iter(candidates)) for p in rest}
    pairs = sorted(
        (abs(candidates[node] - p.watts), node, p.pod, min(1.0, p.share))
        for p in rest
        if p.watts is not None
        for node in candidates
    )
    for _, node, pod_name, share in pairs:
        if pod_name not in placed and left[node] >= share:
            placed[pod_name] = node
            left[node] -= share
    for p in rest:
        if p.pod in placed:
            continue
        if p.watts is not None and candidates:
            watts = p.watts
            placed[p.pod] = min(candidates, key=lambda n: (abs(candidates[n] - watts), n))
            continue
        free = [n for n in sorted(left) if left[n] >= min(1.0, p.share)]
        placed[p.pod] = free[0] if len(free) == 1 else UNKNOWN_NODE
        if len(free) == 1:
            left[free[0]] -= min(1.0, p.share)
    return placed


def pod_power_percent(
    pod_watts: float | None, gpu_watts: float | None, gpu_percent: float | None
) -> float | None:
    """The pod's power as a percent of the GPU's limit: the GPU's hourly mean in watts
    (Container Insights) and in percent of its limit (the exporter) give the limit."""
    if pod_watts is None or not gpu_watts or gpu_percent is None:
        return None
    return pod_watts * gpu_percent / gpu_watts


@dataclass
class Observed:
    gpu_hours: list[GpuHour] = field(default_factory=list)
    holds: list[Hold] = field(default_factory=list)
    #: (node, hour) in which Container Insights reported the node's GPUs.
    ci_node_hours: set[tuple[str, int]] = field(default_factory=set)


def _hourly(timestamps: Iterable[Any], values: Iterable[float]) -> dict[int, float]:
    return {int(t.timestamp()) // HOUR * HOUR: v for t, v in zip(timestamps, values, strict=True)}


def exporter_gpu_hours(cloudwatch: Any, cluster: str, *, start: float, end: float) -> list[GpuHour]:
    """The window's GPU-hours as the exporter saw them (``GpuInsights``, in either Container
    Insights mode)."""
    exporter: dict[tuple[str, str], dict[str, dict[int, float]]] = defaultdict(dict)
    for batch in fetch(cloudwatch, exporter_queries(cloudwatch, cluster), start=start, end=end):
        for series in batch:
            _, node, gpu, name = series.query.key
            exporter[(node, gpu)][name] = _hourly(series.timestamps, series.values)
    return gpu_hours_of(exporter)


def gpu_hours_of(
    exporter: Mapping[tuple[str, str], Mapping[str, Mapping[int, float]]],
) -> list[GpuHour]:
    """Each GPU-hour of (node, GPU) -> ``EXPORTER`` name -> hour -> value, however read."""
    gpu_hours: list[GpuHour] = []
    for (node, gpu), named in sorted(exporter.items()):
        hours = set().union(*(set(v) for v in named.values()))
        for hour in sorted(hours):
            healthy = named.get("healthy", {}).get(hour)
            gpu_hours.append(
                GpuHour(
                    gpu=GpuKey(node, gpu),
                    hour=hour,
                    power_utilization=named.get("power", {}).get(hour),
                    sm_active=named.get("sm", {}).get(hour),
                    faulted=healthy is not None and healthy < 1.0,
                    in_use=named.get("in_use", {}).get(hour, 0.0) > 0,
                )
            )
    return gpu_hours


def observe(
    cloudwatch: Any,
    cluster: str,
    *,
    start: float,
    end: float,
    pod_nodes: Mapping[str, str] | None = None,
) -> Observed:
    """The window's GPU-hours as the exporter saw them, and the pods' holds. ``pod_nodes``
    maps pod names (the emitter's PodName: the pod's own, as FullPodName) to the node the
    training emitter reported them on (an exact join)."""
    observed = Observed(gpu_hours=exporter_gpu_hours(cloudwatch, cluster, start=start, end=end))
    queries = container_insights_queries(cloudwatch, cluster)
    pods, node_power, node_samples = _read_container_insights(cloudwatch, queries, start, end)
    observed.ci_node_hours = {(n, h) for (_, h), nodes in node_power.items() for n in nodes}
    full_hour = samples_per_hour(node_samples)
    observed.holds = _holds(pods, node_power, observed.gpu_hours, pod_nodes or {}, full_hour)
    return observed


def pod_holds(
    cloudwatch: Any,
    cluster: str,
    *,
    start: float,
    end: float,
    pod_nodes: Mapping[str, str],
) -> list[Hold]:
    """The holds of the pods ``pod_nodes`` names (their own names) alone, each on the node it
    maps it to (the node the training emitter reported): which of its node's GPUs each held,
    hour by hour. Reads only those pods' series and their nodes' (their samples give a full
    hour's), not the cluster's; the holds carry no power (no exporter reading is read)."""
    nodes = set(pod_nodes.values())
    queries = [
        q
        for q in container_insights_queries(cloudwatch, cluster)
        if (q.key[0] == "pod" and q.key[2] in pod_nodes and q.key[-1] == "samples")
        or (q.key[0] == "node" and q.key[1] in nodes and q.key[-1] == "samples")
    ]
    pods, _, node_samples = _read_container_insights(cloudwatch, queries, start, end)
    full_hour = samples_per_hour(node_samples)
    return _holds(pods, {}, (), pod_nodes, full_hour)


def _read_container_insights(
    cloudwatch: Any, queries: Sequence[MetricQuery], start: float, end: float
) -> tuple[
    dict[tuple[str, str, str, str], dict[str, dict[int, float]]],
    dict[tuple[str, int], dict[str, float]],
    list[float],
]:
    """``container_insights_queries``' answers: each pod's series by (namespace, pod,
    controller, device) and name, each device's node power by hour, every node sample count."""
    pods: dict[tuple[str, str, str, str], dict[str, dict[int, float]]] = defaultdict(dict)
    node_power: dict[tuple[str, int], dict[str, float]] = defaultdict(dict)
    node_samples: list[float] = []
    for batch in fetch(cloudwatch, queries, start=start, end=end):
        for series in batch:
            values = _hourly(series.timestamps, series.values)
            if series.query.key[0] == "node":
                _, node, device, name = series.query.key
                if name == "samples":
                    node_samples += values.values()
                    continue
                for hour, value in values.items():
                    node_power[(device, hour)][node] = value
            else:
                _, namespace, pod, controller, device, name = series.query.key
                pods[(namespace, pod, controller, device)][name] = values
    return pods, node_power, node_samples


def _holds(
    pods: Mapping[tuple[str, str, str, str], Mapping[str, Mapping[int, float]]],
    node_power: Mapping[tuple[str, int], Mapping[str, float]],
    gpu_hours: Sequence[GpuHour],
    pod_nodes: Mapping[str, str],
    full_hour: float = CI_SAMPLES_PER_HOUR,
) -> list[Hold]:
    """Each pod's hours on each device (its samples over the ``full_hour`` of samples), placed
    on a node (``resolve_nodes``), with the pod's own power as percent of its GPU's limit."""
    holds: list[Hold] = []
    percent = {(h.gpu.node, h.gpu.gpu, h.hour): h.power_utilization for h in gpu_hours}
    by_device: dict[tuple[str, int], list[tuple[str, str, str, PodOnDevice]]] = defaultdict(list)
    for (namespace, pod, controller, device), named in sorted(pods.items()):
        for hour, samples in sorted(named.get("samples", {}).items()):
            on_device = PodOnDevice(
                pod=f"{namespace}/{pod}",
                share=min(1.0, samples / full_hour),
                watts=named.get("power", {}).get(hour),
            )
            by_device[(device, hour)].append((namespace, pod, controller, on_device))
    for (device, hour), entries in sorted(by_device.items()):
        known = {
            key.pod: node for _, pod, _, key in entries if (node := pod_nodes.get(pod)) is not None
        }
        candidates = node_power.get((device, hour), {})
        nodes = resolve_nodes([e[3] for e in entries], candidates, known)
        for namespace, pod, controller, key in entries:
            node = nodes[key.pod]
            index = gpu_index(device)
            holds.append(
                Hold(
                    gpu=GpuKey(node, index),
                    hour=hour,
                    namespace=namespace,
                    pod=pod,
                    controller=controller,
                    share=key.share,
                    power_utilization=pod_power_percent(
                        key.watts, candidates.get(node), percent.get((node, index, hour))
                    ),
                )
            )
    return holds
