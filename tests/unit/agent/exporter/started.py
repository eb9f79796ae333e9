"""The exporter over the NVML trace's fake devices (the exporter needs Python 3.11; the trace
itself stays importable by the emitter's tests on 3.9)."""

from typing import Any

from gpu_insights_agent.emf.sinks import BufferedSender, Sink
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from gpu_insights_agent.exporter.xid_event_log import XidEventLog
from tests.unit.agent.exporter.nvml_trace import EPOCH, Clock, trace_lines


def started_exporter(
    clock: Clock, sink: Sink | XidEventLog, *, extra: list[str] | None = None, **config: Any
) -> Exporter:
    """The exporter over the trace's fake NVML (and ``extra`` trace lines), sending to
    ``sink`` (through a ``BufferedSender``; OTLP mode's ``XidEventLog`` buffers its own),
    started."""
    nvml = FakeNvml(trace_lines(extra), clock=clock, sleep=lambda _: None)
    exporter = Exporter(
        NvmlSource(nvml),
        sink if isinstance(sink, XidEventLog) else BufferedSender(sink),
        ExporterConfig(cluster_name="train", node_name="node-a", **config),
        clock=lambda: EPOCH + clock(),
    )
    exporter.start()
    return exporter
