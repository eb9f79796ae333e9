"""The exporter over OTLP/HTTP against a receiver that decodes what arrives as the OTLP
specification defines it (``ExportMetricsServiceRequest`` from the opentelemetry-proto package,
POSTed to ``/v1/metrics`` as ``application/x-protobuf``: https://opentelemetry.io/docs/specs/otlp/
"OTLP/HTTP"), not a stand-in for the sink's own client."""

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)

from gpu_insights_agent.contract.metrics import DEFAULT_OTLP_ENDPOINT, GpuMetric
from gpu_insights_agent.emf.document import encode
from gpu_insights_agent.emf.sinks import (
    BufferedSender,
    Sink,
    SinkError,
    SinkRefusedError,
    TcpEmfSink,
)
from gpu_insights_agent.exporter import cli
from gpu_insights_agent.exporter.device_source import XidEvent
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from gpu_insights_agent.exporter.otlp_sink import OtlpSink, resource_attributes
from gpu_insights_agent.exporter.xid_event_log import XidEventLog
from tests.unit.agent.emf.emf_contract import valid_emf
from tests.unit.agent.exporter.nvml_trace import EPOCH, Clock, trace_lines
from tests.unit.agent.exporter.started import started_exporter
from tests.unit.agent.otlp.otlp_json import Row, rows


