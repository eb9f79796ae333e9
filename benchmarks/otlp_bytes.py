"""Bytes per datapoint of the exporter's and the training emitter's real OTLP payloads.

Each sender runs as in production against a local OTLP/HTTP endpoint that keeps the bodies as
they arrive: the exporter (the real ``Exporter`` over a simulated 8-GPU training node, its GPUs
held by one pod that its cgroups and the kubelet's pod log directories name, through the real
``OtlpSink``: the SDK's protobuf, uncompressed unless ``OTEL_EXPORTER_OTLP_COMPRESSION`` says
otherwise, which the exporter does not set) and the emitter (a rank's one-minute window through
``TrainingMetrics(otlp_endpoint=...)``: JSON).

Two figures each:

- on the wire: the request bodies' bytes over their datapoints (what the node's network carries
  to the agent);
- billed: "Each OTLP data point contributes its serialized size to the ingestion volume ...
  Metric name, All labels (keys and values), Resource attributes, Timestamp and value" ("OTel
  metrics pricing and storage",
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/metrics-otel-pricing.html):
  each datapoint serialized alone as protobuf with its resource and metric (the agent re-sends
  what it receives to CloudWatch as OTLP protobuf, JSON or not), the mean over the datapoints.
  A floor: the agent's own resource attributes (cloud, host, the pod's workload) come on top.

cli/cost/exporter.py holds the billed figures (``OTLP_BYTES_PER_DATAPOINT``,
``TRAINING_OTLP_BYTES_PER_DATAPOINT``); tests/unit/cli/cost/test_estimate.py holds them to this
measurement.
"""

import gzip
import logging
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from unittest import mock

from google.protobuf import json_format  # type: ignore[import-untyped]
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)

from gpu_insights_agent.emf.sinks import BufferedSender
from gpu_insights_agent.emitter.training import TrainingMetrics
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from gpu_insights_agent.exporter.otlp_sink import OtlpSink
from gpu_insights_agent.exporter.simulated_trace import SimulatedGpu, node_trace

GPUS = 8
INTERVAL_S = 10.0
#: Ten minutes of cycles: the fault gauges' sparse hours and the steady cycles both in it.
CYCLES = 60
EPOCH = 1_764_000_000
#: Names of real length: an EKS node in us-west-2, an H100's UUID, a training pod.
CLUSTER = "ml-training"
NODE = "ip-10-0-141-27.us-west-2.compute.internal"
POD_UID = "5f9e3c1a-2b4d-4e6f-8a0b-1c2d3e4f5a6b"
NAMESPACE, POD = "research", "llama-70b-pretrain-worker-3"
JOB = "llama-70b-pretrain"


