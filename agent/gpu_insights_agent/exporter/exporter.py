"""The GPU node exporter: every interval, one EMF document per GPU; every XID, one at once.

It fills what Container Insights' DCGM metrics lack: power against the enforced limit, SM
activity and occupancy, tensor activity, XID errors, ECC and throttling. One GPU failing never
stops the others; a sink failing never stops collection (see emf.sinks.BufferedSender). The
devices are read through a ``device_source.DeviceSource`` (NVML: ``nvml_source.NvmlSource``).
"""

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from gpu_insights_agent.contract.metrics import (
    CYCLE_METRICS,
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_NODE,
    DIM_SHARD,
    DIM_XID_CODE,
    FAULT_METRICS,
    GPU_METRIC_UNITS,
    NAMESPACE_GPU,
    PROP_CONTAINER,
    PROP_PCI_BUS_ID,
    PROP_POD_UIDS,
    PROP_PODS,
    PROP_PODS_LAST_SEEN_MS,
    PROP_XID_COUNT,
    PROP_XID_SOURCE,
    XID_DIMENSION_SETS,
    GpuMetric,
    alarm_shard,
    emf_dimension_sets,
    exporter_log_group,
    gpu_schema,
)
from gpu_insights_agent.contract.xid import XidSeverity, describe_xid
from gpu_insights_agent.emf.document import EmfDocument, emf_document
from gpu_insights_agent.emf.sinks import Sender
from gpu_insights_agent.exporter.device_source import (
    Device,
    DeviceFault,
    DeviceOpenError,
    DeviceSource,
    EventWatch,
    GpuLostError,
    GpuReading,
    XidEvent,
)
from gpu_insights_agent.exporter.fault_gate import FaultGate
from gpu_insights_agent.exporter.last_pods import LastSeenPods
from gpu_insights_agent.exporter.nvml_faults import GPU_IS_LOST, device_fault
from gpu_insights_agent.exporter.nvml_source import NvmlUnavailableError
from gpu_insights_agent.exporter.pod_attribution import (
    container_name,
    pod_containers,
    pod_names,
)

#: A GPU's pods (UIDs) and the one container holding it, where named.
Holders = tuple[list[str], "str | None"]

log = logging.getLogger(__name__)

DIM_POD_UID = "PodUid"
#: The XID the driver logs for a GPU that has fallen off the bus; used for a lost GPU too.
XID_GPU_LOST = 79
#: The properties that say why a document's gpu_healthy is 0.
UNHEALTHY_REASON = "UnhealthyReason"
UNHEALTHY_DETAIL = "UnhealthyDetail"
LOST_FAULT = device_fault(GPU_IS_LOST)


__all__ = ["Exporter", "ExporterConfig", "NvmlUnavailableError"]


@dataclass(frozen=True, kw_only=True)
class ExporterConfig:
    cluster_name: str
    node_name: str
    interval_s: float = 10.0
    #: A /proc that shows the GPU processes (the host's, with hostPID); None: no attribution.
    proc_root: Path | None = None
    #: The kubelet's pod log directory (the host's /var/log/pods, read-only): names the pods
    #: by namespace and name beside their UIDs. None: UIDs only.
    pod_log_root: Path | None = None
    #: The kubelet's container log symlinks (the host's /var/log/containers, read-only): name
    #: the container of a GPU's processes in a pod of several. None: only a pod with one
    #: container's log folder has its container named.
    container_log_root: Path | None = None
    #: Name the one container holding each GPU (``PROP_CONTAINER``) for the OTLP sink's
    #: ``k8s.container.name``. Off for EMF, which has no container field (the CLI turns it on
    #: with ``--sink otlp``); needs ``proc_root`` and ``pod_log_root``.
    name_containers: bool = False
    #: Add a (ClusterName, PodUid) series for GPUs used by one pod. Off by default: every pod
    #: would be a new custom metric.
    pod_dimension: bool = False
    #: Alarm shards of the deployment (alarms.sizing.shards_for its fleet_gpus setting): the
    #: per-GPU series of the alarm metrics carry the GPU's shard.
    alarm_shards: int = 1
    #: The longest period of the fault gauges' alarms (alarms.catalog.PERIOD_S): a fault
    #: gauge is sent from the start of the period of its hour's first non-zero sample.
    fault_period_s: int = 300