class Receiver:
    """An OTLP/HTTP metrics endpoint on a free local port; answers ``status`` (200 by default)."""

    def __init__(self) -> None:
        self.requests: list[ExportMetricsServiceRequest] = []
        self.content_types: list[str] = []
        self.paths: list[str] = []
        self.status = 200
        #: Seconds to wait before answering (an endpoint that does not answer in time).
        self.delay_s = 0.0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.paths.append(self.path)
                if receiver.delay_s:
                    time.sleep(receiver.delay_s)
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
        gauge datapoint received."""
        return [
            (r.resource, r.name, r.labels, r.value, r.time_ns)
            for r in self.rows()
            if r.kind == "gauge"
        ]

    def rows(self) -> list[Row]:
        """Every datapoint received, gauge or sum."""
        return [row for request in self.requests for row in rows(request)]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    thread = threading.Thread(target=r.server.serve_forever, daemon=True)
    thread.start()
    yield r
    r.server.shutdown()
    r.server.server_close()


def _exporter(clock: Clock, sink: Sink | XidEventLog, **config: Any) -> Exporter:
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
    # The SM clock, a property of the EMF line (no custom metric in Classic), is a gauge here:
    # the fail-slow page reads it with PromQL.
    assert second[(GpuMetric.SM_CLOCK, "0")][0] == 1980.0
    assert second[(GpuMetric.SM_CLOCK, "0")][1]["gpu"] == "0"
    assert not any("Shard" in labels for _, _, labels, *_ in points)
    per_gpu = [labels["gpu"] for _, name, labels, *_ in points if name == GpuMetric.HEALTHY]
    assert sorted(per_gpu) == ["0", "0", "1", "1", "2", "2"]


def test_xids_are_counters_per_gpu_and_code_sent_at_once_from_a_zero(
    receiver: Receiver,
) -> None:
    """``increase(gpu_xid_errors[5m])`` sees every XID: a running count per GPU and code since
    the exporter started (a cumulative monotonic sum), from a zero just before a code's first
    XID (PromQL's increase needs two samples); before, each XID was a gauge of 1."""
    clock = Clock(0)
    started = int((EPOCH - 60) * 1e9)
    exporter = _exporter(clock, OtlpSink(receiver.url, start_ns=started))
    for t, code in ((3.25, 79), (4.0, 13), (9.5, 79)):
        exporter.on_xid(XidEvent(gpu_index=2, code=code, time=EPOCH + t, source="nvml"))
    assert len(receiver.requests) == 3  # each sent from on_xid, not at the next cycle
    found = receiver.rows()
    assert {(r.kind, r.monotonic, r.temporality, r.start_ns) for r in found} == {
        ("sum", True, 2, started)  # AGGREGATION_TEMPORALITY_CUMULATIVE
    }
    # Each at the event's own time, to the millisecond EMF keeps.
    t79, t13, again = ((int(EPOCH) * 1000 + ms) * 10**6 for ms in (3250, 4000, 9500))
    series: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for r in found:
        series.setdefault((r.name, r.labels["xid_code"]), [])
    for r in found:
        series[(r.name, r.labels["xid_code"])].append((r.time_ns, r.value))
    assert series[(GpuMetric.XID_ERRORS, "79")] == [(t79 - 10**6, 0.0), (t79, 1.0), (again, 2.0)]
    assert series[(GpuMetric.XID_FATAL_ERRORS, "79")] == series[(GpuMetric.XID_ERRORS, "79")]
    assert series[(GpuMetric.XID_ERRORS, "13")] == [(t13 - 10**6, 0.0), (t13, 1.0)]
    assert (GpuMetric.XID_FATAL_ERRORS, "13") not in series  # 13 is the application's fault
    labels = found[0].labels
    assert (labels["gpu"], labels["UUID"], labels["device"]) == ("2", "GPU-h100-2", "nvidia2")


def test_an_otlp_exporter_still_writes_its_xid_events_to_its_log_group_without_a_metric(
    receiver: Receiver,
) -> None:
    """The XID page path (the notifier's subscription on ``$.XidCode`` in the exporter's log
    group) holds in OTLP mode: each XID event document goes to the agent's EMF listener with no
    metric directive (a log line, no custom metric), its metrics over OTLP; cycles over OTLP
    only."""
    logged: list[dict[str, Any]] = []

    class Listener:
        def send(self, documents: Any) -> None:
            logged.extend(documents)

    clock = Clock(0)
    exporter = _exporter(clock, XidEventLog(OtlpSink(receiver.url), Listener()))
    exporter.collect_once()
    exporter.on_xid(XidEvent(gpu_index=1, code=48, time=EPOCH + 2, source="nvml"))
    (event,) = logged
    assert (event["XidCode"], event["GpuIndex"], event["XidCount"]) == ("48", "1", 1)
    assert event["_aws"]["CloudWatchMetrics"] == []
    assert event["_aws"]["LogGroupName"] == "/aws/gpu-insights/train/exporter"
    valid_emf(encode(event))
    assert {r.name for r in receiver.rows() if r.kind == "sum"} == {
        GpuMetric.XID_ERRORS,
        GpuMetric.XID_FATAL_ERRORS,
    }


def _sent_through(sender: BufferedSender) -> tuple[Exporter, list[dict[str, Any]]]:
    clock = Clock(0)
    exporter = Exporter(
        NvmlSource(FakeNvml(trace_lines(), clock=clock, sleep=lambda _: None)),
        sender,
        ExporterConfig(cluster_name="train", node_name="node-a"),
        clock=lambda: EPOCH + clock(),
    )
    exporter.start()
    return exporter, exporter.collect_once()


@pytest.mark.parametrize("status", [503, None])
def test_a_retryable_failure_is_a_sink_error_and_the_buffer_keeps_the_batch(
    receiver: Receiver, status: int | None
) -> None:
    """503 (OTLP's retryable statuses) or no answer in time: kept for the retry."""
    if status is None:
        receiver.delay_s = 1.0
    else:
        receiver.status = status
    sender = BufferedSender(OtlpSink(receiver.url, timeout_s=0.3))
    _, documents = _sent_through(sender)
    assert len(sender) == len(documents) == 3
    assert (sender.stats.failures, sender.stats.refused) == (1, 0)
    match = "HTTP 503 Service Unavailable" if status else "not accepted"
    with pytest.raises(SinkError, match=match) as e:
        OtlpSink(receiver.url, timeout_s=0.3).send(documents)
    assert not isinstance(e.value, SinkRefusedError)
    receiver.status, receiver.delay_s = 200, 0.0
    assert sender.flush(force=True)
    assert {labels["gpu"] for _, _, labels, *_ in receiver.points()} == {"0", "1", "2"}


@pytest.mark.parametrize("status", [400, 404])
def test_a_batch_refused_for_good_is_dropped_counted_and_never_sent_again(
    receiver: Receiver, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    """A 400 (bad data) or a 404 (an add-on with no OTLP endpoint, a wrong path) never
    succeeds: "All other 4xx or 5xx response status codes MUST NOT be retried" (OTLP/HTTP
    "Failures"). Retried head-first, the batch held every later document behind it."""
    receiver.status = status
    sender = BufferedSender(OtlpSink(receiver.url, timeout_s=1.0))
    exporter, documents = _sent_through(sender)
    assert (len(sender), sender.stats.refused, sender.stats.failures) == (0, len(documents), 0)
    (line,) = [r.getMessage() for r in caplog.records if "not sent again" in r.getMessage()]
    assert f"HTTP {status}" in line
    assert sender.flush(force=True)  # nothing left to send again
    assert len(receiver.paths) == 1
    receiver.status = 200
    exporter.collect_once()  # the next cycle is sent as ever
    assert len(receiver.paths) == 2
    assert len(receiver.requests) == 1


class _Listener:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def send(self, documents: Any) -> None:
        self.lines.extend(documents)


@pytest.mark.parametrize("status", [400, 404, 503, None])
def test_the_xid_line_reaches_the_listener_whatever_the_otlp_endpoint_does(
    receiver: Receiver, status: int | None
) -> None:
    """The XID page path in OTLP mode: with the OTLP endpoint refusing (400, 404), answering
    503 or not answering in time, each XID's log line still reaches the agent's listener, at
    once and once. (Sent only after OTLP took the batch, it reached it 0 times.)"""
    if status is None:
        receiver.delay_s = 1.0
    else:
        receiver.status = status
    listener = _Listener()
    sender = XidEventLog(OtlpSink(receiver.url, timeout_s=0.3), listener)
    exporter = _exporter(Clock(0), sender)
    for n in range(3):
        exporter.collect_once()
        exporter.on_xid(XidEvent(gpu_index=n, code=79, time=EPOCH + 2 + n, source="nvml"))
    assert [(line["GpuIndex"], line["XidCode"]) for line in listener.lines] == [
        ("0", "79"),
        ("1", "79"),
        ("2", "79"),
    ]
    # Refused for good: dropped and counted; else kept for the retry.
    refused = status in (400, 404)
    assert (sender.metrics.stats.refused > 0, len(sender.metrics) == 0) == (refused, refused)


def test_default_endpoint_is_the_add_ons_agent_service() -> None:
    assert DEFAULT_OTLP_ENDPOINT == "http://cloudwatch-agent.amazon-cloudwatch:4318/v1/metrics"


def test_the_command_line_sends_otlp_where_the_flag_or_opentelemetrys_variable_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = ["--cluster-name", "train", "--node-name", "node-a", "--sink", "otlp"]
    monkeypatch.delenv(cli.OTLP_ENDPOINT_ENV, raising=False)

    def endpoints(argv: list[str]) -> tuple[str, tuple[str, int]]:
        sender = cli._sender(cli.parser().parse_args(argv))
        assert isinstance(sender, XidEventLog)
        assert isinstance(sender.metrics.sink, OtlpSink)
        assert isinstance(sender.log.sink, TcpEmfSink)  # the XID events' log lines
        return sender.metrics.sink.endpoint, sender.log.sink._address

    assert endpoints(base) == (
        DEFAULT_OTLP_ENDPOINT,
        ("cloudwatch-agent.amazon-cloudwatch", 25888),
    )
    monkeypatch.setenv(cli.OTLP_ENDPOINT_ENV, "http://collector:4318/v1/metrics")
    assert endpoints(base)[0] == "http://collector:4318/v1/metrics"
    flag = [*base, "--otlp-endpoint", "http://10.0.0.7:4318/v1/metrics"]
    assert endpoints(flag)[0] == "http://10.0.0.7:4318/v1/metrics"


def test_a_gpu_held_by_one_pod_is_on_that_pods_resource(receiver: Receiver, tmp_path: Any) -> None:
    """One resource per node and pod, named as the add-on names DCGM's (k8s.pod.name,
    k8s.namespace.name), from the process's cgroup and the kubelet's pod log directories; a GPU
    no pod holds is on the node's resource alone."""
    uid = "1f2e3d4c-5b6a-4789-8abc-def012345678"
    proc, pods = tmp_path / "proc", tmp_path / "pods"
    (proc / "4242").mkdir(parents=True)
    (proc / "4242" / "cgroup").write_text(
        f"0::/kubepods.slice/kubepods-pod{uid.replace('-', '_')}.slice/cri-containerd-abc.scope\n"
    )
    pods.mkdir()
    (pods / f"nlp_bert-worker-0_{uid}").mkdir()
    exporter = _exporter(Clock(0), OtlpSink(receiver.url), proc_root=proc, pod_log_root=pods)
    exporter.collect_once()
    by_gpu = {labels["gpu"]: resource for resource, _, labels, *_ in receiver.points()}
    node = {
        "k8s.cluster.name": "train",
        "k8s.node.name": "node-a",
        "service.name": "gpu-insights-exporter",
    }
    assert by_gpu["0"] == {
        **node,
        "k8s.pod.uid": uid,
        "k8s.pod.name": "bert-worker-0",
        "k8s.namespace.name": "nlp",
    }
    assert by_gpu["2"] == node  # the trace's GPU 2 runs no process
    assert len(receiver.requests[0].resource_metrics) == 2
    shared = {"ClusterName": "c", "NodeName": "n", "PodUids": ["a", "b"], "Pods": ["x/a", "x/b"]}
    assert "k8s.pod.uid" not in resource_attributes(shared)  # two pods on one GPU: neither
    unnamed = {"ClusterName": "c", "NodeName": "n", "PodUids": ["a"]}
    assert resource_attributes(unnamed)["k8s.pod.uid"] == "a"  # no pod log root: the UID only
    assert "k8s.pod.name" not in resource_attributes(unnamed)


def test_the_container_holding_a_gpu_is_its_resources_k8s_container_name(
    receiver: Receiver, tmp_path: Any
) -> None:
    """DCGM's series carry the container that holds the GPU as ``k8s.container.name`` (the
    add-on promotes dcgm-exporter's ``container`` label: cli/demo/realistic/otel.py); so do the
    exporter's, named from the process's cgroup and the kubelet's log symlink. Before: never.
    The XID event's log line (EMF) keeps EMF's fields: no container."""
    uid, cid = "1f2e3d4c-5b6a-4789-8abc-def012345678", "ab" * 32
    proc, pods, containers = tmp_path / "proc", tmp_path / "pods", tmp_path / "containers"
    (proc / "4242").mkdir(parents=True)
    (proc / "4242" / "cgroup").write_text(f"12:memory:/kubepods/burstable/pod{uid}/{cid}\n")
    for container in ("data-loader", "trainer"):
        (pods / f"nlp_bert-worker-0_{uid}" / container).mkdir(parents=True)
    containers.mkdir()
    (containers / f"bert-worker-0_nlp_trainer-{cid}.log").symlink_to("/nowhere/0.log")
    logged: list[dict[str, Any]] = []

    class Listener:
        def send(self, documents: Any) -> None:
            logged.extend(documents)

    exporter = _exporter(
        Clock(0),
        XidEventLog(OtlpSink(receiver.url), Listener()),
        proc_root=proc,
        pod_log_root=pods,
        container_log_root=containers,
        name_containers=True,
    )
    exporter.collect_once()
    exporter.on_xid(XidEvent(gpu_index=0, code=13, time=EPOCH + 1, source="nvml"))
    by_gpu = {row.labels["gpu"]: row.resource for row in receiver.rows()}
    assert by_gpu["0"]["k8s.container.name"] == "trainer"
    assert by_gpu["0"]["k8s.pod.name"] == "bert-worker-0"
    assert {
        row.resource.get("k8s.container.name") for row in receiver.rows() if row.kind == "sum"
    } == {"trainer"}
    assert "k8s.container.name" not in by_gpu["2"]
    (event,) = logged
    assert event["XidCode"] == "13"
    assert "Container" not in event
    # Two pods on one GPU: no pod, so no container either.
    shared = {"ClusterName": "c", "NodeName": "n", "PodUids": ["a", "b"], "Container": "x"}
    assert "k8s.container.name" not in resource_attributes(shared)


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
        cli._sender(cli.parser().parse_args([*args, "--otlp-endpoint", endpoint]))
