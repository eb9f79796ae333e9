"""Reads each pod's GPU memory in OTel Container Insights mode: DCGM's framebuffer used
(``DCGM_FI_DEV_FB_USED``, its hourly maximum) and size (``DCGM_FI_DEV_FB_TOTAL``, its maximum
over the window), in MiB, read with PromQL per node, by the pod, namespace, owner and GPU labels
the add-on's pipeline sets on a held GPU's series (gpu_hours.otel). The same ``GpuMemory`` as
the Classic reader (aws.read_gpu_memory) gives, in bytes, named by the same job rule; where
Classic knows a device's model from its node's instance type, these series name it themselves
(dcgm-exporter's ``modelName``, NVML's name)."""

from collections import defaultdict
from collections.abc import Mapping

from lambdas.shared.dcgm import CLOUDWATCH, DCGM_FB_TOTAL, DCGM_FB_USED, MIB, DcgmLabels
from lambdas.shared.exporter_promql import hourly, read_hours
from lambdas.shared.promql import PromQLClient, Series
from lambdas.training_analyzer.gpu_hours.otel import OtelQueries, pod_key
from lambdas.training_analyzer.gpu_hours.workloads import job_of
from lambdas.training_analyzer.gpu_memory.analysis import GpuMemory


class MemoryQueries(OtelQueries):
    """The hourly maximum of a DCGM memory field on each GPU a pod held, by pod and device."""

    def _keys(self) -> tuple[str, ...]:
        return (*self.pod_keys(), self.labels.device, self.labels.model)

    def _max(self, metric: str, node: str) -> str:
        selector = self.select(metric, node, pods=True)
        return f"max {self.by(*self._keys())} (max_over_time({selector}))"

    def used(self, node: str) -> str:
        return self._max(DCGM_FB_USED, node)

    def total(self, node: str) -> str:
        return self._max(DCGM_FB_TOTAL, node)


def read_gpu_memory_otel(
    promql: PromQLClient,
    cluster: str,
    *,
    start: float,
    end: float,
    exact_jobs: Mapping[str, str] | None = None,
    labels: DcgmLabels = CLOUDWATCH,
) -> list[GpuMemory]:
    """Every pod's memory on every GPU it held in [start, end) (whole hours). A query the API
    refuses or truncates raises ``PromQLError`` (the caller skips the analysis rather than
    judge a job on part of its GPUs)."""
    queries = MemoryQueries(cluster, labels)
    nodes = sorted(
        {s.labels.get(labels.node, "") for s in read_hours(promql, queries.nodes(), start, end)}
        - {""}
    )
    peaks: dict[tuple[str, ...], list[float]] = defaultdict(list)
    capacity: dict[tuple[str, ...], float] = {}
    names: dict[tuple[str, ...], str] = {}
    for node in nodes:
        for s in read_hours(promql, queries.used(node), start, end):
            key = _device_key(s, labels, node)
            peaks[key] += [mib * MIB for _, mib in sorted(hourly(s).items())]
            names[key] = s.labels.get(labels.model, "")
        for s in read_hours(promql, queries.total(node), start, end):
            key = _device_key(s, labels, node)
            most = max(hourly(s).values(), default=0.0) * MIB
            capacity[key] = max(capacity.get(key, 0.0), most)
    return [
        GpuMemory(
            namespace=namespace,
            job=job_of(pod, exact_jobs or {}, controller).job,
            pod=pod,
            device=device,
            hourly_peaks=tuple(values),
            capacity_bytes=capacity.get(key, 0.0),
            gpu_name=names.get(key) or None,
        )
        for key, values in sorted(peaks.items())
        for namespace, pod, controller, device, _node in [key]
    ]


def _device_key(series: Series, labels: DcgmLabels, node: str) -> tuple[str, str, str, str, str]:
    """(namespace, pod, controller, device, node) of a pod's series: the Classic reader's key
    and the node, so a pod name rescheduled to another node (a StatefulSet's or PyTorchJob's
    ``-worker-0``) is two GPUs, each with its own capacity and model."""
    namespace, pod, gpu, controller = pod_key(series.labels, labels)
    return namespace, pod, controller, series.labels.get(labels.device) or f"nvidia{gpu}", node
