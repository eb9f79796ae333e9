"""A stand-in for pynvml that replays a recorded trace, for tests and the demo.

It offers the same function names and signatures as pynvml for everything the exporter calls
(a test compares them with the installed pynvml), raises pynvml's own NVMLError subclasses,
and exposes pynvml's constants, so the exporter cannot tell it from the real library.

Trace format: JSON lines, ``t`` in seconds from the start of the trace.

    {"kind": "gpu", "index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-...",
     "pci_bus_id": "00000000:53:00.0", "power_limit_w": 700, "gpm": true, "ecc": true,
     "sm_clock_mhz": 1980, "nvlinks": 18}
    {"kind": "sample", "t": 0, "index": 0, "power_w": 612.5, "utilization": 97,
     "memory_used_bytes": 60000000000, "temperature_c": 71, "throttle": ["power"],
     "ecc_uncorrected_total": 0, "remap_pending": false, "sm_active": 88.0,
     "sm_occupancy": 41.0, "tensor_active": 63.0, "pids": [4242], "sm_clock_mhz": 1755,
     "pcie_replay_total": 0, "nvlink_errors_total": {"3": {"crc_flit": 12, "replay": 2}}}

The fail-slow evidence has defaults, so a trace that predates it replays unchanged: the SM
clock is the GPU record's ``sm_clock_mhz`` (an H100 SXM5's boost clock, 1,980 MHz: "1.98 GHz
(high precision)", https://glennklockwood.com/garden/processors/h100, from NVIDIA's H100
specifications) until a sample sets one; the PCIe replay counter is 0; a GPU has ``nvlinks``
active NVLink links (0 by default: NVML answers NOT_SUPPORTED for its link state and counters,
as on a PCIe card), whose counters are 0 until ``nvlink_errors_total`` (link -> counter ->
total) says.
    {"kind": "xid", "t": 125.0, "index": 1, "code": 79}
    {"kind": "lost", "t": 300.0, "index": 1}
    {"kind": "fault", "t": 400.0, "index": 0, "code": 16}

A fault makes every call on that GPU fail with the NVML code given (pynvml's NVMLError of that
value) from its time on, until a later fault of code 0. A sample sets the fields it names and
keeps the others. Malformed lines are skipped and counted in ``malformed_lines``, never raised.
"""

import json
import logging
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pynvml

log = logging.getLogger(__name__)

NVMLError = pynvml.NVMLError

#: Throttle reason names of the trace format, by pynvml's constant name.
THROTTLE_NAMES = {
    "power": "nvmlClocksEventReasonSwPowerCap",
    "power_brake": "nvmlClocksEventReasonHwPowerBrakeSlowdown",
    "thermal": "nvmlClocksEventReasonSwThermalSlowdown",
    "hw_thermal": "nvmlClocksEventReasonHwThermalSlowdown",
    "hw_slowdown": "nvmlClocksEventReasonHwSlowdown",
}
_THROTTLE_BITS = {name: getattr(pynvml, constant) for name, constant in THROTTLE_NAMES.items()}
#: The trace's NVLink counter names, by pynvml's ``nvmlNvLinkErrorCounter_t`` value.
NVLINK_COUNTER_NAMES = {
    pynvml.NVML_NVLINK_ERROR_DL_REPLAY: "replay",
    pynvml.NVML_NVLINK_ERROR_DL_RECOVERY: "recovery",
    pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT: "crc_flit",
    pynvml.NVML_NVLINK_ERROR_DL_CRC_DATA: "crc_data",
}
#: An H100 SXM5's boost clock, MHz (see the module's docstring).
DEFAULT_SM_CLOCK_MHZ = 1980.0


class TraceError(ValueError):
    """A trace record that cannot be replayed."""


