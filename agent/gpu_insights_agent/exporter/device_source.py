"""What the exporter reads from the accelerators on its node, behind one interface, so that a
second family (Trainium and Inferentia through neuron-monitor) is one more source beside
``nvml_source.NvmlSource`` rather than an edit through the exporter.

Per cycle the exporter asks each device for a :class:`GpuReading` (the contract's metrics and
the PIDs on it); between cycles a watch hands on error events (XIDs) as they happen; a device
that stops answering raises :class:`GpuLostError` and is reported unhealthy from then on; a
device whose faults persist reads ``gpu_healthy`` 0 with a :class:`DeviceFault` as the reason.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from gpu_insights_agent.contract.metrics import GpuMetric


class DeviceUnavailableError(Exception):
    """No driver or no management library on this node: nothing to export."""


class DeviceOpenError(Exception):
    """One device could not be opened; the exporter reports it unhealthy and goes on."""

    def __init__(self, message: str, fault: "DeviceFault | None" = None) -> None:
        super().__init__(message)
        #: The library's reason, where it gave one.
        self.fault = fault


class GpuLostError(Exception):
    """The device is lost (fallen off the bus); it will not answer until a reset."""


@dataclass(frozen=True)
class DeviceFault:
    """Why a device is unhealthy: its library's code name and what the vendor says it means."""

    reason: str
    detail: str


@dataclass
class GpuReading:
    metrics: dict[GpuMetric, float]
    pids: list[int] = field(default_factory=list)
    #: False where the device did not answer which processes run on it (``pids`` is then
    #: empty, but not known to be): the exporter keeps the pods it last saw on it.
    pids_read: bool = True
    #: Set with ``gpu_healthy`` 0: the fault that persisted.
    fault: DeviceFault | None = None


@dataclass(frozen=True)
class XidEvent:
    gpu_index: int
    code: int
    #: Seconds since the epoch when the exporter received the event.
    time: float
    #: "nvml" for driver events, "lost" for a GPU the exporter found fallen off the bus.
    source: str = "nvml"


class Device(Protocol):
    """One accelerator, opened for the life of the exporter."""

    index: int
    name: str
    uuid: str
    #: Its PCI bus id (``00000000:53:00.0``) where the device reports one: the kernel's XID
    #: lines name the GPU by it.
    pci_bus_id: str | None

    @property
    def label(self) -> str:
        """How the start-up log names it (its model, and what it cannot report)."""
        ...

    def sample(self) -> GpuReading:
        """This cycle's reading; raises :class:`GpuLostError` for a device that is gone."""
        ...

    def sample_pids(self) -> list[int]:
        """The processes on it now (for an event's pods); raises :class:`GpuLostError`."""
        ...

    def close(self) -> None: ...


class EventWatch(Protocol):
    """Hands each error event to the exporter as it happens, from a thread of its own."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def drain(self) -> int:
        """Hand on every event already due, without waiting; how many (a replay's pace)."""
        ...


class DeviceSource(Protocol):
    def open(self) -> int:
        """Start the library; the number of devices. Raises :class:`DeviceUnavailableError`."""
        ...

    def device(self, index: int) -> Device:
        """Open one device; raises :class:`DeviceOpenError`."""
        ...

    def watch(
        self,
        indices: Iterable[int],
        on_event: Callable[[XidEvent], None],
        *,
        clock: Callable[[], float],
    ) -> EventWatch:
        """A watch of the opened devices' error events."""
        ...

    def close(self) -> None:
        """Release the library (after the devices are closed)."""
        ...
