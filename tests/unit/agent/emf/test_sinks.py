import contextlib
import io
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from gpu_insights_agent.emf.document import EmfDocument, emf_document, parse_emf_line
from gpu_insights_agent.emf.sinks import BufferedSender, SinkError, StdoutSink, TcpEmfSink
from tests.unit.agent.exporter.nvml_trace import Clock

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer


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


def test_tcp_sink_resends_every_batch_written_within_settle_s_when_the_agent_drops_them() -> None:
    """Three batches written within ``settle_s``, then the agent closes without reading them:
    all three go again, ahead of the next, on the new connection (not only the last one)."""
    clock = Clock(0)
    server = socket.create_server(("127.0.0.1", 0))
    sink = TcpEmfSink("127.0.0.1", server.getsockname()[1], settle_s=2.0, clock=clock)
    for n in (1, 2, 3):
        sink.send([_doc(n)])
        clock.now += 0.5
    dropped, _ = server.accept()
    dropped.close()  # unread: the agent restarted
    sink.send([_doc(4)])
    second, _ = server.accept()
    sink.close()
    with server, second, second.makefile("rb") as lines:
        values = [parse_emf_line(line.decode())["gpu_utilization"] for line in lines]
    assert values == [1.0, 2.0, 3.0, 4.0]
    assert (sink.stats.connects, sink.stats.resent) == (2, 3)


class RestartingListener:
    """A loopback EMF listener that restarts (closes its connection and its listening socket,
    then listens again on the same port) after every ``every`` lines it reads, as the
    CloudWatch agent does when it restarts. Lines in its socket buffer that it has not read
    when it closes are lost, as they would be in the agent.

    It reads only while ``reading`` is set: the test decides when time passes for it, so what
    sits unread at each restart does not depend on how fast the machine schedules its thread.
    It counts the bytes it read from each connection, by the client's port."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.received: list[str] = []
        self.restarts = 0
        self.read_from: dict[int, int] = {}
        self.reading = threading.Event()
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
                connection, (_, client) = self._server.accept()
            except OSError:
                continue
            with connection, connection.makefile("rb") as lines:
                for line in lines:
                    self.reading.wait()
                    self.received.append(line.decode().rstrip("\n"))
                    self.read_from[client] = self.read_from.get(client, 0) + len(line)
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
        self.reading.set()
        self._thread.join(timeout=2)
        self._server.close()


class CountingSocket(socket.socket):
    """A client socket that counts the bytes ``sendall`` handed to the kernel."""

    written = 0

    def sendall(self, data: "ReadableBuffer", flags: int = 0, /) -> None:
        super().sendall(data, flags)
        self.written += memoryview(data).nbytes


class Connector:
    """The sink's ``connect``: real loopback connections, the latest kept to look at."""

    def __init__(self) -> None:
        self.latest: CountingSocket | None = None

    def __call__(self, address: tuple[str, int], timeout: float) -> socket.socket:
        sock = CountingSocket(socket.AF_INET, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(address)
        except OSError:
            sock.close()
            raise
        self.latest = sock
        return sock

    def settled(self, listener: RestartingListener) -> bool:
        """The listener has read every byte written on the sink's connection, or the sink can
        see that connection closed (the listener restarted, with or without reading it)."""
        sock = self.latest
        if sock is None or sock.fileno() == -1:  # the sink closed it itself
            return True
        if listener.read_from.get(sock.getsockname()[1], 0) == sock.written:
            return True
        readable, _, _ = select.select([sock], [], [], 0)  # the listener never writes: EOF
        return bool(readable)


def wait_for(condition: Callable[[], bool], what: str, ceiling_s: float = 60) -> None:
    """Polls ``condition`` until it holds; the ceiling only turns a hang into a failure."""
    deadline = time.monotonic() + ceiling_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.001)


def test_tcp_sink_loses_nothing_when_the_agent_restarts_40_times() -> None:
    """The sink's promise holds for an agent that reads what it receives within ``settle_s``.
    Time is the test's: the sink writes three batches, then ``settle_s`` passes (the sink's
    clock moves on) once the listener has read all the sink wrote or the sink can see the
    connection closed. A restart can cut a period short with two or three batches unread,
    and every one of them must be sent again, whatever the machine's speed."""
    settle_s, chunk = 1.0, 5
    listener = RestartingListener(every=50)
    connector = Connector()
    clock = Clock(0)
    sink = TcpEmfSink(
        "127.0.0.1", listener.port, timeout_s=5, settle_s=settle_s, connect=connector, clock=clock
    )
    sender = BufferedSender(sink, chunk=chunk, clock=Clock(0))
    sent = {float(n) for n in range(2000)}

    def settle() -> None:
        listener.reading.set()
        wait_for(lambda: connector.settled(listener), "the listener stopped reading")
        listener.reading.clear()
        clock.now += settle_s

    def all_received() -> bool:
        settle()
        if {parse_emf_line(x)["gpu_utilization"] for x in listener.received} == sent:
            return True
        # A check finds the closed connection and resends the unconfirmed batches; refused
        # while the listener restarts, they stay for the next try.
        with contextlib.suppress(SinkError):
            sink.send([])
        return False

    try:
        for n in range(2000):
            sender.submit([_doc(n)])
            if n % chunk == chunk - 1:
                # Refused while the listener restarts: retried until it listens again.
                wait_for(lambda: sender.flush(force=True), "the listener never came back")
            if n % (3 * chunk) == 3 * chunk - 1:
                settle()
        wait_for(all_received, "documents lost")
    finally:
        sink.close()
        listener.stop()
    values = [parse_emf_line(x)["gpu_utilization"] for x in listener.received]
    assert set(values) == sent  # none lost
    assert listener.restarts >= 39
    duplicates = len(values) - 2000
    # Duplicates are lines the listener read before it closed and that were sent again: the
    # sink cannot know how far the agent read, so it resends every unconfirmed batch. Every
    # duplicate is counted by the sink (resent: its backlog; rewritten: a batch it raised on,
    # which the sender retried).
    assert 0 <= duplicates <= sink.stats.resent + sink.stats.rewritten
    assert sender.stats.sent == 2000