def _check_sample_value(name: str, value: object) -> None:
    """A sample's ``throttle`` is a list of reason names; every other scalar a finite number
    of 0 or more (or a flag): NVML's readings are unsigned (``nvmlDeviceGetPowerUsage``'s
    milliwatts, utilization and temperature are ``unsigned int``s in nvml.h).
    Checked when the trace loads, so a bad value is a skipped line, not a crash mid-run."""
    if name == "throttle":
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise TraceError(f"throttle {value!r} is not a list of names")
    elif name == "pids":
        if not (isinstance(value, list) and all(isinstance(v, int) for v in value)):
            raise TraceError(f"pids {value!r} is not a list of process ids")
    elif name == "nvlink_errors_total":
        if not isinstance(value, dict):
            raise TraceError(f"nvlink_errors_total {value!r} is not link -> counter -> total")
        for link, counters in value.items():
            if not (str(link).isdigit() and isinstance(counters, dict)):
                raise TraceError(f"nvlink_errors_total link {link!r} is not a link number")
            for counter, total in counters.items():
                if counter not in NVLINK_COUNTER_NAMES.values():
                    raise TraceError(f"unknown NVLink counter {counter!r}")
                _check_sample_value(f"{counter} errors", total)
    elif not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise TraceError(f"{name} {value!r} is not a finite number of 0 or more")


@dataclass(frozen=True)
class _PciInfo:
    busId: bytes


@dataclass
class _Gpu:
    index: int
    name: str
    uuid: str
    pci_bus_id: str
    power_limit_mw: int
    memory_total_bytes: int
    gpm: bool
    ecc: bool
    sm_clock_mhz: float = DEFAULT_SM_CLOCK_MHZ
    nvlinks: int = 0
    samples: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    lost_at: float = float("inf")
    #: (time, code): every call from that time fails with the code; 0 ends it.
    faults: list[tuple[float, int]] = field(default_factory=list)
    # Replay position: samples[:cursor] are applied to state, as of time state_at.
    cursor: int = 0
    state: dict[str, Any] = field(default_factory=dict)
    state_at: float = float("-inf")


@dataclass(frozen=True)
class FakeHandle:
    index: int


@dataclass
class FakeGpmSample:
    values: dict[str, float] = field(default_factory=dict)
    taken_at: float | None = None


@dataclass
class _GpmSupport:
    version: int = 1
    isSupportedDevice: int = 0


@dataclass
class _GpmMetric:
    metricId: int = 0
    nvmlReturn: int = pynvml.NVML_SUCCESS
    value: float = 0.0


@dataclass
class _Utilization:
    gpu: int
    memory: int


@dataclass
class _Memory:
    total: int
    used: int
    free: int


@dataclass
class _Process:
    pid: int
    usedGpuMemory: int = 0


@dataclass
class _EventData:
    device: FakeHandle
    eventType: int
    eventData: int
    gpuInstanceId: int = 0xFFFFFFFF
    computeInstanceId: int = 0xFFFFFFFF


@dataclass
class FakeEventSet:
    devices: set[int] = field(default_factory=set)
    delivered: int = 0


class FakeGpmMetricsGet:
    """The GPM request structure, with pynvml's field names."""

    def __init__(self) -> None:
        self.version = 0
        self.numMetrics = 0
        self.sample1: FakeGpmSample | None = None
        self.sample2: FakeGpmSample | None = None
        self.metrics = [_GpmMetric() for _ in range(pynvml.NVML_GPM_METRIC_MAX)]


_GPM_FIELDS = {
    pynvml.NVML_GPM_METRIC_SM_UTIL: "sm_active",
    pynvml.NVML_GPM_METRIC_SM_OCCUPANCY: "sm_occupancy",
    pynvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL: "tensor_active",
}


