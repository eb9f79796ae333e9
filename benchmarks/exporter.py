"""The exporter's own cost: CPU per GPU per cycle, and memory over a simulated day.

Replays a simulated 8-GPU node through the real Exporter with a virtual clock (10 s cycles)
and a sink that encodes every document to EMF text and discards it, as a socket send would.
The fake NVML's Python calls are counted in the figure, so it is an upper bound: pynvml's
calls are C calls through ctypes.
"""

import gc
import logging
import sys
import time
from typing import Any

from gpu_insights_agent.emf.document import encode
from gpu_insights_agent.emf.sinks import BufferedSender
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from gpu_insights_agent.exporter.simulated_trace import SimulatedGpu, node_trace

GPUS = 8
INTERVAL_S = 10.0
DAY_S = 86_400.0


class EncodingSink:
    """Counts the bytes of the EMF lines and the (series, hour) pairs they publish: CloudWatch
    bills a custom metric for each hour it is published (prorated by the hour)."""

    def __init__(self) -> None:
        self.bytes = 0
        self.series_hours: set[tuple[str, tuple[str, ...], int]] = set()

    def send(self, documents: Any) -> None:
        self.bytes += sum(len(encode(d)) + 1 for d in documents)
        for d in documents:
            hour = int(d["_aws"]["Timestamp"] // 3_600_000)
            for directive in d["_aws"]["CloudWatchMetrics"]:
                for dimension_set in directive["Dimensions"]:
                    values = tuple(f"{k}={d[k]}" for k in dimension_set)
                    for metric in directive["Metrics"]:
                        self.series_hours.add((metric["Name"], values, hour))


def main() -> dict[str, float]:
    logging.disable(logging.WARNING)  # the simulated XIDs would log; the figures are the output
    roles = ["busy"] * 5 + ["idle", "thermal", "busy"]
    trace = node_trace([SimulatedGpu(role) for role in roles], duration_s=DAY_S, step_s=60)
    now = [0.0]
    sink = EncodingSink()
    exporter = Exporter(
        NvmlSource(FakeNvml(trace, clock=lambda: now[0], sleep=lambda _: None)),
        BufferedSender(sink),
        ExporterConfig(cluster_name="bench", node_name="node-0", interval_s=INTERVAL_S),
        clock=lambda: 1_764_000_000 + now[0],
    )
    exporter.start()
    assert exporter.watcher is not None
    cycles = int(DAY_S / INTERVAL_S)
    rss_at_hour = 0.0
    cpu_started = time.process_time()
    for cycle in range(cycles):
        now[0] = cycle * INTERVAL_S
        exporter.watcher.drain()
        exporter.collect_once()
        if cycle == int(3600 / INTERVAL_S):
            rss_at_hour = _heap_blocks()
    cpu = time.process_time() - cpu_started
    rss_at_day = _heap_blocks()
    per_gpu_cycle_ms = cpu / cycles / GPUS * 1000
    figures = {
        "cycles": float(cycles),
        "cpu_ms_per_gpu_per_cycle": per_gpu_cycle_ms,
        "heap_blocks_after_1h": rss_at_hour,
        "heap_blocks_after_24h": rss_at_day,
        "emf_bytes_per_gpu_per_cycle": sink.bytes / cycles / GPUS,
        # Metric-months billed for this node: series-hours over the hours of the day.
        "billed_series_per_node": len(sink.series_hours) / (DAY_S / 3600),
    }
    print(f"exporter: {GPUS} GPUs, {cycles} cycles of {INTERVAL_S:.0f} s (one simulated day)")
    print(f"  CPU per GPU per cycle     {per_gpu_cycle_ms:8.3f} ms    (goal < 1 ms)")
    print(f"  Python heap blocks, 1 h   {rss_at_hour:8,.0f}")
    print(f"  Python heap blocks, 24 h  {rss_at_day:8,.0f}       (goal: flat)")
    print(f"  EMF per GPU per cycle     {sink.bytes / cycles / GPUS:8.0f} bytes")
    print(f"  billed series, mean/hour  {figures['billed_series_per_node']:8.2f}")
    return figures


def _heap_blocks() -> float:
    """Live Python allocations after a collection: flat if nothing accumulates. (Max RSS
    would carry the peaks of whatever ran earlier in the same process.)"""
    gc.collect()
    return float(sys.getallocatedblocks())


if __name__ == "__main__":
    main()
