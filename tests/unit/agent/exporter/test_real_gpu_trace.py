"""The fake NVML against a real GPU: an H200 recorded by benchmarks/gpu_node_check.sh.

tests/data/nvml/ holds what one run on an NVIDIA H200 (driver 580.159.04, nvidia-ml-py
13.610.43) wrote: the NVML trace exporter.record_trace took every second, and the EMF documents
the real exporter wrote every 5 s beside it, over four phases: idle (0-10 s), 20 GiB held by a
process doing nothing (10-30 s), bf16 matrix products (30-50 s), idle again. Replaying the trace
through the fake must give the documents the real exporter gave, or the fake drifted from NVML.
"""

import json
from pathlib import Path
from typing import Any

from gpu_insights_agent.emf.document import EmfDocument, encode, parse_emf_line
from gpu_insights_agent.emf.sinks import BufferedSender
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.nvml_source import NvmlSource

NVML_DATA = Path(__file__).parents[3] / "data" / "nvml"
#: Cycles whose 5-s GPM window spans a phase change: the real exporter's SM activity covers
#: 5 s, the trace's the last second, so they differ by design there (power does not).
PHASE_CHANGES = {35, 55}
#: Metrics the exporter gained after the recording (the fail-slow evidence): the trace does not
#: hold the SM clock, so the fake gives its default; the documents are compared without it.
SINCE_RECORDING = {"gpu_sm_clock_mhz"}


def _real() -> list[dict[str, Any]]:
    lines = (NVML_DATA / "h200-exporter.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _replayed(count: int) -> list[EmfDocument]:
    now = [0.0]
    nvml = FakeNvml.from_file(
        str(NVML_DATA / "h200-trace.jsonl"), clock=lambda: now[0], sleep=lambda _: None
    )
    documents: list[EmfDocument] = []

    class Sink:
        def send(self, batch: Any) -> None:
            documents.extend(parse_emf_line(encode(d)) for d in batch)

    exporter = Exporter(
        NvmlSource(nvml),
        BufferedSender(Sink()),
        ExporterConfig(cluster_name="gpu-check", node_name="vm", interval_s=5),
        clock=lambda: 1.8e9 + now[0],
    )
    exporter.start()
    replayed = []
    for cycle in range(count):
        # Half a second in: the recorder's sample of that second has been taken.
        now[0] = cycle * 5 + 0.5
        replayed += [d for d in exporter.collect_once() if "gpu_healthy" in d]
    return replayed


def _shape(document: dict[str, Any]) -> tuple[Any, ...]:
    directives = document["_aws"]["CloudWatchMetrics"]
    return (
        sorted(k for k in document if k != "_aws" and k not in SINCE_RECORDING),
        [
            (d["Dimensions"], names)
            for d in directives
            if (names := [m["Name"] for m in d["Metrics"] if m["Name"] not in SINCE_RECORDING])
        ],
    )


def test_replaying_the_h200_trace_gives_the_documents_the_real_exporter_wrote() -> None:
    real = _real()
    replayed = _replayed(len(real))
    assert len(real) == len(replayed) == 15
    for cycle, (want, got) in enumerate(zip(real, replayed, strict=True)):
        at = cycle * 5
        assert _shape(got) == _shape(want), f"at {at} s"
        assert abs(got["gpu_power_utilization"] - want["gpu_power_utilization"]) < 0.1
        if at not in PHASE_CHANGES and "gpu_sm_active" in want:
            assert abs(got["gpu_sm_active"] - want["gpu_sm_active"]) < 1


def test_the_h200_held_but_idle_is_under_the_low_power_threshold_and_at_work_is_not() -> None:
    by_second = {cycle * 5: d for cycle, d in enumerate(_real())}
    held_idle = [by_second[t]["gpu_allocated_power_utilization"] for t in (20, 25, 30)]
    working = [by_second[t]["gpu_allocated_power_utilization"] for t in (40, 45, 50)]
    # 120.7 W of the enforced 700 W while a process held 20 GiB and did nothing; 693 W at work.
    assert [round(p) for p in held_idle] == [17, 17, 17]
    assert [round(p) for p in working] == [99, 99, 99]
    # No process and under 1 GiB used: not allocated, so the low-power alarm ignores it.
    assert "gpu_allocated_power_utilization" not in by_second[65]
    assert by_second[40]["GpuName"] == "NVIDIA H200"
    assert by_second[40]["gpu_power_limit_watts"] == 700.0