class Exporter:
    def __init__(
        self,
        source: DeviceSource,
        sender: Sender,
        config: ExporterConfig,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._source = source
        self.sender = sender
        self.config = config
        self._clock = clock
        self._lock = threading.Lock()
        self.samplers: dict[int, Device] = {}
        self.lost: set[int] = set()
        #: Why each lost GPU is lost (the error that lost or failed to open it).
        self._lost_fault: dict[int, DeviceFault] = {}
        self.watcher: EventWatch | None = None
        self._log_group = exporter_log_group(config.cluster_name)
        self._faults = FaultGate(config.fault_period_s)
        #: Each GPU's alarm shard: fixed by node, index and shard count, hashed once per GPU.
        self._shards: dict[int, str] = {}
        #: XIDs per (GPU, code) since the exporter started (``PROP_XID_COUNT``).
        self._xid_counts: dict[tuple[int, int], int] = {}
        self._xid_count_lock = threading.Lock()  # the watcher thread and a cycle both count
        #: Each GPU's pods as last read, for an XID on a GPU that cannot be asked (lost).
        self._last_pods = LastSeenPods(config.interval_s)

    def start(self) -> None:
        count = self._source.open()
        for index in range(count):
            try:
                self.samplers[index] = self._source.device(index)
            except DeviceOpenError as err:
                log.error("GPU %d cannot be opened (%s); reported as unhealthy", index, err)
                self.lost.add(index)
                self._lost_fault[index] = err.fault or DeviceFault(
                    reason="DEVICE_OPEN_FAILED", detail=f"the GPU cannot be opened: {err}"
                )
        log.info(
            "exporting %d GPU(s) on %s every %.0f s: %s",
            count,
            self.config.node_name,
            self.config.interval_s,
            ", ".join(f"{i}={s.label}" for i, s in self.samplers.items()),
        )
        self.watcher = self._source.watch(list(self.samplers), self.on_xid, clock=self._clock)

    def _dimensions(self, index: int) -> dict[str, str]:
        return {
            DIM_CLUSTER: self.config.cluster_name,
            DIM_NODE: self.config.node_name,
            DIM_GPU_INDEX: str(index),
        }

    def _holders(self, pids: list[int]) -> Holders:
        """The pods on a GPU (their UIDs, from one read of the PIDs' cgroups) and, where named
        containers are asked for and one pod holds it, its container by name where the
        kubelet's log names say it for sure."""
        config = self.config
        if config.proc_root is None or not pids:
            return [], None
        containers = pod_containers(pids, config.proc_root)
        pods = list(containers)
        if not config.name_containers or len(pods) != 1 or config.pod_log_root is None:
            return pods, None
        return pods, container_name(
            pods[0],
            containers[pods[0]],
            pod_log_root=config.pod_log_root,
            container_log_root=config.container_log_root,
        )

    def _pod_properties(self, uids: list[str]) -> dict[str, object]:
        """The pods' UIDs, and their ``namespace/name`` where the kubelet's log directories
        name them: properties, never dimensions (a pod is not a series)."""
        if not uids:
            return {}
        properties: dict[str, object] = {PROP_POD_UIDS: uids}
        if self.config.pod_log_root is not None:
            names = pod_names(uids, self.config.pod_log_root)
            if names:
                properties[PROP_PODS] = names
        return properties

    def gpu_documents(
        self, index: int, reading: GpuReading, now: float, holders: Holders | None = None
    ) -> list[EmfDocument]:
        """The cycle's document of one GPU, after any held fault samples that its fault gauges
        release (``exporter.fault_gate``): those go out alone, with their own timestamps."""
        faults: dict[float, dict[GpuMetric, float]] = {}
        for metric, value in reading.metrics.items():
            if metric in FAULT_METRICS and math.isfinite(value):
                for t, v in self._faults.offer((index, metric), now, value):
                    faults.setdefault(t, {})[metric] = v
        cycle = {m: v for m, v in reading.metrics.items() if m not in FAULT_METRICS}
        past = [
            self.gpu_document(index, GpuReading(metrics=m), t, faults=m)
            for t, m in sorted(faults.items())
            if t != now
        ]
        current = replace(reading, metrics={**cycle, **faults.get(now, {})})
        current_faults = faults.get(now, {})
        return [
            *past,
            self.gpu_document(index, current, now, faults=current_faults, holders=holders),
        ]

    def gpu_document(
        self,
        index: int,
        reading: GpuReading,
        now: float,
        *,
        faults: dict[GpuMetric, float] | None = None,
        holders: Holders | None = None,
    ) -> EmfDocument:
        """One GPU's EMF document: the cycle metrics per GPU (and per cluster where read),
        the fault gauges given (per GPU), every other reading as a property."""
        dimensions = self._dimensions(index)
        if index not in self._shards:
            self._shards[index] = alarm_shard(
                self.config.node_name, index, self.config.alarm_shards
            )
        dimensions[DIM_SHARD] = self._shards[index]
        properties: dict[str, object] = {
            str(m): v
            for m, v in reading.metrics.items()
            if m not in CYCLE_METRICS and m not in FAULT_METRICS and math.isfinite(v)
        }
        extra_sets: list[tuple[str, ...]] = []
        sampler = self.samplers.get(index)
        if sampler is not None:
            properties["GpuUuid"] = sampler.uuid
            properties["GpuName"] = sampler.name
        if reading.fault is not None:
            # Why gpu_healthy is 0 (the gpu-lost alarm's page points here).
            properties[UNHEALTHY_REASON] = reading.fault.reason
            properties[UNHEALTHY_DETAIL] = reading.fault.detail
        pods, container = holders if holders is not None else self._holders(reading.pids)
        if pods:
            properties.update(self._pod_properties(pods))
            if container is not None:
                properties[PROP_CONTAINER] = container
            if self.config.pod_dimension and len(pods) == 1:
                dimensions[DIM_POD_UID] = pods[0]
                extra_sets.append((DIM_CLUSTER, DIM_POD_UID))
        metrics = {m: v for m, v in reading.metrics.items() if m in CYCLE_METRICS}
        metrics.update(faults or {})
        own: dict[str, list[tuple[str, ...]]] = {}
        for m in metrics:
            pod = extra_sets if m in CYCLE_METRICS else []
            own[str(m)] = [*emf_dimension_sets(m), *pod]
        return emf_document(
            namespace=NAMESPACE_GPU,
            timestamp_ms=int(now * 1000),
            dimension_sets=[gpu_schema(GpuMetric.POWER_UTILIZATION)],
            dimensions=dimensions,
            metrics={str(m): v for m, v in metrics.items()},
            units={str(m): GPU_METRIC_UNITS[m] for m in metrics},
            properties=properties,
            log_group=self._log_group,
            own_dimension_sets=own,
        )

    def xid_document(
        self,
        event: XidEvent,
        pods: list[str],
        *,
        pods_seen_at: float | None = None,
        container: str | None = None,
    ) -> EmfDocument:
        """One XID's document; it counts the XID in its GPU's and code's running count.
        ``pods_seen_at``: the pods were not read at the XID (the GPU could not be asked) but
        remembered from a cycle at that time (``exporter.last_pods``); the document says so.
        ``container``: the pod's container on the GPU, read at the XID (``PROP_CONTAINER``)."""
        row = describe_xid(event.code)
        fatal = row.severity is XidSeverity.FATAL
        metrics = {str(GpuMetric.XID_ERRORS): 1.0, str(GpuMetric.XID_FATAL_ERRORS): float(fatal)}
        key = (event.gpu_index, event.code)
        with self._xid_count_lock:
            count = self._xid_counts[key] = self._xid_counts.get(key, 0) + 1
        properties: dict[str, object] = {
            PROP_XID_COUNT: count,
            "XidDescription": row.meaning,
            "XidSeverity": str(row.severity),
            PROP_XID_SOURCE: event.source,
            "EventTime": datetime.fromtimestamp(event.time, UTC).isoformat(),
        }
        sampler = self.samplers.get(event.gpu_index)
        if sampler is not None:
            properties["GpuUuid"] = sampler.uuid
            if sampler.pci_bus_id:
                properties[PROP_PCI_BUS_ID] = sampler.pci_bus_id
        properties.update(self._pod_properties(pods))
        if pods and pods_seen_at is not None:
            properties[PROP_PODS_LAST_SEEN_MS] = int(pods_seen_at * 1000)
        if pods and container is not None:
            properties[PROP_CONTAINER] = container
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
        sampler = self.samplers.get(event.gpu_index)
        if sampler is not None and event.gpu_index not in self.lost:
            try:
                pids = sampler.sample_pids()
            except GpuLostError:
                pass
            else:
                pods, container = self._holders(pids)
                self._emit([self.xid_document(event, pods, container=container)])
                return
        # The GPU cannot be asked (it has fallen off the bus): the pods it last had, if recent.
        seen = self._last_pods.recall(event.gpu_index, self._clock())
        if seen is None:
            self._emit([self.xid_document(event, [])])
        else:
            self._emit([self.xid_document(event, list(seen.uids), pods_seen_at=seen.at)])

    def collect_once(self) -> list[EmfDocument]:
        now = self._clock()
        documents: list[EmfDocument] = []
        for index in sorted(set(self.samplers) | self.lost):
            sampler = self.samplers.get(index)
            if sampler is not None and index not in self.lost:
                try:
                    reading = sampler.sample()
                    holders = self._holders(reading.pids)
                    if reading.pids_read:
                        self._last_pods.observe(index, holders[0], now)
                    documents += self.gpu_documents(index, reading, now, holders)
                    continue
                except GpuLostError as err:
                    log.error("%s; the other GPUs go on", err)
                    self.lost.add(index)
                    self._lost_fault[index] = LOST_FAULT
                    self.on_xid(
                        XidEvent(gpu_index=index, code=XID_GPU_LOST, time=now, source="lost")
                    )
            unhealthy = GpuReading(
                metrics={GpuMetric.HEALTHY: 0.0}, fault=self._lost_fault.get(index, LOST_FAULT)
            )
            documents += self.gpu_documents(index, unhealthy, now)
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
        """Stop the watcher, flush what is buffered, release the devices. True if nothing was
        left."""
        if self.watcher is not None:
            self.watcher.stop()
        with self._lock:
            flushed = self.sender.flush(force=True)
        for sampler in self.samplers.values():
            sampler.close()
        self._source.close()
        if not flushed:
            log.error("%d documents could not be delivered before exit", len(self.sender))
        return flushed
