"""OTLP/HTTP with the JSON encoding, standard library only: POSTs each batch of points to an
OTLP metrics endpoint (the add-on's CloudWatch agent on its node, ``DEFAULT_OTLP_ENDPOINT``).

A ``Sink`` like the EMF sinks: ``send`` raises ``SinkError`` on failure and keeps no state, so
whoever calls it (``emitter.background_sender``, on its own thread) owns drops and counts. The
request goes straight to the endpoint, never through a ``HTTP(S)_PROXY`` of the environment: the
agent is in-cluster, and a training image's proxy is for the internet. Python 3.9.
"""

import json
import logging
import urllib.error
import urllib.request
from typing import Callable, Generic, Optional, Sequence, TypeVar
from urllib.parse import urlsplit

from gpu_insights_agent.emf.sinks import SinkError, SinkRefusedError
from gpu_insights_agent.otlp.json_encoding import CONTENT_TYPE

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Seconds one request may take (connecting, sending, the answer); name resolution is not
#: bounded by it, which is why only a background thread sends.
TIMEOUT_S = 2.0
#: The statuses a client retries: "The requests that receive a response status code listed in
#: following table SHOULD be retried. All other 4xx or 5xx response status codes MUST NOT be
#: retried": 429, 502, 503, 504 (OTLP specification, "OTLP/HTTP Response", "Failures",
#: https://opentelemetry.io/docs/specs/otlp/#failures-1; open-telemetry/
#: opentelemetry-specification specification/protocol/otlp.md). A 400 or 404 (an add-on with
#: no OTLP endpoint, a wrong path) never succeeds.
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})
#: The most of an answer's body read: an ``ExportMetricsServiceResponse`` is a count and an
#: error message; a larger body is not read into memory (a 300 MB answer took the sender from
#: 22 to 622 MiB).
MAX_ANSWER_BYTES = 64 * 1024


def refusal(endpoint: str, status: int, reason: object) -> SinkError:
    """The error for an HTTP answer that is no success: ``SinkRefusedError`` (dropped, never
    sent again) for a status OTLP says not to retry, else ``SinkError`` (kept for a retry)."""
    message = f"OTLP endpoint {endpoint}: HTTP {status} {reason}"
    if 400 <= status < 600 and status not in RETRYABLE_STATUSES:
        return SinkRefusedError(f"{message} (not retryable)", status)
    return SinkError(message)


def endpoint_problem(endpoint: str) -> Optional[str]:
    """Why no request could reach ``endpoint``, or None: an http(s) URL with a host and a path
    (OTLP/HTTP's metrics path is ``/v1/metrics``)."""
    try:
        url = urlsplit(endpoint)
        url.port  # noqa: B018 - raises on a port outside 0-65535 or not a number
    except ValueError as err:
        return f"OTLP endpoint {endpoint!r}: {err}"
    if url.scheme not in ("http", "https") or not url.hostname or not url.path.strip("/"):
        return f"OTLP endpoint {endpoint!r} is not http(s)://host[:port]/path"
    return None


class OtlpJsonSink(Generic[T]):
    """Sends a batch (the training emitter's documents, the quality proxy's histograms) as one
    OTLP/HTTP JSON request; ``encode`` turns the batch into the body (empty: nothing to send)."""

    def __init__(
        self,
        endpoint: str,
        encode: Callable[[Sequence[T]], bytes],
        *,
        timeout_s: float = TIMEOUT_S,
    ) -> None:
        problem = endpoint_problem(endpoint)
        if problem:
            raise ValueError(problem)
        self.endpoint = endpoint
        self._encode = encode
        self._timeout_s = timeout_s
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        #: Datapoints the endpoint said it rejected in answers that were otherwise a success
        #: (OTLP's ``partialSuccess``: not to be retried, so counted and logged).
        self.rejected = 0

    def send(self, documents: Sequence[T]) -> None:
        body = self._encode(documents)
        if not body:
            return
        request = urllib.request.Request(
            self.endpoint, data=body, method="POST", headers={"Content-Type": CONTENT_TYPE}
        )
        try:
            with self._opener.open(request, timeout=self._timeout_s) as response:
                answer = response.read(MAX_ANSWER_BYTES + 1)
        except urllib.error.HTTPError as err:
            err.close()  # its body unread
            raise refusal(self.endpoint, err.code, err.reason) from err
        except (OSError, ValueError) as err:  # URLError, a timeout, a refused connection
            raise SinkError(f"OTLP endpoint {self.endpoint}: {err}") from err
        self._count_partial_success(answer)

    def _count_partial_success(self, answer: bytes) -> None:
        """ "If the request is only partially accepted ... the server MUST respond with HTTP 200
        OK" and a ``partialSuccess`` naming the rejected datapoints ("Partial Success",
        https://opentelemetry.io/docs/specs/otlp/#partial-success-1): the client "MUST NOT"
        retry them."""
        if len(answer) > MAX_ANSWER_BYTES:
            return  # no answer of OTLP's is this long: not read
        try:
            partial = json.loads(answer or b"{}").get("partialSuccess") or {}
            rejected = int(partial.get("rejectedDataPoints") or 0)
        except (ValueError, AttributeError, TypeError):
            return  # a protobuf answer, or none: nothing said about rejected points
        if rejected:
            self.rejected += rejected
            log.warning(
                "OTLP endpoint %s rejected %d datapoints: %.200s",
                self.endpoint,
                rejected,
                partial.get("errorMessage", ""),
            )
