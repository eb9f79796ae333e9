"""A GPU whose NVML calls keep failing is reported unhealthy, with NVML's code as the reason,
and the gpu-lost alarm pages for it; a reading the GPU lacks (NOT_SUPPORTED) is no fault."""

import json
from pathlib import Path
from typing import Any

import pynvml
import pytest

from cdk.alarms.catalog import AlarmSettings, gpu_alarms
from cli.backtest.engine import backtest
from cli.backtest.evaluator import AlarmState
from cli.backtest.history import samples_from_emf
from gpu_insights_agent.emf.document import EmfDocument
from gpu_insights_agent.emf.sinks import BufferedSender
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.nvml_faults import (
    FAULT_CYCLES,
    NVML_CODES,
    FaultClass,
    cycle_fault,
    describe_code,
)
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from tests.unit.agent.exporter.nvml_trace import EPOCH, Clock

INTERVAL = 10


class _Sink:
    def __init__(self) -> None:
        self.documents: list[EmfDocument] = []

    def send(self, documents: Any) -> None:
        self.documents.extend(documents)


def _exporter(faults: list[tuple[float, int]]) -> tuple[Exporter, Clock, _Sink]:
    """One H100 at work from t=0, and GPU 1 (an A10G) that never fails; ``faults`` on GPU 0."""
    records: list[dict[str, Any]] = [
        {"kind": "gpu", "index": 0, "uuid": "GPU-0", "power_limit_w": 700, "gpm": True},
        {"kind": "gpu", "index": 1, "uuid": "GPU-1", "power_limit_w": 300, "ecc": False},
        *(
            {"kind": "sample", "t": 0, "index": i, "power_w": 400.0, "utilization": 90,
             "memory_used_bytes": 2**34, "temperature_c": 60, "throttle": [], "pids": [7]}
            for i in (0, 1)
        ),
        *({"kind": "fault", "t": t, "index": 0, "code": code} for t, code in faults),
    ]  # fmt: skip
    clock, sink = Clock(0), _Sink()
    nvml = FakeNvml([json.dumps(r) for r in records], clock=clock, sleep=lambda _: None)
    assert nvml.malformed_lines == 0
    exporter = Exporter(
        NvmlSource(nvml),
        BufferedSender(sink),
        ExporterConfig(cluster_name="train", node_name="node-a", interval_s=INTERVAL),
        clock=lambda: EPOCH + clock(),
    )
    exporter.start()
    return exporter, clock, sink


def _run(exporter: Exporter, clock: Clock, seconds: int) -> list[tuple[int, dict[str, Any]]]:
    """GPU 0's cycle document at each cycle's time from 0 to ``seconds``."""
    out = []
    for t in range(0, seconds + 1, INTERVAL):
        clock.now = t
        (gpu0,) = [
            d for d in exporter.collect_once() if d.get("GpuIndex") == "0" and "gpu_healthy" in d
        ]
        out.append((t, dict(gpu0)))
    return out


def test_the_code_table_matches_pynvml_and_leaves_no_code_out() -> None:
    for code, row in NVML_CODES.items():
        assert getattr(pynvml, row.name) == code, row.name
    pynvml_codes = {
        value
        for name, value in vars(pynvml).items()
        if name.startswith("NVML_ERROR_") and isinstance(value, int)
    }
    assert pynvml_codes <= set(NVML_CODES)
    # The codes that say the GPU or its driver is gone are faults; only "not there" is not.
    assert describe_code(3).fault_class is FaultClass.ABSENT  # NOT_SUPPORTED
    assert describe_code(16).fault_class is FaultClass.DEVICE  # RESET_REQUIRED
    assert describe_code(15).fault_class is FaultClass.DEVICE  # GPU_IS_LOST
    assert describe_code(9).fault_class is FaultClass.DRIVER  # DRIVER_NOT_LOADED
    assert describe_code(999).fault_class is FaultClass.DRIVER  # UNKNOWN
    assert describe_code(10).fault_class is FaultClass.TRANSIENT  # TIMEOUT
    assert describe_code(4242).fault_class is FaultClass.DRIVER  # a newer driver's code