class Endpoint:
    """An OTLP/HTTP endpoint that keeps each body as it arrived, with its content encoding."""

    def __init__(self) -> None:
        self.bodies: list[tuple[str, str, bytes]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the agent's receiver serves

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                endpoint.bodies.append(
                    (self.headers["Content-Type"], self.headers.get("Content-Encoding", ""), body)
                )
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/metrics"

    def requests(self) -> list[ExportMetricsServiceRequest]:
        found = []
        for content_type, encoding, body in self.bodies:
            raw = gzip.decompress(body) if encoding == "gzip" else body
            request = ExportMetricsServiceRequest()
            if content_type == "application/json":
                json_format.Parse(raw, request)
            else:
                request.ParseFromString(raw)
            found.append(request)
        return found


@contextmanager
def endpoint() -> Iterator[Endpoint]:
    e = Endpoint()
    thread = threading.Thread(target=e.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield e
    finally:
        e.server.shutdown()
        e.server.server_close()


def billed_sizes(requests: list[ExportMetricsServiceRequest]) -> list[int]:
    """Each datapoint serialized alone, with its resource, scope and metric."""
    sizes = []
    for request in requests:
        for rm in request.resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    kind = metric.WhichOneof("data")
                    for point in getattr(metric, kind).data_points:
                        alone = ExportMetricsServiceRequest()
                        one_rm = alone.resource_metrics.add()
                        one_rm.resource.CopyFrom(rm.resource)
                        one_sm = one_rm.scope_metrics.add()
                        one_sm.scope.CopyFrom(sm.scope)
                        one = one_sm.metrics.add()
                        one.CopyFrom(metric)
                        data = getattr(one, kind)
                        del data.data_points[:]
                        data.data_points.add().CopyFrom(point)
                        sizes.append(alone.ByteSize())
    return sizes


def _figures(e: Endpoint) -> dict[str, float]:
    sizes = billed_sizes(e.requests())
    wire = sum(len(body) for _, _, body in e.bodies)
    return {
        "datapoints": float(len(sizes)),
        "requests": float(len(e.bodies)),
        "wire_bytes_per_datapoint": wire / len(sizes),
        "gzip_bytes_per_datapoint": sum(len(gzip.compress(b)) for *_, b in e.bodies) / len(sizes),
        "billed_bytes_per_datapoint": sum(sizes) / len(sizes),
    }


def _held_by_one_pod(root: Path) -> tuple[Path, Path]:
    """A /proc whose GPU processes (the simulated trace's PIDs 1000 + index) are in one pod's
    cgroup, and the kubelet's log directory that names the pod."""
    proc, pods = root / "proc", root / "pods"
    for index in range(GPUS):
        (proc / str(1000 + index)).mkdir(parents=True)
        (proc / str(1000 + index) / "cgroup").write_text(
            f"0::/kubepods.slice/kubepods-pod{POD_UID.replace('-', '_')}.slice/"
            f"cri-containerd-{index:064x}.scope\n"
        )
    (pods / f"{NAMESPACE}_{POD}_{POD_UID}").mkdir(parents=True)
    return proc, pods


def exporter_node(cycles: int = CYCLES) -> dict[str, float]:
    """An 8-GPU training node's cycles through the real exporter and OTLP sink."""
    trace = node_trace([SimulatedGpu("busy") for _ in range(GPUS)], duration_s=3600, step_s=60)
    now = [0.0]
    with tempfile.TemporaryDirectory() as tmp, endpoint() as e:
        proc, pods = _held_by_one_pod(Path(tmp))
        exporter = Exporter(
            NvmlSource(FakeNvml(trace, clock=lambda: now[0], sleep=lambda _: None)),
            BufferedSender(OtlpSink(e.url)),
            ExporterConfig(
                cluster_name=CLUSTER,
                node_name=NODE,
                interval_s=INTERVAL_S,
                proc_root=proc,
                pod_log_root=pods,
            ),
            clock=lambda: EPOCH + now[0],
        )
        exporter.start()
        for cycle in range(cycles):
            now[0] = cycle * INTERVAL_S
            exporter.collect_once()
        figures = _figures(e)
    figures["datapoints_per_cycle"] = figures["datapoints"] / cycles
    return figures


def rank_window(**sink: Any) -> TrainingMetrics:
    """A rank's one-minute window (steps with their batches, loss and learning rate; no
    heartbeat), flushed to ``sink`` (``otlp_endpoint=`` or ``sink=``) and drained: the window
    both the OTLP and the EMF figures are of. The caller closes it."""
    clock = [0.0]
    env = {"POD_NAME": POD, "POD_NAMESPACE": NAMESPACE, "TORCHELASTIC_RESTART_COUNT": "0"}
    with mock.patch.dict(os.environ, env):
        metrics = TrainingMetrics(
            job_name=JOB,
            cluster_name=CLUSTER,
            rank=3,
            node_name=NODE,
            samples_per_step=32,
            clock=lambda: clock[0],
            wall_clock=lambda: EPOCH + clock[0],
            heartbeat=False,
            **sink,
        )
        for _ in metrics.steps(range(60)):
            clock[0] += 1.0
            metrics.record(loss=2.0, learning_rate=1e-4)
        metrics.flush()
        assert metrics.drain(5), "the sink did not take the window"
    return metrics


def emitter_flush() -> dict[str, float]:
    """A rank's window through the emitter's OTLP/HTTP JSON path."""
    with endpoint() as e:
        metrics = rank_window(otlp_endpoint=e.url)
        figures = _figures(e)
        metrics.close(succeeded=True)
    return figures


def main() -> dict[str, dict[str, float]]:
    logging.disable(logging.WARNING)
    node, rank = exporter_node(), emitter_flush()
    print(f"OTLP bytes per datapoint ({GPUS}-GPU node, one pod on its GPUs; a rank's window)")
    print(f"  exporter (protobuf): {node['datapoints_per_cycle']:.1f} datapoints a cycle")
    print(f"    on the wire        {node['wire_bytes_per_datapoint']:8.1f} bytes")
    print(f"    gzip, if it were   {node['gzip_bytes_per_datapoint']:8.1f} bytes")
    print(f"    billed (alone)     {node['billed_bytes_per_datapoint']:8.1f} bytes")
    print(f"  emitter (JSON): {rank['datapoints']:.0f} datapoints a flush")
    print(f"    on the wire        {rank['wire_bytes_per_datapoint']:8.1f} bytes")
    print(f"    billed (alone)     {rank['billed_bytes_per_datapoint']:8.1f} bytes")
    return {"exporter": node, "emitter": rank}


if __name__ == "__main__":
    main()
