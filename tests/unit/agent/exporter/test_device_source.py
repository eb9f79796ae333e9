"""The exporter reads devices through the DeviceSource interface alone: a source that is not
NVML (here a two-device accelerator written in the test) is exported the same way."""

from collections.abc import Callable, Iterable

from gpu_insights_agent.contract.metrics import GpuMetric
from gpu_insights_agent.emf.sinks import BufferedSender
from gpu_insights_agent.exporter.device_source import (
    DeviceOpenError,
    GpuLostError,
    GpuReading,
    XidEvent,
)
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from tests.unit.agent.exporter.test_exporter import ListSink

EPOCH = 1_767_261_600.0
DRAW = str(GpuMetric.POWER_DRAW)


class Chip:
    def __init__(self, index: int, power: list[float]) -> None:
        self.index, self.name, self.uuid = index, "accelerator", f"chip-{index}"
        self.pci_bus_id: str | None = None
        self.power = power
        self.closed = False

    @property
    def label(self) -> str:
        return self.name

    def sample(self) -> GpuReading:
        if not self.power:
            raise GpuLostError(f"chip {self.index} is gone")
        return GpuReading(metrics={GpuMetric.HEALTHY: 1.0, GpuMetric.POWER_DRAW: self.power.pop(0)})

    def sample_pids(self) -> list[int]:
        return []

    def close(self) -> None:
        self.closed = True


class Watch:
    def __init__(self, on_event: Callable[[XidEvent], None]) -> None:
        self.on_event = on_event

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def drain(self) -> int:
        self.on_event(XidEvent(gpu_index=0, code=48, time=EPOCH, source="chip"))
        return 1


class ChipSource:
    """Chip 0 answers twice, chip 1 once, chip 2 cannot be opened."""

    def __init__(self) -> None:
        self.chips = {0: Chip(0, [310.0, 305.0]), 1: Chip(1, [120.0])}
        self.closed = False

    def open(self) -> int:
        return 3

    def device(self, index: int) -> Chip:
        if index not in self.chips:
            raise DeviceOpenError(f"chip {index}: no such device")
        return self.chips[index]

    def watch(
        self,
        indices: Iterable[int],
        on_event: Callable[[XidEvent], None],
        *,
        clock: Callable[[], float],
    ) -> Watch:
        assert sorted(indices) == [0, 1]
        return Watch(on_event)

    def close(self) -> None:
        self.closed = True


def test_a_source_that_is_not_nvml_is_exported_lost_devices_and_events_included() -> None:
    source, sink = ChipSource(), ListSink()
    exporter = Exporter(
        source,
        BufferedSender(sink),
        ExporterConfig(cluster_name="train", node_name="node-t"),
        clock=lambda: EPOCH,
    )
    exporter.start()
    first = {d["GpuIndex"]: d for d in exporter.collect_once()}
    assert (first["0"][DRAW], first["1"][DRAW]) == (310.0, 120.0)
    assert (first["0"]["GpuUuid"], first["2"]["gpu_healthy"]) == ("chip-0", 0.0)
    second = {d["GpuIndex"]: d for d in exporter.collect_once() if "gpu_healthy" in d}
    assert (second["0"][DRAW], second["1"]["gpu_healthy"]) == (305.0, 0.0)
    lost = [d for d in sink.documents if d.get("XidSource") == "lost"]
    assert [(d["GpuIndex"], d["XidCode"]) for d in lost] == [("1", "79")]
    assert exporter.watcher is not None
    assert exporter.watcher.drain() == 1
    assert sink.documents[-1]["XidCode"] == "48"
    assert exporter.shutdown()
    assert source.closed
    assert all(chip.closed for chip in source.chips.values())
