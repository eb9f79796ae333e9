"""The exporter over OTLP/HTTP against a receiver that decodes what arrives as the OTLP
specification defines it (``ExportMetricsServiceRequest`` from the opentelemetry-proto package,
POSTed to ``/v1/metrics`` as ``application/x-protobuf``: https://opentelemetry.io/docs/specs/otlp/
"OTLP/HTTP"), not a stand-in for the sink's own client."""

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)

from gpu_insights_agent.contract.metrics import DEFAULT_OTLP_ENDPOINT, GpuMetric
from gpu_insights_agent.emf.sinks import BufferedSender, SinkError
from gpu_insights_agent.exporter import cli
from gpu_insights_agent.exporter.device_source import XidEvent
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from gpu_insights_agent.exporter.otlp_sink import OtlpSink, datapoint_labels
from tests.unit.agent.exporter.nvml_trace import EPOCH, Clock, trace_lines
from tests.unit.agent.exporter.started import started_exporter


class Receiver:
    """An OTLP/HTTP metrics endpoint on a free local port; answers ``status`` (200 by default)."""

    def __init__(self) -> None:
        self.requests: list[ExportMetricsServiceRequest] = []
        self.content_types: list[str] = []
        self.paths: list[str] = []
        self.status = 200
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.paths.append(self.path)
                receiver.content_types.append(self.headers["Content-Type"])
                if receiver.status == 200:
                    request = ExportMetricsServiceRequest()
                    request.ParseFromString(body)
                    receiver.requests.append(request)
                reply = ExportMetricsServiceResponse().SerializeToString()
                self.send_response(receiver.status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/metrics"

    def points(self) -> list[tuple[dict[str, str], str, dict[str, str], float, int]]:
        """(resource attributes, metric name, datapoint attributes, value, time ns) of every
        datapoint received."""
        found = []
        for request in self.requests:
            for rm in request.resource_metrics:
                resource = {a.key: a.value.string_value for a in rm.resource.attributes}
                for sm in rm.scope_metrics:
                    for metric in sm.metrics:
                        assert metric.WhichOneof("data") == "gauge", metric.name
                        for p in metric.gauge.data_points:
                            labels = {a.key: a.value.string_value for a in p.attributes}
                            found.append(
                                (resource, metric.name, labels, p.as_double, p.time_unix_nano)
                            )
        return found


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    thread = threading.Thread(target=r.server.serve_forever, daemon=True)
    thread.start()
    yield r
    r.server.shutdown()
    r.server.server_close()


def _exporter(clock: Clock, sink: OtlpSink, **config: Any) -> Exporter:
    return started_exporter(clock, sink, **config)


def test_a_cycle_arrives_as_gauges_labelled_as_dcgm_labels_its_series(receiver: Receiver) -> None:
    clock = Clock(0)
    exporter = _exporter(clock, OtlpSink(receiver.url), alarm_shards=4)
    exporter.collect_once()
    clock.now = 10
    exporter.collect_once()
    assert receiver.paths == ["/v1/metrics", "/v1/metrics"]
    assert set(receiver.content_types) == {"application/x-protobuf"}
    points = receiver.points()
    resources = {tuple(sorted(r.items())) for r, *_ in points}
    assert resources == {
        (
            ("k8s.cluster.name", "train"),
            ("k8s.node.name", "node-a"),
            ("service.name", "gpu-insights-exporter"),
        )
    }
    second = {
        (name, labels["gpu"]): (value, labels)
        for _, name, labels, value, t in points
        if t == int((EPOCH + 10) * 1e9)
    }
    # GPU 0 at 630 W of its 700 W limit: 90 % of the enforced limit, power-throttled.
    value, labels = second[(GpuMetric.POWER_UTILIZATION, "0")]
    assert value == pytest.approx(90.0)
    assert labels == {
        "gpu": "0",
        "device": "nvidia0",
        "UUID": "GPU-h100-0",
        "modelName": "NVIDIA H100 80GB HBM3",
    }
    assert second[(GpuMetric.THROTTLED_POWER, "0")][0] == 1.0
    assert second[(GpuMetric.ECC_UNCORRECTED, "0")][0] == 3.0
    assert second[(GpuMetric.SM_ACTIVE, "0")][0] == 85.0
    assert second[(GpuMetric.HEALTHY, "1")][0] == 1.0
    assert second[(GpuMetric.HEALTHY, "1")][1]["modelName"] == "NVIDIA A10G"
    # The power brake's zero held from the first cycle goes out at its own time (fault_gate).
    held = [
        (value, t)
        for _, name, labels, value, t in points
        if name == GpuMetric.THROTTLED_POWER and labels["gpu"] == "0"
    ]
    assert held == [(0.0, int(EPOCH * 1e9)), (1.0, int((EPOCH + 10) * 1e9))]
    names = {name for _, name, *_ in points}
    # Readings DCGM's series carry and EMF keeps as properties are not sent again, and
    # nothing EMF-only (the alarm shard, a cluster-wide copy) rides along.
    assert GpuMetric.POWER_DRAW not in names
    assert GpuMetric.TEMPERATURE not in names
    assert not any("Shard" in labels for _, _, labels, *_ in points)
    per_gpu = [labels["gpu"] for _, name, labels, *_ in points if name == GpuMetric.HEALTHY]
    assert sorted(per_gpu) == ["0", "0", "1", "1", "2", "2"]


def test_an_xid_goes_out_at_once_with_its_code(receiver: Receiver) -> None:
    clock = Clock(0)
    exporter = _exporter(clock, OtlpSink(receiver.url))
    exporter.on_xid(XidEvent(gpu_index=2, code=79, time=EPOCH + 3.25, source="nvml"))
    (_request,) = receiver.requests  # one request, sent from on_xid, not at the next cycle
    xids = {name: (value, labels, t) for _, name, labels, value, t in receiver.points()}
    value, labels, t = xids[GpuMetric.XID_ERRORS]
    assert (value, labels["gpu"], labels["xid_code"], t) == (
        1.0,
        "2",
        "79",
        1_764_000_003_250_000_000,  # the event's own time, to the millisecond EMF keeps
    )
    assert labels["UUID"] == "GPU-h100-2"
    assert xids[GpuMetric.XID_FATAL_ERRORS][0] == 1.0  # 79: fallen off the bus


def test_a_refusing_endpoint_is_a_sink_error_and_the_buffer_keeps_the_batch(
    receiver: Receiver,
) -> None:
    receiver.status = 400  # not retryable: the SDK gives up at once
    clock = Clock(0)
    sender = BufferedSender(OtlpSink(receiver.url, timeout_s=1.0))
    exporter = Exporter(
        NvmlSource(FakeNvml(trace_lines(), clock=clock, sleep=lambda _: None)),
        sender,
        ExporterConfig(cluster_name="train", node_name="node-a"),
        clock=lambda: EPOCH + clock(),
    )
    exporter.start()
    documents = exporter.collect_once()
    assert len(sender) == len(documents) == 3
    assert sender.stats.failures == 1
    with pytest.raises(SinkError, match="not accepted"):
        OtlpSink(receiver.url, timeout_s=1.0).send(documents)
    receiver.status = 200
    assert sender.flush(force=True)
    assert {labels["gpu"] for _, _, labels, *_ in receiver.points()} == {"0", "1", "2"}


def test_default_endpoint_is_the_add_ons_agent_service() -> None:
    assert DEFAULT_OTLP_ENDPOINT == "http://cloudwatch-agent.amazon-cloudwatch:4318/v1/metrics"


def test_the_command_line_sends_otlp_where_the_flag_or_opentelemetrys_variable_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = ["--cluster-name", "train", "--node-name", "node-a", "--sink", "otlp"]
    monkeypatch.delenv(cli.OTLP_ENDPOINT_ENV, raising=False)
    sink = cli._sink(cli.parser().parse_args(base))
    assert isinstance(sink, OtlpSink)
    assert sink.endpoint == DEFAULT_OTLP_ENDPOINT
    monkeypatch.setenv(cli.OTLP_ENDPOINT_ENV, "http://collector:4318/v1/metrics")
    sink = cli._sink(cli.parser().parse_args(base))
    assert isinstance(sink, OtlpSink)
    assert sink.endpoint == "http://collector:4318/v1/metrics"
    flag = [*base, "--otlp-endpoint", "http://10.0.0.7:4318/v1/metrics"]
    sink = cli._sink(cli.parser().parse_args(flag))
    assert isinstance(sink, OtlpSink)
    assert sink.endpoint == "http://10.0.0.7:4318/v1/metrics"


def test_a_document_of_one_pod_names_its_uid() -> None:
    one = {"GpuIndex": "3", "PodUids": ["0d6c1b5e-3f0a-4c43-9f1e-7f4a8f0e2a11"]}
    assert datapoint_labels(one)["k8s.pod.uid"] == "0d6c1b5e-3f0a-4c43-9f1e-7f4a8f0e2a11"
    shared = {"GpuIndex": "3", "PodUids": ["a", "b"]}  # two pods on one GPU: neither is it
    assert "k8s.pod.uid" not in datapoint_labels(shared)


@pytest.mark.parametrize(
    ("endpoint", "problem"),
    [
        ("http://cloudwatch-agent:99999/v1/metrics", "out of range"),
        ("http://cloudwatch-agent:http/v1/metrics", "could not be cast"),
        ("tcp://cloudwatch-agent:4318/v1/metrics", "is not http"),
        ("http://cloudwatch-agent:4318", "is not http"),
    ],
)
def test_an_endpoint_no_request_could_reach_is_refused_at_start(
    endpoint: str, problem: str
) -> None:
    args = ["--cluster-name", "train", "--node-name", "node-a", "--sink", "otlp"]
    with pytest.raises(ValueError, match=problem):
        cli._sink(cli.parser().parse_args([*args, "--otlp-endpoint", endpoint]))
