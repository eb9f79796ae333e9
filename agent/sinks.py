"""Where EMF documents go, and the bounded buffer that keeps a failing sink from costing
memory or blocking collection.

Sinks raise SinkError on failure and keep no state of their own about what was sent; the
BufferedSender owns retries, so every sink gets the same backoff and the same memory bound.
"""

import logging
import socket
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, Protocol, TextIO

from agent.emf import EmfDocument, encode, metric_data, namespace_of

log = logging.getLogger(__name__)

#: PutMetricData takes at most 1,000 datums per call.
PUT_METRIC_DATA_BATCH = 1000


class SinkError(Exception):
    """A sink could not deliver; the documents stay buffered for a retry."""


class Sink(Protocol):
    def send(self, documents: Sequence[EmfDocument]) -> None: ...


class StdoutSink:
    """One EMF line per document; on EKS, Fluent Bit ships container stdout to CloudWatch Logs."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stdout

    def send(self, documents: Sequence[EmfDocument]) -> None:
        try:
            self._stream.write("".join(encode(d) + "\n" for d in documents))
            self._stream.flush()
        except (OSError, ValueError) as err:
            raise SinkError(f"stdout: {err}") from err


class TcpEmfSink:
    """The CloudWatch agent's EMF listener (newline-delimited JSON over TCP, port 25888)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        timeout_s: float = 2.0,
        connect: Callable[[tuple[str, int], float], socket.socket] = socket.create_connection,
    ) -> None:
        self._address = (host, port)
        self._timeout_s = timeout_s
        self._connect = connect
        self._socket: socket.socket | None = None

    def send(self, documents: Sequence[EmfDocument]) -> None:
        payload = "".join(encode(d) + "\n" for d in documents).encode()
        try:
            if self._socket is None:
                self._socket = self._connect(self._address, self._timeout_s)
            self._socket.sendall(payload)
        except OSError as err:
            self.close()
            host, port = self._address
            raise SinkError(f"EMF endpoint tcp://{host}:{port}: {err}") from err

    def close(self) -> None:
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


class BufferedSender:
    """Holds documents until the sink takes them.

    The buffer is bounded: when full, the oldest documents are dropped and counted, so a sink
    that is down for a day costs a fixed amount of memory. After a failure the sender waits
    (doubling from ``base_backoff_s`` up to ``max_backoff_s``) before it tries again, so a dead
    endpoint does not slow every collection cycle.
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
