"""``python -m gpu_insights_agent.exporter.record_trace``: record this node's GPUs as an NVML trace.

The trace is the format exporter.fake_nvml replays, so what a real GPU did (an H200 under load,
a GPU that throttles) becomes a test fixture or a demo input that the exporter cannot tell
from the GPU. Readings come through GpuSampler, the exporter's own reader, so a trace holds
exactly what the exporter would have read; raw counters the sampler reduces (throttle reasons,
the ECC, PCIe replay and NVLink error totals) are read as NVML gives them, because the fake
needs them raw.
"""

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from gpu_insights_agent.contract.metrics import GpuMetric
from gpu_insights_agent.exporter.fake_nvml import NVLINK_COUNTER_NAMES, THROTTLE_NAMES
from gpu_insights_agent.exporter.gpu_sampler import GpuLostError, GpuSampler

#: Trace sample fields, by the exporter metric they come from.
_SAMPLE_FIELDS = {
    GpuMetric.POWER_DRAW: "power_w",
    GpuMetric.UTILIZATION: "utilization",
    GpuMetric.MEMORY_USED: "memory_used_bytes",
    GpuMetric.TEMPERATURE: "temperature_c",
    GpuMetric.SM_ACTIVE: "sm_active",
    GpuMetric.SM_OCCUPANCY: "sm_occupancy",
    GpuMetric.TENSOR_ACTIVE: "tensor_active",
    GpuMetric.SM_CLOCK: "sm_clock_mhz",
}


def _raw(nvml: Any, function: str, *args: Any) -> Any:
    """One NVML call; None where the GPU does not support it."""
    try:
        return getattr(nvml, function)(*args)
    except nvml.NVMLError:
        return None


def gpu_record(nvml: Any, sampler: GpuSampler) -> dict[str, Any]:
    handle = sampler.handle
    limit_mw = _raw(nvml, "nvmlDeviceGetEnforcedPowerLimit", handle)
    memory = _raw(nvml, "nvmlDeviceGetMemoryInfo", handle)
    ecc = _raw(
        nvml,
        "nvmlDeviceGetTotalEccErrors",
        handle,
        nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
        nvml.NVML_VOLATILE_ECC,
    )
    record: dict[str, Any] = {
        "kind": "gpu",
        "index": sampler.index,
        "name": sampler.name,
        "uuid": sampler.uuid,
        "power_limit_w": (limit_mw or 0) / 1000,
        "gpm": sampler.gpm_supported,
        "ecc": ecc is not None,
    }
    if memory is not None:
        record["memory_total_bytes"] = int(memory.total)
    record["nvlinks"] = len(sampler.nvlinks)
    return record


def sample_record(nvml: Any, sampler: GpuSampler, t: float) -> dict[str, Any]:
    """The GPU's readings now, as a trace sample; a lost GPU raises GpuLostError."""
    reading = sampler.sample()
    record: dict[str, Any] = {"kind": "sample", "t": round(t, 3), "index": sampler.index}
    for metric, name in _SAMPLE_FIELDS.items():
        value = reading.metrics.get(metric)
        if value is not None and math.isfinite(value):
            record[name] = int(value) if name == "memory_used_bytes" else round(value, 3)
    reasons = _raw(nvml, "nvmlDeviceGetCurrentClocksEventReasons", sampler.handle)
    if reasons is not None:
        record["throttle"] = [
            name for name, constant in THROTTLE_NAMES.items() if reasons & getattr(nvml, constant)
        ]
    total = _raw(
        nvml,
        "nvmlDeviceGetTotalEccErrors",
        sampler.handle,
        nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
        nvml.NVML_VOLATILE_ECC,
    )
    if total is not None:
        record["ecc_uncorrected_total"] = int(total)
    replays = _raw(nvml, "nvmlDeviceGetPcieReplayCounter", sampler.handle)
    if replays is not None:
        record["pcie_replay_total"] = int(replays)
    links = {
        str(link): {
            counter: int(value)
            for code, counter in NVLINK_COUNTER_NAMES.items()
            if (value := _raw(nvml, "nvmlDeviceGetNvLinkErrorCounter", sampler.handle, link, code))
            is not None
        }
        for link in sampler.nvlinks
    }
    if links:
        record["nvlink_errors_total"] = links
    if GpuMetric.ROW_REMAP_PENDING in reading.metrics:
        record["remap_pending"] = bool(reading.metrics[GpuMetric.ROW_REMAP_PENDING])
    record["pids"] = reading.pids
    return record


def record(
    nvml: Any,
    out: TextIO,
    *,
    seconds: float,
    interval_s: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Write the GPU records, then a sample per GPU every interval; returns samples written."""
    nvml.nvmlInit()
    samplers = [GpuSampler(nvml, index) for index in range(int(nvml.nvmlDeviceGetCount()))]
    written = 0
    try:
        for sampler in samplers:
            out.write(json.dumps(gpu_record(nvml, sampler)) + "\n")
        started = clock()
        lost: set[int] = set()
        while True:
            t = clock() - started
            for sampler in samplers:
                if sampler.index in lost:
                    continue
                try:
                    line = sample_record(nvml, sampler, t)
                except GpuLostError:
                    lost.add(sampler.index)
                    line = {"kind": "lost", "t": round(t, 3), "index": sampler.index}
                out.write(json.dumps(line) + "\n")
                written += 1
            out.flush()
            if t + interval_s > seconds:
                return written
            sleep(max(0.0, started + t + interval_s - clock()))
    finally:
        for sampler in samplers:
            sampler.close()
        nvml.nvmlShutdown()


def _positive(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m gpu_insights_agent.exporter.record_trace",
        description="record this node's GPUs as an NVML trace (JSON lines) for --trace",
    )
    p.add_argument("--seconds", type=_positive, default=60.0, help="how long to record (60)")
    p.add_argument("--interval", type=_positive, default=1.0, help="seconds between samples (1)")
    args = p.parse_args(argv)
    import pynvml

    try:
        written = record(pynvml, sys.stdout, seconds=args.seconds, interval_s=args.interval)
    except pynvml.NVMLError as err:
        print(f"record_trace: NVML: {err}", file=sys.stderr)
        return 1
    print(f"record_trace: {written} samples", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
