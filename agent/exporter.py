"""The GPU node exporter: every interval, one EMF document per GPU; every XID, one at once.

It fills what Container Insights' DCGM metrics lack: power against the enforced limit, SM
activity and occupancy, tensor activity, XID errors, ECC and throttling. One GPU failing never
stops the others; a sink failing never stops collection (see agent.sinks.BufferedSender).
"""

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.emf import EmfDocument, emf_document
from agent.gpu_sampler import GpuLostError, GpuReading, GpuSampler
from agent.metric_contract import (
    ALARM_DIMENSION_SETS,
    ALARM_METRICS,
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_NODE,
    DIM_SHARD,
    DIM_XID_CODE,
    GPU_DIMENSION_SETS,
    GPU_METRIC_UNITS,
    NAMESPACE_GPU,
    XID_DIMENSION_SETS,
    GpuMetric,
    alarm_shard,
    exporter_log_group,
)
from agent.pod_attribution import pod_uids
from agent.sinks import BufferedSender
from agent.xid import XidSeverity, describe_xid
from agent.xid_watcher import XidEvent, XidWatcher

log = logging.getLogger(__name__)

DIM_POD_UID = "PodUid"
#: The XID the driver logs for a GPU that has fallen off the bus; used for a lost GPU too.
XID_GPU_LOST = 79


class NvmlUnavailableError(Exception):
    """No NVIDIA driver or no NVML on this node: nothing to export."""


@dataclass(frozen=True, kw_only=True)
class ExporterConfig:
    cluster_name: str
    node_name: str
    interval_s: float = 10.0
    #: A /proc that shows the GPU processes (the host's, with hostPID); None: no attribution.
    proc_root: Path | None = None
    #: Add a (ClusterName, PodUid) series for GPUs used by one pod. Off by default: every pod
    #: would be a new custom metric.
    pod_dimension: bool = False
    #: Alarm shards of the deployment (alarms.sizing.shards_for its fleet_gpus setting): the
    #: per-GPU series of the alarm metrics carry the GPU's shard.
    alarm_shards: int = 1


