"""The fail-slow culprit's evidence series from NVML (lambdas/shared/fail_slow.py reads them): the
SM clock, the HW Slowdown reason, PCIe replays and NVLink errors, each read where the GPU has
it and left out where NVML answers NOT_SUPPORTED, never a 0 it did not read."""

import json
from typing import Any

import pynvml
import pytest

from gpu_insights_agent.contract.metrics import GpuMetric
from gpu_insights_agent.emf.sinks import BufferedSender
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.gpu_sampler import GpuSampler
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from tests.unit.agent.exporter.nvml_trace import EPOCH, Clock

SXM = {"kind": "gpu", "index": 0, "name": "NVIDIA H100 80GB HBM3", "power_limit_w": 700,
       "nvlinks": 18}  # fmt: skip
PCIE = {"kind": "gpu", "index": 1, "name": "NVIDIA A10G", "power_limit_w": 300}


def _sample(t: float, index: int, **values: Any) -> dict[str, Any]:
    return {"kind": "sample", "t": t, "index": index, "power_w": 500.0, **values}


def _nvml(*records: dict[str, Any]) -> tuple[FakeNvml, Clock]:
    clock = Clock(0)
    nvml = FakeNvml([json.dumps(r) for r in (SXM, PCIE, *records)], clock=clock)
    nvml.nvmlInit()
    return nvml, clock


def test_the_sm_clock_hw_slowdown_and_new_link_errors_of_each_cycle() -> None:
    nvml, clock = _nvml(
        _sample(0, 0, sm_clock_mhz=1980, pcie_replay_total=40,
                nvlink_errors_total={"3": {"crc_flit": 100}}),
        _sample(10, 0, sm_clock_mhz=1410, throttle=["hw_slowdown"], pcie_replay_total=52,
                nvlink_errors_total={"3": {"crc_flit": 130, "replay": 4},
                                     "17": {"recovery": 1}}),
    )  # fmt: skip
    gpu = GpuSampler(nvml, 0)
    assert gpu.nvlinks == tuple(range(18))
    first = gpu.sample().metrics
    # The counters ran before the exporter started: the first cycle publishes 0 new, not 40.
    assert first[GpuMetric.SM_CLOCK] == 1980.0
    assert (first[GpuMetric.PCIE_REPLAYS], first[GpuMetric.NVLINK_ERRORS]) == (0.0, 0.0)
    assert first[GpuMetric.THROTTLED_HW_SLOWDOWN] == 0.0
    clock.now = 10
    second = gpu.sample().metrics
    assert second[GpuMetric.SM_CLOCK] == 1410.0
    assert second[GpuMetric.THROTTLED_HW_SLOWDOWN] == 1.0
    assert second[GpuMetric.PCIE_REPLAYS] == 12.0
    # 30 CRC flit errors and 4 replays on link 3, a recovery on link 17.
    assert second[GpuMetric.NVLINK_ERRORS] == 35.0
    # The power brake and thermal flags stay what they mean: HW Slowdown is neither.
    assert (second[GpuMetric.THROTTLED_POWER], second[GpuMetric.THROTTLED_THERMAL]) == (0, 0)


def test_a_gpu_without_nvlink_publishes_no_nvlink_series_and_does_not_fail() -> None:
    nvml, clock = _nvml(_sample(0, 1), _sample(10, 1))
    gpu = GpuSampler(nvml, 1)
    assert gpu.nvlinks == ()
    for now in (0, 10):
        clock.now = now
        reading = gpu.sample()
        assert GpuMetric.NVLINK_ERRORS not in reading.metrics
        assert reading.metrics[GpuMetric.HEALTHY] == 1.0
        assert reading.fault is None
    assert reading.metrics[GpuMetric.SM_CLOCK] == 1980.0  # the fake's default clock


class _NoReplayCounter(FakeNvml):
    """A GPU whose driver does not give the PCIe replay counter or the SM clock."""

    def nvmlDeviceGetPcieReplayCounter(self, handle: Any) -> int:  # noqa: N802 (pynvml's)
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetClockInfo(self, handle: Any, type: int) -> int:  # noqa: N802 (pynvml's)
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)


def test_a_reading_nvml_does_not_support_is_left_out_not_a_zero() -> None:
    clock = Clock(0)
    nvml = _NoReplayCounter([json.dumps(SXM), json.dumps(_sample(0, 0))], clock=clock)
    nvml.nvmlInit()
    reading = GpuSampler(nvml, 0).sample()
    assert GpuMetric.PCIE_REPLAYS not in reading.metrics
    assert GpuMetric.SM_CLOCK not in reading.metrics
    assert reading.metrics[GpuMetric.NVLINK_ERRORS] == 0.0
    assert reading.fault is None


def test_a_counter_that_went_down_was_reset_and_counts_what_it_holds() -> None:
    nvml, clock = _nvml(_sample(0, 0, pcie_replay_total=500), _sample(10, 0, pcie_replay_total=3))
    gpu = GpuSampler(nvml, 0)
    gpu.sample()
    clock.now = 10
    assert gpu.sample().metrics[GpuMetric.PCIE_REPLAYS] == 3.0


def test_the_link_errors_are_fault_gauges_sent_only_in_their_non_zero_hours() -> None:
    """Zero link errors are held back (billed only in the hours they are non-zero); the SM
    clock rides every cycle's line as a property, no custom metric."""
    nvml, clock = _nvml(
        _sample(0, 0, nvlink_errors_total={"0": {"crc_data": 1}}),
        _sample(10, 0, nvlink_errors_total={"0": {"crc_data": 9}}),
    )
    sent: list[Any] = []

    class Sink:
        def send(self, batch: Any) -> None:
            sent.extend(batch)

    exporter = Exporter(
        NvmlSource(nvml),
        BufferedSender(Sink()),
        ExporterConfig(cluster_name="train", node_name="node-a"),
        clock=lambda: EPOCH + clock(),
    )
    exporter.start()
    first = [d for d in exporter.collect_once() if d.get("GpuIndex") == "0"]
    names = {m["Name"] for d in first for c in d["_aws"]["CloudWatchMetrics"] for m in c["Metrics"]}
    assert "gpu_nvlink_errors" not in names
    assert "gpu_sm_clock_mhz" not in names
    assert [d["gpu_sm_clock_mhz"] for d in first] == [1980.0]
    clock.now = 10
    second = [d for d in exporter.collect_once() if d.get("GpuIndex") == "0"]
    assert [d["gpu_nvlink_errors"] for d in second if "gpu_nvlink_errors" in d] == [0.0, 8.0]


@pytest.mark.parametrize(
    "line",
    [
        '{"kind": "sample", "t": 0, "index": 0, "nvlink_errors_total": {"3": {"crc": 1}}}',
        '{"kind": "sample", "t": 0, "index": 0, "nvlink_errors_total": {"x": {}}}',
        '{"kind": "sample", "t": 0, "index": 0, "nvlink_errors_total": {"0": {"replay": -1}}}',
        '{"kind": "sample", "t": 0, "index": 0, "pcie_replay_total": -2}',
    ],
)
def test_a_malformed_link_counter_is_a_skipped_line(line: str) -> None:
    nvml = FakeNvml([json.dumps(SXM), line], clock=Clock())
    assert nvml.malformed_lines == 1
