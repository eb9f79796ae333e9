"""A daemon thread that hands batches (the training emitter's documents, the quality proxy's
histograms) to a sink, so the thread that produced them never waits on the network.

The producer (a training loop) only appends to a bounded deque under a lock that the sender
holds for a pop, never across a send: name resolution, connecting, a listener that accepts and
never reads, all block this thread alone. When the deque is full the oldest batch is dropped
and counted. Standard library only, and Python 3.9 (it runs in training images).
"""

import logging
import threading
import time
from collections import deque
from typing import Deque, Generic, List, Optional, Protocol, Sequence, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


class BatchSink(Protocol[T_contra]):
    """Sends one batch or raises (``emf.sinks.Sink``, ``otlp.http_sink.OtlpJsonSink``)."""

    def send(self, documents: Sequence[T_contra]) -> None: ...


class BackgroundSender(Generic[T]):
    """Send batches of documents on a daemon thread; ``what`` names them in its log lines."""

    def __init__(
        self, sink: BatchSink[T], *, capacity: int = 64, what: str = "training metrics"
    ) -> None:
        self._sink = sink
        self._pending: Deque[List[T]] = deque()
        self._capacity = capacity
        self._what = what
        self._ready = threading.Condition(threading.Lock())
        self._busy = False
        self._closing = False
        self._thread: Optional[threading.Thread] = None
        #: Documents the sink took, and documents lost to a failure or a full queue.
        self.sent = 0
        self.dropped = 0
        self.failures = 0

    def submit(self, documents: Sequence[T]) -> None:
        """Queue one batch; returns at once whatever the sink is doing."""
        if not documents:
            return
        with self._ready:
            if len(self._pending) >= self._capacity:
                self.dropped += len(self._pending.popleft())
            self._pending.append(list(documents))
            self._ready.notify()
        if self._thread is None:
            self.start()

    def start(self) -> None:
        """Start the thread; call it before the loop, as ``Thread.start()`` waits until the new
        thread runs (milliseconds on a busy host). ``submit`` starts it when not running."""
        with self._ready:
            if self._thread is not None:
                return
            self._closing = False
            self._thread = threading.Thread(
                target=self._run, name=f"gpu-insights-{self._what.replace(' ', '-')}", daemon=True
            )
        self._thread.start()

    def drain(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` until every queued batch was sent or dropped; True when
        so. For the end of a job (``close()``), never for the loop."""
        deadline = time.monotonic() + timeout_s
        with self._ready:
            while self._pending or self._busy:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._ready.wait(remaining)
        return True

    def close(self) -> None:
        """Drop (and count) what is still queued and let the thread end after the send in
        progress, which the sink's own timeout bounds; a later ``submit`` starts another."""
        with self._ready:
            self.dropped += sum(len(batch) for batch in self._pending)
            self._pending.clear()
            self._closing = True
            self._ready.notify_all()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._pending and not self._closing:
                    self._ready.wait()
                if not self._pending:
                    self._thread = None
                    return
                batch = self._pending.popleft()
                self._busy = True
            try:
                self._sink.send(batch)
                self.sent += len(batch)
            except Exception as err:  # any sink failure costs this batch, never the thread
                self.dropped += len(batch)
                self.failures += 1
                if self.failures in {1, 10, 100} or self.failures % 1000 == 0:
                    log.warning("%s dropped (%d so far): %s", self._what, self.dropped, err)
            finally:
                with self._ready:
                    self._busy = False
                    self._ready.notify_all()