def test_a_cycle_is_faulted_by_a_device_code_or_by_nothing_answering() -> None:
    assert cycle_fault([], answered=12) is None
    # One slow answer among readings that came back is not a fault of the GPU.
    assert cycle_fault([10], answered=11) is None
    assert cycle_fault([10, 10], answered=0) == 10
    # A device or driver code faults the cycle whatever else answered; the worst is named.
    assert cycle_fault([10, 16], answered=5) == 16
    assert cycle_fault([999, 16], answered=0) == 16


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (16, "NVML_ERROR_RESET_REQUIRED"),
        (999, "NVML_ERROR_UNKNOWN"),
        (9, "NVML_ERROR_DRIVER_NOT_LOADED"),
        (10, "NVML_ERROR_TIMEOUT"),
    ],
)
def test_a_gpu_failing_every_call_goes_unhealthy_after_the_stated_cycles(
    code: int, reason: str
) -> None:
    # Every call on GPU 0 fails with ``code`` from 20 s to 70 s, then answers again.
    exporter, clock, sink = _exporter([(20, code), (70, 0)])
    cycles = _run(exporter, clock, 80)
    healthy = [(t, d["gpu_healthy"]) for t, d in cycles]
    first_unhealthy = 20 + (FAULT_CYCLES - 1) * INTERVAL
    assert healthy == [(t, 0.0 if first_unhealthy <= t < 70 else 1.0) for t in range(0, 81, 10)]
    unhealthy = dict(cycles)[first_unhealthy]
    assert unhealthy["UnhealthyReason"] == reason
    assert unhealthy["UnhealthyDetail"] == (
        f"{describe_code(code).fault_class}: {describe_code(code).meaning}"
    )
    assert "UnhealthyReason" not in dict(cycles)[first_unhealthy - INTERVAL]
    assert "UnhealthyReason" not in dict(cycles)[70]
    assert dict(cycles)[70]["gpu_power_draw_watts"] == 400.0
    # GPU 1 never noticed.
    assert all(
        d["gpu_healthy"] == 1.0
        for d in sink.documents
        if d.get("GpuIndex") == "1" and "gpu_healthy" in d
    )


def test_a_gpu_that_supports_no_reading_is_not_unhealthy() -> None:
    exporter, clock, _ = _exporter([(20, pynvml.NVML_ERROR_NOT_SUPPORTED)])
    assert {d["gpu_healthy"] for _, d in _run(exporter, clock, 80)} == {1.0}


def test_a_lost_gpu_says_why() -> None:
    exporter, clock, _ = _exporter([(20, pynvml.NVML_ERROR_GPU_IS_LOST)])
    cycles = dict(_run(exporter, clock, 30))
    # GPU_IS_LOST needs no run of cycles: the GPU will not come back without a reset.
    assert (cycles[10]["gpu_healthy"], cycles[20]["gpu_healthy"]) == (1.0, 0.0)
    assert cycles[20]["UnhealthyReason"] == "NVML_ERROR_GPU_IS_LOST"


def test_the_gpu_lost_alarm_pages_for_a_reset_required_gpu() -> None:
    """Before, a GPU answering RESET_REQUIRED to every call was sent as gpu_healthy 1 and no
    alarm fired; now its 0s put it in the gpu-lost alarm (its contributor, by node and GPU)."""
    exporter, clock, sink = _exporter([(60, pynvml.NVML_ERROR_RESET_REQUIRED)])
    _run(exporter, clock, 600)
    specs = [a for a in gpu_alarms(AlarmSettings(cluster_name="train")) if a.key == "gpu-lost"]
    (result,) = backtest(specs, samples_from_emf(sink.documents), start=EPOCH, end=EPOCH + 600)
    assert result.transitions[-1].new is AlarmState.ALARM
    assert result.contributors_alarmed == [("train", "node-a", "0")]


def test_a_fault_record_without_a_return_code_is_a_skipped_line() -> None:
    gpu = {"kind": "gpu", "index": 0, "power_limit_w": 700}
    lines = [json.dumps(gpu)] + [
        json.dumps({"kind": "fault", "t": 5, "index": 0, "code": code})
        for code in ("16", -1, True, 2.5)
    ]
    nvml = FakeNvml(lines, clock=Clock(0), sleep=lambda _: None)
    assert nvml.malformed_lines == 4
    assert nvml.first_malformed == "line 2: fault code '16' is not an NVML return code"


def test_the_metrics_page_states_the_cycles_the_exporter_waits() -> None:
    page = (Path(__file__).parents[4] / "docs" / "metrics.md").read_text()
    interval = ExporterConfig(cluster_name="c", node_name="n").interval_s
    assert f"**{FAULT_CYCLES} faulted cycles in a row**" in page
    assert f"({FAULT_CYCLES * interval:.0f} s at the default {interval:.0f} s interval)" in page
    assert f"for {FAULT_CYCLES} cycles in a row" in page  # the gpu_healthy row


def test_a_gpu_that_cannot_be_opened_names_nvmls_code() -> None:
    exporter, _, _ = _exporter([(0, pynvml.NVML_ERROR_RESET_REQUIRED)])
    assert exporter.lost == {0}
    (gpu0,) = [d for d in exporter.collect_once() if d.get("GpuIndex") == "0"]
    assert (gpu0["gpu_healthy"], gpu0["UnhealthyReason"]) == (0.0, "NVML_ERROR_RESET_REQUIRED")
