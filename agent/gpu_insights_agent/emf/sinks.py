"""Where EMF documents go, and the bounded buffer that keeps a failing sink from costing
memory or blocking collection.

Sinks raise SinkError on failure and keep no state of their own about what was sent; the
BufferedSender owns retries, so every sink gets the same backoff and the same memory bound.
"""

import logging
import select
import socket
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, Optional, Protocol, TextIO

from gpu_insights_agent.emf.document import EmfDocument, encode, metric_data, namespace_of

log = logging.getLogger(__name__)

#: PutMetricData takes at most 1,000 datums per call.
PUT_METRIC_DATA_BATCH = 1000


class SinkError(Exception):
    """A sink could not deliver; the documents stay buffered for a retry."""


class SinkRefusedError(SinkError):
    """The sink's endpoint refused the batch with an answer that says sending it again cannot
    help (``status``: OTLP/HTTP's non-retryable statuses, ``otlp.http_sink.retryable``): the
    sender drops the batch, counts it and logs the status once; it is never sent again."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class Sink(Protocol):
    def send(self, documents: Sequence[EmfDocument]) -> None: ...


class Sender(Protocol):
    """What the exporter hands its documents to: a ``BufferedSender``, or one per destination
    (``exporter.xid_event_log.XidEventLog``)."""

    def submit(self, documents: Sequence[EmfDocument]) -> None: ...

    def flush(self, *, force: bool = False) -> bool: ...

    def __len__(self) -> int: ...


class StdoutSink:
    """One EMF line per document; on EKS, Fluent Bit ships container stdout to CloudWatch Logs."""

    def __init__(self, stream: Optional[TextIO] = None) -> None:
        self._stream = stream or sys.stdout

    def send(self, documents: Sequence[EmfDocument]) -> None:
        try:
            self._stream.write("".join(encode(d) + "\n" for d in documents))
            self._stream.flush()
        except (OSError, ValueError) as err:
            raise SinkError(f"stdout: {err}") from err


def peer_closed(sock: socket.socket) -> bool:
    """True when the other end closed the connection (EOF or reset) or it failed.

    The EMF listener never writes, so a readable socket means end of file or an error.
    Anything it did send is read and discarded."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return False
        return sock.recv(4096) == b""
    except (OSError, ValueError):
        return True


@dataclass
class TcpStats:
    connects: int = 0
    #: Documents sent again on a new connection because the old one closed soon after.
    resent: int = 0
    #: Documents written on a connection found closed right after the write; the sink
    #: raised, so the caller sends them again (the agent may have read some of them).
    rewritten: int = 0
    #: Unconfirmed documents dropped to keep the resend backlog bounded.
    dropped: int = 0


class TcpEmfSink:
    """The CloudWatch agent's EMF listener (newline-delimited JSON over TCP, port 25888).

    At-least-once delivery across agent restarts. TCP accepts a write into a connection the
    agent has already closed (the first write after its FIN succeeds; the reset comes back
    later), and the listener sends no acknowledgement, so a batch that ``sendall`` took is not
    yet delivered. The sink therefore checks the connection for EOF or reset before and after
    each write, reconnects when it closed, and keeps every batch written in the last
    ``settle_s`` seconds as unconfirmed: when the connection turns out closed, those batches
    are sent again on the new connection ahead of the new one. A batch is confirmed once a
    check at least ``settle_s`` after its write finds the connection still open.

    Residual window, stated honestly: a batch is lost only if the agent received it into its
    socket buffer and then stopped without reading it more than ``settle_s`` after the write
    (an agent reads its listener continuously, so that takes an agent stalled for longer than
    ``settle_s`` and then killed). Resending can duplicate lines the agent did read before it
    closed; ``stats.resent`` and ``stats.rewritten`` count every document sent again. The
    backlog holds at most ``max_unconfirmed`` documents; beyond that the oldest are dropped
    and counted.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        timeout_s: float = 2.0,
        settle_s: float = 2.0,
        max_unconfirmed: int = 10_000,
        connect: Callable[[tuple[str, int], float], socket.socket] = socket.create_connection,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._address = (host, port)
        self._timeout_s = timeout_s
        self._settle_s = settle_s
        self._max_unconfirmed = max_unconfirmed
        self._connect = connect
        self._clock = clock
        self._socket: Optional[socket.socket] = None
        #: (time written, document count, bytes) of batches not yet confirmed.
        self._unconfirmed: deque[tuple[float, int, bytes]] = deque()
        self.stats = TcpStats()

    def send(self, documents: Sequence[EmfDocument]) -> None:
        payload = "".join(encode(d) + "\n" for d in documents).encode()
        now = self._clock()
        try:
            if self._socket is not None and peer_closed(self._socket):
                self._disconnect()
            if self._socket is None:
                self._socket = self._connect(self._address, self._timeout_s)
                self.stats.connects += 1
                backlog = list(self._unconfirmed)
            else:
                while self._unconfirmed and self._unconfirmed[0][0] <= now - self._settle_s:
                    self._unconfirmed.popleft()  # the connection outlived it: confirmed
                backlog = []
            self._socket.sendall(b"".join(p for _, _, p in backlog) + payload)
            if peer_closed(self._socket):
                self.stats.rewritten += len(documents)
                raise ConnectionResetError("the EMF listener closed the connection")
        except OSError as err:
            self._disconnect()
            host, port = self._address
            raise SinkError(f"EMF endpoint tcp://{host}:{port}: {err}") from err
        self.stats.resent += sum(n for _, n, _ in backlog)
        if backlog:  # written again just now, on the new connection
            self._unconfirmed = deque((now, n, p) for _, n, p in backlog)
        self._unconfirmed.append((now, len(documents), payload))
        held = sum(n for _, n, _ in self._unconfirmed)  # once a send, not once a drop
        while held > self._max_unconfirmed:
            dropped = self._unconfirmed.popleft()[1]
            held -= dropped
            self.stats.dropped += dropped

    def close(self) -> None:
        """Close the connection on our side: what was written precedes our FIN, so the agent
        reads it before it sees the end; nothing is kept to resend."""
        self._unconfirmed.clear()
        self._disconnect()

    def _disconnect(self) -> None:
        """Drop a connection that failed; unconfirmed batches stay for the next one."""
        if self._socket is not None:
            try:
                self._socket.close()
            finally:
                self._socket = None


class PutMetricDataSink:
    """Straight to the CloudWatch API, for nodes without the agent; the client is injected."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def send(self, documents: Sequence[EmfDocument]) -> None:
        by_namespace: dict[str, list[dict[str, Any]]] = {}
        for document in documents:
            by_namespace.setdefault(namespace_of(document), []).extend(metric_data(document))
        for namespace, datums in by_namespace.items():
            for start in range(0, len(datums), PUT_METRIC_DATA_BATCH):
                batch = datums[start : start + PUT_METRIC_DATA_BATCH]
                try:
                    self._client.put_metric_data(Namespace=namespace, MetricData=batch)
                except Exception as err:  # botocore's ClientError and BotoCoreError alike
                    raise SinkError(f"PutMetricData {namespace}: {err}") from err