class Exporter:
    def __init__(
        self,
        nvml: Any,
        sender: BufferedSender,
        config: ExporterConfig,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._nvml = nvml
        self.sender = sender
        self.config = config
        self._clock = clock
        self._lock = threading.Lock()
        self.samplers: dict[int, GpuSampler] = {}
        self.lost: set[int] = set()
        self.watcher: XidWatcher | None = None
        self._log_group = exporter_log_group(config.cluster_name)

    def start(self) -> None:
        nvml = self._nvml
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as err:
            raise NvmlUnavailableError(
                f"NVML is not available on this node ({err}): is the NVIDIA driver installed "
                "and is the container started with the NVIDIA runtime?"
            ) from err
        count = int(nvml.nvmlDeviceGetCount())
        for index in range(count):
            try:
                self.samplers[index] = GpuSampler(nvml, index)
            except nvml.NVMLError as err:
                log.error("GPU %d cannot be opened (%s); reported as unhealthy", index, err)
                self.lost.add(index)
        log.info(
            "exporting %d GPU(s) on %s every %.0f s: %s",
            count,
            self.config.node_name,
            self.config.interval_s,
            ", ".join(
                f"{i}={s.name}{'' if s.gpm_supported else ' (no GPM)'}"
                for i, s in self.samplers.items()
            ),
        )
        self.watcher = XidWatcher(
            nvml, {i: s.handle for i, s in self.samplers.items()}, self.on_xid, clock=self._clock
        )

    def _dimensions(self, index: int) -> dict[str, str]:
        return {
            DIM_CLUSTER: self.config.cluster_name,
            DIM_NODE: self.config.node_name,
            DIM_GPU_INDEX: str(index),
        }

    def _pods(self, pids: list[int]) -> list[str]:
        if self.config.proc_root is None or not pids:
            return []
        return pod_uids(pids, self.config.proc_root)

    def gpu_document(self, index: int, reading: GpuReading, now: float) -> EmfDocument:
        dimensions = self._dimensions(index)
        dimensions[DIM_SHARD] = alarm_shard(self.config.node_name, index, self.config.alarm_shards)
        dimension_sets: list[tuple[str, ...]] = list(GPU_DIMENSION_SETS)
        properties: dict[str, object] = {}
        sampler = self.samplers.get(index)
        if sampler is not None:
            properties["GpuUuid"] = sampler.uuid
            properties["GpuName"] = sampler.name
        pods = self._pods(reading.pids)
        if pods:
            properties["PodUids"] = pods
            if self.config.pod_dimension and len(pods) == 1:
                dimensions[DIM_POD_UID] = pods[0]
                dimension_sets.append((DIM_CLUSTER, DIM_POD_UID))
        return emf_document(
            namespace=NAMESPACE_GPU,
            timestamp_ms=int(now * 1000),
            dimension_sets=dimension_sets,
            dimensions=dimensions,
            metrics={str(m): v for m, v in reading.metrics.items()},
            units={str(m): GPU_METRIC_UNITS[m] for m in reading.metrics},
            properties=properties,
            log_group=self._log_group,
            own_dimension_sets={
                str(m): [*ALARM_DIMENSION_SETS, *dimension_sets[len(GPU_DIMENSION_SETS) :]]
                for m in reading.metrics
                if m in ALARM_METRICS
            },
        )

    def xid_document(self, event: XidEvent, pods: list[str]) -> EmfDocument:
        row = describe_xid(event.code)
        fatal = row.severity is XidSeverity.FATAL
        metrics = {str(GpuMetric.XID_ERRORS): 1.0, str(GpuMetric.XID_FATAL_ERRORS): float(fatal)}
        properties: dict[str, object] = {
            "XidDescription": row.meaning,
            "XidSeverity": str(row.severity),
            "XidSource": event.source,
            "EventTime": datetime.fromtimestamp(event.time, UTC).isoformat(),
        }
        sampler = self.samplers.get(event.gpu_index)
        if sampler is not None:
            properties["GpuUuid"] = sampler.uuid
        if pods:
            properties["PodUids"] = pods
        return emf_document(
            namespace=NAMESPACE_GPU,
            timestamp_ms=int(event.time * 1000),
            dimension_sets=XID_DIMENSION_SETS,
            dimensions={**self._dimensions(event.gpu_index), DIM_XID_CODE: str(event.code)},
            metrics=metrics,
            units=dict.fromkeys(metrics, "Count"),
            properties=properties,
            log_group=self._log_group,
        )

    def on_xid(self, event: XidEvent) -> None:
        """Called by the watcher thread: the XID goes out now, not at the next cycle."""
        row = describe_xid(event.code)
        log.warning(
            "XID %d on GPU %d (%s): %s", event.code, event.gpu_index, row.severity, row.meaning
        )
        pods: list[str] = []
        sampler = self.samplers.get(event.gpu_index)
        if sampler is not None and event.gpu_index not in self.lost:
            try:
                pods = self._pods(sampler.sample_pids())
            except GpuLostError:
                pods = []
        self._emit([self.xid_document(event, pods)])

    def collect_once(self) -> list[EmfDocument]:
        now = self._clock()
        documents: list[EmfDocument] = []
        for index in sorted(set(self.samplers) | self.lost):
            sampler = self.samplers.get(index)
            if sampler is not None and index not in self.lost:
                try:
                    documents.append(self.gpu_document(index, sampler.sample(), now))
                    continue
                except GpuLostError as err:
                    log.error("%s; the other GPUs go on", err)
                    self.lost.add(index)
                    self.on_xid(
                        XidEvent(gpu_index=index, code=XID_GPU_LOST, time=now, source="lost")
                    )
            unhealthy = GpuReading(metrics={GpuMetric.HEALTHY: 0.0})
            documents.append(self.gpu_document(index, unhealthy, now))
        self._emit(documents)
        return documents

    def _emit(self, documents: list[EmfDocument]) -> None:
        with self._lock:
            self.sender.submit(documents)
            self.sender.flush()

    def run(self, stop: threading.Event) -> None:
        """Collect every interval until stop is set; XIDs go out from the watcher meanwhile."""
        if self.watcher is not None:
            self.watcher.start()
        while not stop.is_set():
            started = time.monotonic()
            self.collect_once()
            stop.wait(max(0.0, self.config.interval_s - (time.monotonic() - started)))

    def shutdown(self) -> bool:
        """Stop the watcher, flush what is buffered, release NVML. True if nothing was left."""
        if self.watcher is not None:
            self.watcher.stop()
        with self._lock:
            flushed = self.sender.flush(force=True)
        for sampler in self.samplers.values():
            sampler.close()
        with contextlib.suppress(self._nvml.NVMLError):
            self._nvml.nvmlShutdown()
        if not flushed:
            log.error("%d documents could not be delivered before exit", len(self.sender))
        return flushed
