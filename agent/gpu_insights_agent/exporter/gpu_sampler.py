"""One GPU's readings per collection cycle, from NVML (pynvml or the trace-replaying fake).

Readings NVML cannot give on this GPU (NOT_SUPPORTED) are left out and said once in the log;
a lost GPU raises GpuLostError so the exporter can report it and carry on with the others; any
other failing code is classed by ``nvml_faults``, and a fault that persists for its
``FAULT_CYCLES`` reads ``gpu_healthy`` 0 with the code as the reason.
SM activity, SM occupancy and tensor activity come from GPM (Hopper and newer), computed
between this cycle's sample and the last one; two GPM buffers are allocated once per GPU and
reused, so memory stays flat.
"""

import contextlib
import logging
from typing import Any

from gpu_insights_agent.contract.metrics import GpuMetric
from gpu_insights_agent.exporter.device_source import GpuLostError, GpuReading
from gpu_insights_agent.exporter.nvml_faults import (
    FaultRun,
    cycle_fault,
    describe_code,
    device_fault,
    is_fault,
)

log = logging.getLogger(__name__)

#: Every pynvml function the exporter calls; the fake must match pynvml for each of them.
NVML_FUNCTIONS_USED = (
    "nvmlInit",
    "nvmlShutdown",
    "nvmlSystemGetDriverVersion",
    "nvmlDeviceGetCount",
    "nvmlDeviceGetHandleByIndex",
    "nvmlDeviceGetIndex",
    "nvmlDeviceGetName",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetTemperature",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetPcieReplayCounter",
    "nvmlDeviceGetNvLinkState",
    "nvmlDeviceGetNvLinkErrorCounter",
    "nvmlDeviceGetTotalEccErrors",
    "nvmlDeviceGetRemappedRows",
    "nvmlDeviceGetComputeRunningProcesses",
    "nvmlGpmQueryDeviceSupport",
    "nvmlGpmSampleAlloc",
    "nvmlGpmSampleFree",
    "nvmlGpmSampleGet",
    "nvmlGpmMetricsGet",
    "nvmlEventSetCreate",
    "nvmlDeviceRegisterEvents",
    "nvmlEventSetWait_v2",
    "nvmlEventSetFree",
)


#: The NVLink error counters summed into ``gpu_nvlink_errors``, by pynvml's constant name
#: (``nvmlNvLinkErrorCounter_t``: "Data link transmit replay error counter", "Data link transmit
#: recovery error counter", "Data link receive flow control digit CRC error counter", "Data link
#: receive data CRC error counter", NVML API Reference, NvLink enums; pynvml's
#: ``NVML_NVLINK_ERROR_DL_*``). Each one is a retransmission or a retraining of the link: the
#: collectives over it slow down before anything fails.
NVLINK_ERROR_COUNTERS = (
    "NVML_NVLINK_ERROR_DL_REPLAY",
    "NVML_NVLINK_ERROR_DL_RECOVERY",
    "NVML_NVLINK_ERROR_DL_CRC_FLIT",
    "NVML_NVLINK_ERROR_DL_CRC_DATA",
)


#: Memory a CUDA context and a model hold; an idle GPU with no context uses a few MiB. Used
#: with the process list because NVML hides other PID namespaces' processes from a container.
IN_USE_MEMORY_BYTES = 2**30


__all__ = ["GpuLostError", "GpuReading", "GpuSampler"]


