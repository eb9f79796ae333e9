"""The standard-library OTLP/HTTP sink (the training emitter's) against a local endpoint: what it
reads of an answer, and which refusals it says are for good."""

import contextlib
import threading
import tracemalloc
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from gpu_insights_agent.emf.sinks import SinkError, SinkRefusedError
from gpu_insights_agent.otlp.http_sink import MAX_ANSWER_BYTES, OtlpJsonSink

BODY = b'{"resourceMetrics":[]}'


class _Endpoint:
    def __init__(self) -> None:
        self.status = 200
        self.answer = b"{}"
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(endpoint.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(endpoint.answer)))
                self.end_headers()
                with contextlib.suppress(OSError):  # the client read what it wanted, closed
                    self.wfile.write(endpoint.answer)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/metrics"


@pytest.fixture
def endpoint() -> Iterator[_Endpoint]:
    e = _Endpoint()
    threading.Thread(target=e.server.serve_forever, daemon=True).start()
    yield e
    e.server.shutdown()
    e.server.server_close()


def test_an_answer_of_any_size_costs_the_sender_a_bounded_read(endpoint: _Endpoint) -> None:
    """A 300 MB answer took the emitter from 22 to 622 MiB: it read the body whole. It reads
    at most MAX_ANSWER_BYTES of it now (an OTLP answer is a count and a message)."""
    endpoint.answer = b" " * (32 * 1024 * 1024)
    sink: OtlpJsonSink[object] = OtlpJsonSink(endpoint.url, lambda _: BODY, timeout_s=5.0)
    tracemalloc.start()
    try:
        sink.send([{}])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * MAX_ANSWER_BYTES < 1024 * 1024, peak


def test_a_partial_success_within_the_bound_is_still_counted(endpoint: _Endpoint) -> None:
    endpoint.answer = b'{"partialSuccess":{"rejectedDataPoints":"3","errorMessage":"x"}}'
    sink: OtlpJsonSink[object] = OtlpJsonSink(endpoint.url, lambda _: BODY)
    sink.send([{}])
    assert sink.rejected == 3


@pytest.mark.parametrize(("status", "for_good"), [(400, True), (404, True), (503, False)])
def test_a_status_otlp_says_not_to_retry_is_refused_for_good(
    endpoint: _Endpoint, status: int, for_good: bool
) -> None:
    """429, 502, 503 and 504 are retried; "All other 4xx or 5xx response status codes MUST NOT
    be retried" (OTLP/HTTP "Failures")."""
    endpoint.status = status
    with pytest.raises(SinkError, match=f"HTTP {status}") as e:
        OtlpJsonSink[object](endpoint.url, lambda _: BODY).send([{}])
    assert isinstance(e.value, SinkRefusedError) == for_good