class FakeNvml:
    """Replays a trace against a clock that returns seconds from the trace's start."""

    # pynvml's constants, so that code written against pynvml reads them from here.
    NVML_SUCCESS = pynvml.NVML_SUCCESS
    NVML_ERROR_TIMEOUT = pynvml.NVML_ERROR_TIMEOUT
    NVML_ERROR_NOT_SUPPORTED = pynvml.NVML_ERROR_NOT_SUPPORTED
    NVML_ERROR_GPU_IS_LOST = pynvml.NVML_ERROR_GPU_IS_LOST
    NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
    NVML_VOLATILE_ECC = pynvml.NVML_VOLATILE_ECC
    NVML_GPM_METRICS_GET_VERSION = pynvml.NVML_GPM_METRICS_GET_VERSION
    NVML_GPM_METRIC_SM_UTIL = pynvml.NVML_GPM_METRIC_SM_UTIL
    NVML_GPM_METRIC_SM_OCCUPANCY = pynvml.NVML_GPM_METRIC_SM_OCCUPANCY
    NVML_GPM_METRIC_ANY_TENSOR_UTIL = pynvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL
    NVML_CLOCK_SM = pynvml.NVML_CLOCK_SM
    NVML_FEATURE_ENABLED = pynvml.NVML_FEATURE_ENABLED
    NVML_NVLINK_MAX_LINKS = pynvml.NVML_NVLINK_MAX_LINKS
    NVML_NVLINK_ERROR_DL_REPLAY = pynvml.NVML_NVLINK_ERROR_DL_REPLAY
    NVML_NVLINK_ERROR_DL_RECOVERY = pynvml.NVML_NVLINK_ERROR_DL_RECOVERY
    NVML_NVLINK_ERROR_DL_CRC_FLIT = pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT
    NVML_NVLINK_ERROR_DL_CRC_DATA = pynvml.NVML_NVLINK_ERROR_DL_CRC_DATA
    nvmlClocksEventReasonHwSlowdown = pynvml.nvmlClocksEventReasonHwSlowdown
    nvmlEventTypeXidCriticalError = pynvml.nvmlEventTypeXidCriticalError
    nvmlClocksEventReasonSwPowerCap = pynvml.nvmlClocksEventReasonSwPowerCap
    nvmlClocksEventReasonHwPowerBrakeSlowdown = pynvml.nvmlClocksEventReasonHwPowerBrakeSlowdown
    nvmlClocksEventReasonSwThermalSlowdown = pynvml.nvmlClocksEventReasonSwThermalSlowdown
    nvmlClocksEventReasonHwThermalSlowdown = pynvml.nvmlClocksEventReasonHwThermalSlowdown
    NVMLError = pynvml.NVMLError
    c_nvmlGpmMetricsGet_t = FakeGpmMetricsGet

    def __init__(
        self,
        lines: Iterable[str],
        *,
        clock: Callable[[], float],
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self._gpus: dict[int, _Gpu] = {}
        self._xids: list[tuple[float, int, int]] = []
        self.malformed_lines = 0
        #: The first line skipped and why ("line 3: ..."), for the one line that reports them.
        self.first_malformed: str | None = None
        self._initialized = False
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                self._load(json.loads(line))
            except (ValueError, KeyError, TypeError) as err:
                self.malformed_lines += 1
                if self.first_malformed is None:
                    self.first_malformed = f"line {number}: {err}"
        for gpu in self._gpus.values():
            gpu.samples.sort(key=lambda sample: sample[0])
            gpu.faults.sort(key=lambda fault: fault[0])
        self._xids.sort()

    @classmethod
    def from_file(cls, path: str, **kwargs: Any) -> "FakeNvml":
        """The trace in the file; a file that cannot be read as text raises TraceError."""
        try:
            with open(path, encoding="utf-8") as trace:
                return cls(trace.readlines(), **kwargs)
        except (OSError, UnicodeDecodeError) as err:
            raise TraceError(f"trace {path}: {err}") from err

    def _load(self, record: dict[str, Any]) -> None:
        kind = record["kind"]
        index = int(record["index"])
        if kind == "gpu":
            self._gpus[index] = _Gpu(
                index=index,
                name=str(record.get("name", "NVIDIA GPU")),
                uuid=str(record.get("uuid", f"GPU-fake-{index}")),
                pci_bus_id=str(record.get("pci_bus_id", f"00000000:{index + 16:02x}:00.0")),
                power_limit_mw=int(float(record["power_limit_w"]) * 1000),
                memory_total_bytes=int(record.get("memory_total_bytes", 80 * 2**30)),
                gpm=bool(record.get("gpm", False)),
                ecc=bool(record.get("ecc", True)),
                sm_clock_mhz=float(record.get("sm_clock_mhz", DEFAULT_SM_CLOCK_MHZ)),
                nvlinks=int(record.get("nvlinks", 0)),
            )
            return
        gpu = self._gpus.get(index)
        if gpu is None:
            raise TraceError(f"{kind} for GPU {index} before its gpu record")
        t = float(record["t"])
        if not math.isfinite(t):
            raise TraceError(f"time {t} is not finite")
        if kind == "sample":
            values = {k: v for k, v in record.items() if k not in {"kind", "t", "index"}}
            for name, value in values.items():
                _check_sample_value(name, value)
            gpu.samples.append((t, values))
        elif kind == "xid":
            self._xids.append((t, index, int(record["code"])))
        elif kind == "lost":
            gpu.lost_at = min(gpu.lost_at, t)
        elif kind == "fault":
            code = record["code"]
            if not isinstance(code, int) or isinstance(code, bool) or code < 0:
                raise TraceError(f"fault code {code!r} is not an NVML return code")
            gpu.faults.append((t, code))
        else:
            raise TraceError(f"unknown record kind {kind!r}")

    # --- state -----------------------------------------------------------------------------

    def _gpu(self, handle: FakeHandle) -> _Gpu:
        if not self._initialized:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_UNINITIALIZED)
        gpu = self._gpus[handle.index]
        now = self._clock()
        if now >= gpu.lost_at:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)
        code = next((c for t, c in reversed(gpu.faults) if t <= now), 0)
        if code:
            raise pynvml.NVMLError(code)
        return gpu

    def _state(self, handle: FakeHandle) -> dict[str, Any]:
        """The GPU's state at the clock's time; replays forward, restarts if time went back."""
        gpu = self._gpu(handle)
        now = self._clock()
        if now < gpu.state_at:
            gpu.cursor, gpu.state = 0, {}
        while gpu.cursor < len(gpu.samples) and gpu.samples[gpu.cursor][0] <= now:
            gpu.state.update(gpu.samples[gpu.cursor][1])
            gpu.cursor += 1
        gpu.state_at = now
        return gpu.state

    def _value(self, handle: FakeHandle, name: str, default: Any = None) -> Any:
        value = self._state(handle).get(name, default)
        if value is None:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return value

    # --- pynvml's functions ----------------------------------------------------------------

    def nvmlInit(self) -> None:
        self._initialized = True

    def nvmlShutdown(self) -> None:
        self._initialized = False

    def nvmlSystemGetDriverVersion(self) -> str:
        return "fake-trace"

    def nvmlDeviceGetCount(self) -> int:
        return len(self._gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeHandle:
        if index not in self._gpus:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return FakeHandle(index)

    def nvmlDeviceGetIndex(self, handle: FakeHandle) -> int:
        return self._gpu(handle).index

    def nvmlDeviceGetName(self, handle: FakeHandle) -> str:
        return self._gpu(handle).name

    def nvmlDeviceGetUUID(self, handle: FakeHandle) -> str:
        return self._gpu(handle).uuid

    def nvmlDeviceGetPciInfo(self, handle: FakeHandle) -> _PciInfo:
        """pynvml's ``nvmlPciInfo_t``: ``busId`` is a ``c_char`` array, so bytes."""
        return _PciInfo(busId=self._gpu(handle).pci_bus_id.encode())

    def nvmlDeviceGetPowerUsage(self, handle: FakeHandle) -> int:
        return int(float(self._value(handle, "power_w")) * 1000)

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: FakeHandle) -> int:
        return self._gpu(handle).power_limit_mw

    def nvmlDeviceGetUtilizationRates(self, handle: FakeHandle) -> _Utilization:
        state = self._state(handle)
        if "utilization" not in state:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return _Utilization(int(state["utilization"]), int(state.get("memory_util", 0)))

    def nvmlDeviceGetMemoryInfo(self, handle: FakeHandle, version: Any = None) -> _Memory:
        total = self._gpu(handle).memory_total_bytes
        used = int(self._value(handle, "memory_used_bytes"))
        return _Memory(total=total, used=used, free=total - used)

    def nvmlDeviceGetTemperature(self, handle: FakeHandle, sensor: int) -> int:
        return int(self._value(handle, "temperature_c"))

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: FakeHandle) -> int:
        reasons = 0
        for name in self._value(handle, "throttle", []):
            reasons |= _THROTTLE_BITS[name]
        return reasons

    def nvmlDeviceGetClockInfo(self, handle: FakeHandle, type: int) -> int:
        if type != pynvml.NVML_CLOCK_SM:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return int(self._value(handle, "sm_clock_mhz", self._gpu(handle).sm_clock_mhz))

    def nvmlDeviceGetPcieReplayCounter(self, handle: FakeHandle) -> int:
        return int(self._value(handle, "pcie_replay_total", 0))

    def _nvlink(self, device: FakeHandle, link: int) -> None:
        """NOT_SUPPORTED on a GPU without NVLink; INVALID_ARGUMENT past its links."""
        links = self._gpu(device).nvlinks
        if not links:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        if not 0 <= link < links:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)

    def nvmlDeviceGetNvLinkState(self, device: FakeHandle, link: int) -> int:
        self._nvlink(device, link)
        return int(pynvml.NVML_FEATURE_ENABLED)

    def nvmlDeviceGetNvLinkErrorCounter(self, device: FakeHandle, link: int, counter: int) -> int:
        self._nvlink(device, link)
        name = NVLINK_COUNTER_NAMES.get(counter)
        if name is None:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        totals = self._value(device, "nvlink_errors_total", {})
        return int(totals.get(str(link), {}).get(name, 0))

    def nvmlDeviceGetTotalEccErrors(
        self,
        handle: FakeHandle,
        errorType: int,
        counterType: int,
    ) -> int:
        if not self._gpu(handle).ecc:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return int(self._value(handle, "ecc_uncorrected_total", 0))

    def nvmlDeviceGetRemappedRows(self, device: FakeHandle) -> tuple[int, int, int, int]:
        if not self._gpu(device).ecc:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        pending = bool(self._value(device, "remap_pending", False))
        return (0, int(pending), int(pending), 0)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeHandle) -> list[_Process]:
        return [_Process(pid=int(pid)) for pid in self._value(handle, "pids", [])]

    def nvmlGpmQueryDeviceSupport(self, device: FakeHandle) -> _GpmSupport:
        return _GpmSupport(isSupportedDevice=int(self._gpu(device).gpm))

    def nvmlGpmSampleAlloc(self) -> FakeGpmSample:
        return FakeGpmSample()

    def nvmlGpmSampleFree(self, gpmSample: FakeGpmSample) -> None:
        gpmSample.values.clear()

    def nvmlGpmSampleGet(self, device: FakeHandle, gpmSample: FakeGpmSample) -> FakeGpmSample:
        if not self._gpu(device).gpm:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        state = self._state(device)
        gpmSample.values = {name: float(state.get(name, 0.0)) for name in _GPM_FIELDS.values()}
        gpmSample.taken_at = self._clock()
        return gpmSample

    def nvmlGpmMetricsGet(self, metricsGet: FakeGpmMetricsGet) -> FakeGpmMetricsGet:
        later = metricsGet.sample2
        earlier = metricsGet.sample1
        if later is None or earlier is None or later.taken_at is None or earlier.taken_at is None:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        for metric in metricsGet.metrics[: metricsGet.numMetrics]:
            name = _GPM_FIELDS.get(metric.metricId)
            if name is None:
                metric.nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED
                continue
            metric.nvmlReturn = pynvml.NVML_SUCCESS
            metric.value = later.values.get(name, 0.0)
        return metricsGet

    def nvmlEventSetCreate(self) -> FakeEventSet:
        return FakeEventSet()

    def nvmlDeviceRegisterEvents(
        self,
        handle: FakeHandle,
        eventTypes: int,
        eventSet: FakeEventSet,
    ) -> None:
        self._gpu(handle)
        if eventTypes & pynvml.nvmlEventTypeXidCriticalError:
            eventSet.devices.add(handle.index)

    def nvmlEventSetWait_v2(self, eventSet: FakeEventSet, timeoutms: int) -> _EventData:
        deadline = self._clock() + timeoutms / 1000
        while True:
            now = self._clock()
            while eventSet.delivered < len(self._xids) and self._xids[eventSet.delivered][0] <= now:
                _, index, code = self._xids[eventSet.delivered]
                eventSet.delivered += 1
                if index in eventSet.devices:
                    return _EventData(
                        device=FakeHandle(index),
                        eventType=pynvml.nvmlEventTypeXidCriticalError,
                        eventData=code,
                    )
            if now >= deadline:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_TIMEOUT)
            next_due = (
                self._xids[eventSet.delivered][0]
                if eventSet.delivered < len(self._xids)
                else float("inf")
            )
            self._sleep(max(0.0, min(deadline, next_due) - now))
            if self._clock() == now:  # a clock that does not move: nothing more can come
                raise pynvml.NVMLError(pynvml.NVML_ERROR_TIMEOUT)

    def nvmlEventSetFree(self, eventSet: FakeEventSet) -> None:
        eventSet.devices.clear()
