"""NVIDIA GPUs through NVML: pynvml on a node, or ``fake_nvml.FakeNvml`` replaying a trace
(the demo, the tests, the benchmark) through the same calls."""

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

from gpu_insights_agent.exporter.device_source import (
    DeviceOpenError,
    DeviceUnavailableError,
    XidEvent,
)
from gpu_insights_agent.exporter.gpu_sampler import GpuSampler
from gpu_insights_agent.exporter.nvml_faults import device_fault
from gpu_insights_agent.exporter.xid_watcher import XidWatcher


class NvmlUnavailableError(DeviceUnavailableError):
    """No NVIDIA driver or no NVML on this node: nothing to export."""


class NvmlSource:
    """``nvml``: the pynvml module, or a FakeNvml."""

    def __init__(self, nvml: Any) -> None:
        self.nvml = nvml
        self._samplers: dict[int, GpuSampler] = {}

    def open(self) -> int:
        nvml = self.nvml
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as err:
            raise NvmlUnavailableError(
                f"NVML is not available on this node ({err}): is the NVIDIA driver installed "
                "and is the container started with the NVIDIA runtime?"
            ) from err
        return int(nvml.nvmlDeviceGetCount())

    def device(self, index: int) -> GpuSampler:
        try:
            sampler = GpuSampler(self.nvml, index)
        except self.nvml.NVMLError as err:
            raise DeviceOpenError(str(err), device_fault(int(err.value))) from err
        self._samplers[index] = sampler
        return sampler

    def watch(
        self,
        indices: Iterable[int],
        on_event: Callable[[XidEvent], None],
        *,
        clock: Callable[[], float],
    ) -> XidWatcher:
        handles = {i: self._samplers[i].handle for i in indices}
        return XidWatcher(self.nvml, handles, on_event, clock=clock)

    def close(self) -> None:
        with contextlib.suppress(self.nvml.NVMLError):
            self.nvml.nvmlShutdown()