class GpuSampler:
    """One NVIDIA GPU as a ``device_source.Device``."""

    def __init__(self, nvml: Any, index: int) -> None:
        self._nvml = nvml
        self.index = index
        self.handle = nvml.nvmlDeviceGetHandleByIndex(index)
        self.name = str(nvml.nvmlDeviceGetName(self.handle))
        self.uuid = str(nvml.nvmlDeviceGetUUID(self.handle))
        self.pci_bus_id = self._read_pci_bus_id()
        self._unsupported: set[str] = set()
        #: Each counter's last total (ECC, PCIe replays, each NVLink link and counter), for
        #: what is new.
        self._totals: dict[object, int] = {}
        self._gpm_request: Any = None
        self._gpm_samples: list[Any] = []
        self._gpm_primed = False
        #: This cycle's fault codes (call order) and answered calls; each failing reading's
        #: last code, so that a fault that persists is logged once, not every cycle.
        self._failed: list[int] = []
        self._answered = 0
        self._failing: dict[str, int] = {}
        self._fault_run = FaultRun()
        self.gpm_supported = self._init_gpm()
        self.nvlinks = self._active_nvlinks()

    def _read_pci_bus_id(self) -> str | None:
        """NVML's ``busId`` (``nvmlPciInfo_t``, "the tuple domain:bus:device.function PCI
        identifier", NVML API reference): the same GPU the kernel's ``NVRM: Xid (PCI:...)``
        line names. None where NVML cannot say."""
        try:
            bus_id = self._nvml.nvmlDeviceGetPciInfo(self.handle).busId
        except self._nvml.NVMLError:
            return None
        return bus_id.decode("ascii", "replace") if isinstance(bus_id, bytes) else str(bus_id)

    def _active_nvlinks(self) -> tuple[int, ...]:
        """The GPU's NVLink links that are up (``nvmlDeviceGetNvLinkState`` says
        ``NVML_FEATURE_ENABLED``), read once: none on a GPU without NVLink (NOT_SUPPORTED), which
        then publishes no NVLink series. A link number past the GPU's links is refused
        (INVALID_ARGUMENT), so every number up to ``NVML_NVLINK_MAX_LINKS`` is asked."""
        nvml = self._nvml
        links = []
        for link in range(int(nvml.NVML_NVLINK_MAX_LINKS)):
            try:
                state = nvml.nvmlDeviceGetNvLinkState(self.handle, link)
            except nvml.NVMLError:
                continue
            if state == nvml.NVML_FEATURE_ENABLED:
                links.append(link)
        if not links:
            log.info(
                "GPU %d (%s) has no active NVLink: gpu_nvlink_errors is not published",
                self.index,
                self.name,
            )
        return tuple(links)

    @property
    def label(self) -> str:
        return f"{self.name}{'' if self.gpm_supported else ' (no GPM)'}"

    def _init_gpm(self) -> bool:
        nvml = self._nvml
        try:
            supported = bool(nvml.nvmlGpmQueryDeviceSupport(self.handle).isSupportedDevice)
        except nvml.NVMLError:
            supported = False
        if not supported:
            log.info(
                "GPU %d (%s) has no GPM support: gpu_sm_active, gpu_sm_occupancy and "
                "gpu_tensor_active are not published for it",
                self.index,
                self.name,
            )
            return False
        self._gpm_samples = [nvml.nvmlGpmSampleAlloc(), nvml.nvmlGpmSampleAlloc()]
        request = nvml.c_nvmlGpmMetricsGet_t()
        request.version = nvml.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = 3
        request.metrics[0].metricId = nvml.NVML_GPM_METRIC_SM_UTIL
        request.metrics[1].metricId = nvml.NVML_GPM_METRIC_SM_OCCUPANCY
        request.metrics[2].metricId = nvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL
        self._gpm_request = request
        return True

    def close(self) -> None:
        for sample in self._gpm_samples:
            with contextlib.suppress(self._nvml.NVMLError):
                self._nvml.nvmlGpmSampleFree(sample)
        self._gpm_samples = []

    def _call(self, what: str, function: str, *args: Any) -> Any:
        """One NVML call; None when unsupported (logged once) or failed (counted for the
        cycle's fault, logged when its code changes)."""
        nvml = self._nvml
        try:
            value = getattr(nvml, function)(self.handle, *args)
        except nvml.NVMLError as err:
            self._failed_call(what, err)
            return None
        self._answered += 1
        self._failing.pop(what, None)
        return value

    def _failed_call(self, what: str, err: Any) -> None:
        code = int(err.value)
        if code == self._nvml.NVML_ERROR_GPU_IS_LOST:
            raise GpuLostError(f"GPU {self.index} ({self.uuid}) is lost") from err
        if not is_fault(code):
            if what not in self._unsupported:
                self._unsupported.add(what)
                log.info("GPU %d does not support %s; left out", self.index, what)
            return
        self._failed.append(code)
        if self._failing.get(what) != code:
            self._failing[what] = code
            row = describe_code(code)
            log.warning("GPU %d: %s failed: %s (%s)", self.index, what, err, row.fault_class)

    def sample(self) -> GpuReading:
        self._failed, self._answered = [], 0
        reading = self._sample()
        code = self._fault_run.observe(cycle_fault(self._failed, self._answered))
        if code is not None:
            row = describe_code(code)
            if self._fault_run.count == self._fault_run.cycles:
                log.error(
                    "GPU %d (%s) is unhealthy: %s (%s) for %d cycles: %s",
                    self.index,
                    self.uuid,
                    row.name,
                    row.fault_class,
                    self._fault_run.count,
                    row.meaning,
                )
            reading.metrics[GpuMetric.HEALTHY] = 0.0
            reading.fault = device_fault(code)
        return reading

    def _sample(self) -> GpuReading:
        nvml = self._nvml
        metrics: dict[GpuMetric, float] = {GpuMetric.HEALTHY: 1.0}
        draw_mw = self._call("power draw", "nvmlDeviceGetPowerUsage")
        limit_mw = self._call("power limit", "nvmlDeviceGetEnforcedPowerLimit")
        if draw_mw is not None:
            metrics[GpuMetric.POWER_DRAW] = draw_mw / 1000
        if limit_mw:
            metrics[GpuMetric.POWER_LIMIT] = limit_mw / 1000
            if draw_mw is not None:
                metrics[GpuMetric.POWER_UTILIZATION] = 100 * draw_mw / limit_mw
        rates = self._call("utilization", "nvmlDeviceGetUtilizationRates")
        if rates is not None:
            metrics[GpuMetric.UTILIZATION] = float(rates.gpu)
        memory = self._call("memory", "nvmlDeviceGetMemoryInfo")
        if memory is not None:
            metrics[GpuMetric.MEMORY_USED] = float(memory.used)
        temperature = self._call(
            "temperature", "nvmlDeviceGetTemperature", nvml.NVML_TEMPERATURE_GPU
        )
        if temperature is not None:
            metrics[GpuMetric.TEMPERATURE] = float(temperature)
        reasons = self._call("throttle reasons", "nvmlDeviceGetCurrentClocksEventReasons")
        if reasons is not None:
            # Only the hardware power brake: capping at the power limit (SW power cap) is how a
            # busy GPU normally runs, and would make the metric useless as a fault signal.
            power = nvml.nvmlClocksEventReasonHwPowerBrakeSlowdown
            thermal = (
                nvml.nvmlClocksEventReasonSwThermalSlowdown
                | nvml.nvmlClocksEventReasonHwThermalSlowdown
            )
            metrics[GpuMetric.THROTTLED_POWER] = float(bool(reasons & power))
            metrics[GpuMetric.THROTTLED_THERMAL] = float(bool(reasons & thermal))
            # "HW Slowdown (reducing the core clocks by a factor of 2 or more) is engaged":
            # heat, an external power brake, or fast-trigger protection (NVML API Reference,
            # nvmlClocksEventReasons; DCGM_CLOCKS_THROTTLE_REASON_HW_SLOWDOWN lists the three).
            slowdown = nvml.nvmlClocksEventReasonHwSlowdown
            metrics[GpuMetric.THROTTLED_HW_SLOWDOWN] = float(bool(reasons & slowdown))
        # nvmlDeviceGetClockInfo(device, NVML_CLOCK_SM): "the current clock speeds for the
        # device", in MHz (NVML API Reference, Device Queries; pynvml NVML_CLOCK_SM = 1).
        sm_clock = self._call("SM clock", "nvmlDeviceGetClockInfo", nvml.NVML_CLOCK_SM)
        if sm_clock is not None:
            metrics[GpuMetric.SM_CLOCK] = float(sm_clock)
        self._sample_ecc(metrics)
        self._sample_links(metrics)
        if self.gpm_supported:
            self._sample_gpm(metrics)
        read = self._read_pids()
        pids = read or []
        in_use = bool(pids) or metrics.get(GpuMetric.MEMORY_USED, 0.0) >= IN_USE_MEMORY_BYTES
        if in_use and GpuMetric.POWER_UTILIZATION in metrics:
            metrics[GpuMetric.ALLOCATED_POWER_UTILIZATION] = metrics[GpuMetric.POWER_UTILIZATION]
        return GpuReading(metrics=metrics, pids=pids, pids_read=read is not None)

    def _read_pids(self) -> list[int] | None:
        """Host PIDs of the compute processes on this GPU; None where NVML did not say."""
        processes = self._call("processes", "nvmlDeviceGetComputeRunningProcesses")
        return None if processes is None else [int(process.pid) for process in processes]

    def sample_pids(self) -> list[int]:
        """Host PIDs of the compute processes on this GPU (none where NVML did not say)."""
        return self._read_pids() or []

    def _sample_ecc(self, metrics: dict[GpuMetric, float]) -> None:
        nvml = self._nvml
        total = self._call(
            "ECC counters",
            "nvmlDeviceGetTotalEccErrors",
            nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
            nvml.NVML_VOLATILE_ECC,
        )
        ecc = self._new_since(GpuMetric.ECC_UNCORRECTED, total)
        if ecc is not None:
            metrics[GpuMetric.ECC_UNCORRECTED] = float(ecc)
        remapped = self._call("row remapping", "nvmlDeviceGetRemappedRows")
        if remapped is not None:
            metrics[GpuMetric.ROW_REMAP_PENDING] = float(bool(remapped[2]))

    def _new_since(self, key: object, total: Any) -> int | None:
        """A counter's new counts this cycle (0 the first cycle), None where it was not read.
        The counters run since the driver loaded (or the link trained); one that went down was
        reset, so everything it holds is new."""
        if total is None:
            return None
        previous = self._totals.get(key)
        self._totals[key] = int(total)
        if previous is None:
            return 0
        return int(total) - previous if total >= previous else int(total)

    def _sample_links(self, metrics: dict[GpuMetric, float]) -> None:
        """PCIe replays and NVLink errors: a link that retries slows every collective over it.
        ``nvmlDeviceGetPcieReplayCounter``: "Retrieve the PCIe replay counter" (Kepler or newer,
        NVML API Reference); ``nvmlDeviceGetNvLinkErrorCounter(device, link, counter)``: one
        link's error counter (Pascal or newer), each link and counter of
        ``NVLINK_ERROR_COUNTERS`` counted on its own and the new counts summed. A GPU that
        supports neither publishes neither: never a 0 it did not read."""
        nvml = self._nvml
        replays = self._new_since(
            GpuMetric.PCIE_REPLAYS,
            self._call("PCIe replay counter", "nvmlDeviceGetPcieReplayCounter"),
        )
        if replays is not None:
            metrics[GpuMetric.PCIE_REPLAYS] = float(replays)
        new = [
            self._new_since(
                (link, counter),
                self._call(
                    "NVLink error counters",
                    "nvmlDeviceGetNvLinkErrorCounter",
                    link,
                    getattr(nvml, counter),
                ),
            )
            for link in self.nvlinks
            for counter in NVLINK_ERROR_COUNTERS
        ]
        read = [n for n in new if n is not None]
        if read:
            metrics[GpuMetric.NVLINK_ERRORS] = float(sum(read))

    def _sample_gpm(self, metrics: dict[GpuMetric, float]) -> None:
        nvml = self._nvml
        earlier, later = self._gpm_samples
        if self._call("GPM sample", "nvmlGpmSampleGet", later) is None:
            self._gpm_primed = False
            return
        if self._gpm_primed:
            request = self._gpm_request
            request.sample1, request.sample2 = earlier, later
            try:
                nvml.nvmlGpmMetricsGet(request)
            except nvml.NVMLError as err:
                self._failed_call("GPM metrics", err)
            else:
                self._answered += 1
                for slot, metric in enumerate(
                    (GpuMetric.SM_ACTIVE, GpuMetric.SM_OCCUPANCY, GpuMetric.TENSOR_ACTIVE)
                ):
                    result = request.metrics[slot]
                    if result.nvmlReturn == nvml.NVML_SUCCESS:
                        metrics[metric] = float(result.value)
        # This cycle's sample is the next cycle's earlier one.
        self._gpm_samples = [later, earlier]
        self._gpm_primed = True
