import io
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from gpu_insights_agent.emf.document import EmfDocument, emf_document, parse_emf_line
from gpu_insights_agent.emf.sinks import BufferedSender, SinkError, StdoutSink, TcpEmfSink
from tests.unit.agent.exporter.nvml_trace import Clock


def _doc(n: int) -> EmfDocument:
    return emf_document(
        namespace="GpuInsights",
        timestamp_ms=1_000 * n,
        dimension_sets=[["ClusterName"]],
        dimensions={"ClusterName": "train"},
        metrics={"gpu_utilization": float(n)},
        units={"gpu_utilization": "Percent"},
    )


class FlakySink:
    """Fails while ``down`` is set; records what it delivered."""

    def __init__(self) -> None:
        self.down = False
        self.calls = 0
        self.delivered: list[float] = []

    def send(self, documents: Any) -> None:
        self.calls += 1
        if self.down:
            raise SinkError("endpoint down")
        self.delivered.extend(d["gpu_utilization"] for d in documents)


def test_failure_keeps_documents_and_recovery_delivers_them_in_order() -> None:
    clock = Clock(0)
    sink = FlakySink()
    sender = BufferedSender(sink, capacity=100, base_backoff_s=1, max_backoff_s=8, clock=clock)
    sink.down = True
    sender.submit([_doc(1), _doc(2)])
    assert sender.flush() is False
    assert len(sender) == 2
    assert sender.stats.failures == 1
    sink.down = False
    sender.submit([_doc(3)])
    assert sender.flush() is False  # still inside the 1 s backoff: no attempt made
    assert sink.calls == 1
    clock.now = 1.0
    assert sender.flush() is True
    assert sink.delivered == [1.0, 2.0, 3.0]
    assert sender.stats.sent == 3
    assert len(sender) == 0


def test_backoff_doubles_up_to_its_ceiling() -> None:
    clock = Clock(0)
    sink = FlakySink()
    sink.down = True
    sender = BufferedSender(sink, base_backoff_s=1, max_backoff_s=4, clock=clock)
    sender.submit([_doc(1)])
    attempts_at = []
    for tick in range(0, 20):
        clock.now = float(tick)
        calls = sink.calls
        sender.flush()
        if sink.calls > calls:
            attempts_at.append(tick)
    assert attempts_at == [0, 1, 3, 7, 11, 15, 19]


def test_buffer_is_bounded_and_counts_what_it_dropped() -> None:
    sink = FlakySink()
    sink.down = True
    sender = BufferedSender(sink, capacity=50, clock=Clock(0))
    for n in range(1, 201):
        sender.submit([_doc(n)])
    assert len(sender) == 50
    assert sender.stats.dropped == 150
    sink.down = False
    assert sender.flush(force=True)
    assert sink.delivered == [float(n) for n in range(151, 201)]  # the newest survive


def test_stdout_sink_writes_one_emf_line_per_document() -> None:
    stream = io.StringIO()
    StdoutSink(stream).send([_doc(1), _doc(2)])
    lines = stream.getvalue().splitlines()
    assert [parse_emf_line(line)["gpu_utilization"] for line in lines] == [1.0, 2.0]


@pytest.fixture
def emf_server() -> Iterator[tuple[socket.socket, list[str]]]:
    """A loopback stand-in for the agent's EMF listener."""
    server = socket.create_server(("127.0.0.1", 0))
    received: list[str] = []

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection, connection.makefile("r") as lines:
                received.extend(line.rstrip("\n") for line in lines)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server, received
    server.close()


def test_tcp_sink_delivers_lines_and_reconnects(
    emf_server: tuple[socket.socket, list[str]],
) -> None:
    server, received = emf_server
    port = server.getsockname()[1]
    sink = TcpEmfSink("127.0.0.1", port)
    sink.send([_doc(1), _doc(2)])
    sink.close()
    sink.send([_doc(3)])
    sink.close()
    for _ in range(100):
        if len(received) == 3:
            break
        threading.Event().wait(0.02)
    assert [parse_emf_line(line)["gpu_utilization"] for line in received] == [1.0, 2.0, 3.0]


def test_tcp_sink_raises_sink_error_when_nobody_listens() -> None:
    unused = socket.create_server(("127.0.0.1", 0))
    port = unused.getsockname()[1]
    unused.close()
    with pytest.raises(SinkError, match=f"tcp://127.0.0.1:{port}"):
        TcpEmfSink("127.0.0.1", port, timeout_s=0.5).send([_doc(1)])


class RestartingListener:
    """A loopback EMF listener that restarts (closes its connection and its listening socket,
    then listens again on the same port) after every ``every`` lines it reads, as the
    CloudWatch agent does when it restarts. Lines in its socket buffer that it has not read
    when it closes are lost, as they would be in the agent."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.received: list[str] = []
        self.restarts = 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        since_restart = 0
        while not self._stop.is_set():
            self._server.settimeout(0.1)
            try:
                connection, _ = self._server.accept()
            except OSError:
                continue
            with connection, connection.makefile("r") as lines:
                for line in lines:
                    self.received.append(line.rstrip("\n"))
                    since_restart += 1
                    if since_restart == self.every:
                        break
            if since_restart == self.every and not self._stop.is_set():
                since_restart = 0
                self.restarts += 1
                self._server.close()
                self._server = socket.create_server(("127.0.0.1", self.port))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self._server.close()


def test_tcp_sink_loses_nothing_when_the_agent_restarts_40_times() -> None:
    listener = RestartingListener(every=50)
    sink = TcpEmfSink("127.0.0.1", listener.port, timeout_s=0.5, settle_s=0.05)
    sender = BufferedSender(sink, chunk=10, clock=Clock(0))
    started = time.monotonic()
    try:
        for n in range(2000):
            sender.submit([_doc(n)])
            if n % 10 == 9:
                while not sender.flush(force=True):
                    time.sleep(0.002)  # the listener is restarting: retry
                time.sleep(0.002)
        deadline = time.monotonic() + 5
        sent = {float(n) for n in range(2000)}
        while {parse_emf_line(x)["gpu_utilization"] for x in listener.received} != sent:
            assert time.monotonic() < deadline, "documents lost"
            sender.submit([])
            sink.send([])  # a later check finds a closed connection and resends
            time.sleep(0.01)
    finally:
        sink.close()
        listener.stop()
    values = [parse_emf_line(x)["gpu_utilization"] for x in listener.received]
    assert set(values) == {float(n) for n in range(2000)}  # none lost
    assert listener.restarts >= 39
    duplicates = len(values) - 2000
    # Duplicates are lines the listener read before it closed and that were sent again: the
    # sink cannot know how far the agent read, so it resends every unconfirmed batch. Every
    # duplicate is counted by the sink (resent: its backlog; rewritten: a batch it raised on,
    # which the sender retried).
    assert 0 <= duplicates <= sink.stats.resent + sink.stats.rewritten
    assert sender.stats.sent == 2000
    assert time.monotonic() - started < 10