@dataclass
class SenderStats:
    sent: int = 0
    dropped: int = 0
    failures: int = 0
    #: Documents in batches the sink refused for good (``SinkRefusedError``): dropped, never
    #: sent again.
    refused: int = 0


class BufferedSender:
    """Holds documents until the sink takes them.

    The buffer is bounded: when full, the oldest documents are dropped and counted, so a sink
    that is down for a day costs a fixed amount of memory. After a failure the sender waits
    (doubling from ``base_backoff_s`` up to ``max_backoff_s``) before it tries again, so a dead
    endpoint does not slow every collection cycle. A batch the sink refuses for good
    (``SinkRefusedError``: an answer that says no retry can succeed) is dropped at once,
    counted (``stats.refused``) and logged with its status, and the documents behind it go on:
    retried, it would hold every later document behind it until the buffer evicted it.
    """

    def __init__(
        self,
        sink: Sink,
        *,
        capacity: int = 10_000,
        chunk: int = 500,
        base_backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if capacity < 1 or chunk < 1:
            raise ValueError("capacity and chunk must be at least 1")
        self.sink = sink
        self.stats = SenderStats()
        self._buffer: deque[EmfDocument] = deque(maxlen=capacity)
        self._chunk = chunk
        self._base_backoff_s = base_backoff_s
        self._max_backoff_s = max_backoff_s
        self._clock = clock
        self._consecutive_failures = 0
        self._retry_at = 0.0

    def __len__(self) -> int:
        return len(self._buffer)

    def submit(self, documents: Sequence[EmfDocument]) -> None:
        for document in documents:
            if len(self._buffer) == self._buffer.maxlen:
                self.stats.dropped += 1
            self._buffer.append(document)

    def flush(self, *, force: bool = False) -> bool:
        """Send what is buffered; True when the buffer is empty afterwards."""
        if not force and self._clock() < self._retry_at:
            return False
        while self._buffer:
            batch = list(islice(self._buffer, self._chunk))
            try:
                self.sink.send(batch)
            except SinkRefusedError as err:
                for _ in batch:
                    self._buffer.popleft()
                self.stats.refused += len(batch)
                log.warning("%s; %d documents dropped, not sent again", err, len(batch))
                continue
            except SinkError as err:
                self.stats.failures += 1
                self._consecutive_failures += 1
                backoff = min(
                    self._max_backoff_s,
                    self._base_backoff_s * 2 ** (self._consecutive_failures - 1),
                )
                self._retry_at = self._clock() + backoff
                log.warning("%s; %d documents buffered, retry in %.0f s", err, len(self), backoff)
                return False
            for _ in batch:
                self._buffer.popleft()
            self.stats.sent += len(batch)
            self._consecutive_failures = 0
        return True
