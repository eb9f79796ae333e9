"""A client for CloudWatch's Prometheus-compatible query API: PromQL over the OTLP metrics
OTel Container Insights sends. SigV4-signed with botocore, sent with urllib (no dependency the
Lambda runtime lacks); the endpoint, credentials and opener are injected.

What AWS documents ("QueryMetrics", CloudWatch User Guide,
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-PromQL-API-QueryMetrics.html):

- ``/api/v1/query`` and ``/api/v1/query_range`` on "the CloudWatch monitoring host for the AWS
  Region", ``https://monitoring.<Region>.amazonaws.com``; GET or POST, the parameters "as
  form-encoded body fields for POST requests" (POST here: a query is not length-bound by a URL).
- The API's limits (series a response holds, range a request covers, range selectors, points
  per series) and how a truncated answer is told are the one table of
  lambdas/shared/promql_limits.py (read 2026-12-01). A request over one is refused before it is
  sent (``PromQLLimitError``, naming the limit); a response holding ``limit`` series is refused
  as truncated (``PromQLTruncatedError``) and the caller narrows the query (by node, say).
- "To call QueryMetrics, the calling identity must have both of the following IAM actions:
  cloudwatch:GetMetricData, cloudwatch:ListMetrics".
- ``query_range_paged`` splits a long window into pages that each scan at most 24 hours, its
  range selector's lookback included (the "24-hour scan windows" every request is held to,
  CloudWatch-PromQL-APIs.html), well inside the 30 days one request may cover, merging each
  series' points.

Signing: SigV4 with the signing name of the monitoring host's service, ``monitoring``
(botocore's CloudWatch model: ``signingName``).
"""

import functools
import json
import math
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.exceptions import NoCredentialsError

from lambdas.shared.promql_limits import LIMITS

SERVICE: Final = "monitoring"
QUERY_PATH: Final = "/api/v1/query"
QUERY_RANGE_PATH: Final = "/api/v1/query_range"
MAX_SERIES: Final = LIMITS.max_series
MAX_POINTS_PER_SERIES: Final = LIMITS.max_points_per_series
#: The longest range selector, and the scan one page of ``query_range_paged`` covers.
MAX_SCAN_S: Final = LIMITS.max_selector_s
MAX_RANGE_S: Final = LIMITS.max_range_s
TIMEOUT_S: Final = 30


def endpoint_for(region: str) -> str:
    """The Region's monitoring host (``AWS_ENDPOINT_URL`` replaces it where set)."""
    return f"https://monitoring.{region}.amazonaws.com"


class PromQLError(Exception):
    """A PromQL query that did not give an answer."""


class PromQLLimitError(PromQLError):
    """A request over one of the API's documented limits, refused before it is sent."""


class PromQLTruncatedError(PromQLError):
    """A response that holds as many series as its limit: others may have been dropped."""


class PromQLRequestError(PromQLError):
    """The API answered with an error (HTTP status, Prometheus ``errorType`` and ``error``)."""

    def __init__(self, status: int, error_type: str, message: str) -> None:
        super().__init__(f"HTTP {status} {error_type}: {message}")
        self.status = status
        self.error_type = error_type


@dataclass(frozen=True)
class Series:
    """One series of a result: its labels and its (epoch seconds, value) points."""

    labels: Mapping[str, str]
    points: tuple[tuple[float, float], ...] = field(default=())


#: Sends a prepared urllib request and returns (status, body); injected so tests can see what
#: would be sent.
Opener = Callable[[urllib.request.Request], tuple[int, bytes]]


def _urlopen(request: urllib.request.Request, timeout_s: float = TIMEOUT_S) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as err:
        return int(err.code), bytes(err.read())


def bounded_opener(timeout_s: float) -> Opener:
    """An opener that gives up after ``timeout_s``: for a caller with less time than
    ``TIMEOUT_S`` to wait (the notifier, whose page must go out within its invocation)."""
    return functools.partial(_urlopen, timeout_s=timeout_s)


@dataclass
class PromQLClient:
    """``credentials``: botocore credentials (``session.get_credentials()``), or None to send
    unsigned (a local Prometheus in tests). ``endpoint``: scheme and host, no path."""

    endpoint: str
    region: str
    credentials: Any
    opener: Opener = _urlopen
    requests: int = 0
    #: CloudWatch's API (``promql_for``) takes only signed requests: with no credentials found,
    #: each query raises what GetMetricData raises then, before any request, rather than go
    #: out unsigned and fail as a network or 403 error.
    signed: bool = False

    def signed_request(self, path: str, params: Mapping[str, str]) -> urllib.request.Request:
        """The POST request for ``path``, form-encoded and SigV4-signed."""
        url = self.endpoint.rstrip("/") + path
        body = urllib.parse.urlencode(params)
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if self.credentials is None and self.signed:
            raise NoCredentialsError
        if self.credentials is not None:
            aws = AWSRequest(method="POST", url=url, data=body, headers=headers)
            SigV4Auth(self.credentials, SERVICE, self.region).add_auth(aws)
            headers = dict(aws.headers.items())
        return urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")

    def _send(self, path: str, params: Mapping[str, str]) -> dict[str, Any]:
        self.requests += 1
        try:
            status, body = self.opener(self.signed_request(path, params))
        except (urllib.error.URLError, OSError) as err:
            raise PromQLError(f"{path}: {err}") from err
        try:
            answer = json.loads(body or b"{}")
        except json.JSONDecodeError as err:
            raise PromQLRequestError(
                status, "bad_response", body[:200].decode(errors="replace")
            ) from err
        if status != 200 or answer.get("status") != "success":
            raise PromQLRequestError(
                status, str(answer.get("errorType", "error")), str(answer.get("error", body[:200]))
            )
        data: dict[str, Any] = dict(answer.get("data", {}))
        if answer.get("warnings"):  # Prometheus's response field, beside "data"
            data["warnings"] = answer["warnings"]
        return data

    @staticmethod
    def _series(data: Mapping[str, Any], limit: int, query: str) -> list[Series]:
        result = data.get("result", [])
        if len(result) >= limit:
            said = "; ".join(str(w) for w in data.get("warnings", ()) if w)
            raise PromQLTruncatedError(
                f"{len(result)} series, the limit of {limit} a response (at most "
                f"{MAX_SERIES}, promql_limits): narrow the query {query}"
                + (f" ({said})" if said else "")
            )
        series = []
        for item in result:
            points = item.get("values") or ([item["value"]] if "value" in item else [])
            series.append(
                Series(
                    labels=dict(item.get("metric", {})),
                    points=tuple((float(t), float(v)) for t, v in points),
                )
            )
        return series

    def query(self, query: str, at: float, *, limit: int = MAX_SERIES) -> list[Series]:
        """An instant query at ``at`` (epoch seconds)."""
        _check_limit(limit)
        params = {"query": query, "time": _stamp(at), "limit": str(limit)}
        return self._series(self._send(QUERY_PATH, params), limit, query)

    def query_range(
        self,
        query: str,
        start: float,
        end: float,
        step: float,
        *,
        lookback_s: float = 0.0,
        limit: int = MAX_SERIES,
    ) -> list[Series]:
        """A range query, within the documented limits: ``lookback_s`` is the longest range
        selector in ``query`` (``[1h]``: 3600), which the scan window counts."""
        _check_limit(limit)
        if step <= 0 or end < start:
            raise PromQLLimitError(
                f"range {start}..{end} step {step}: expected start <= end, step > 0"
            )
        points = math.floor((end - start) / step) + 1
        if points > MAX_POINTS_PER_SERIES:
            raise PromQLLimitError(
                f"{points:,} points per series over {MAX_POINTS_PER_SERIES:,}: a longer step"
            )
        if lookback_s > MAX_SCAN_S:
            raise PromQLLimitError(
                f"a range selector of {lookback_s / 3600:g} h: the API's range selectors reach "
                f"back at most {MAX_SCAN_S / 3600:g} h (promql_limits, read {LIMITS.read})"
            )
        if end - start > MAX_RANGE_S:
            raise PromQLLimitError(
                f"a range of {(end - start) / 86_400:g} days: one request covers at most "
                f"{MAX_RANGE_S / 86_400:g} days (promql_limits, read {LIMITS.read}); use "
                "query_range_paged"
            )
        params = {
            "query": query,
            "start": _stamp(start),
            "end": _stamp(end),
            "step": f"{step:g}",
            "limit": str(limit),
        }
        return self._series(self._send(QUERY_RANGE_PATH, params), limit, query)

    def query_range_paged(
        self,
        query: str,
        start: float,
        end: float,
        step: float,
        *,
        lookback_s: float = 0.0,
        limit: int = MAX_SERIES,
    ) -> list[Series]:
        """``query_range`` over any window: pages of whole steps that each scan at most 24
        hours, each series' points merged in time order."""
        merged: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]] = {}
        for first, last in pages(start, end, step, lookback_s):
            for series in self.query_range(
                query, first, last, step, lookback_s=lookback_s, limit=limit
            ):
                merged.setdefault(tuple(sorted(series.labels.items())), []).extend(series.points)
        return [
            Series(labels=dict(key), points=tuple(sorted(points)))
            for key, points in sorted(merged.items())
        ]


def promql_for(cloudwatch: Any) -> PromQLClient:
    """The PromQL client beside a CloudWatch client: its endpoint (its Region's monitoring
    host, or ``AWS_ENDPOINT_URL``), its Region, and its own credentials (its request signer's,
    so a profile or an assumed role signs PromQL as it signs GetMetricData)."""
    signer = cloudwatch._request_signer
    return PromQLClient(
        endpoint=cloudwatch.meta.endpoint_url,
        region=cloudwatch.meta.region_name,
        credentials=signer._credentials,
        signed=True,
    )


def pages(
    start: float, end: float, step: float, lookback_s: float
) -> Iterator[tuple[float, float]]:
    """(first, last) evaluation times of each page: whole steps, each page's scan (its span and
    the lookback) at most ``MAX_SCAN_S``."""
    steps_per_page = math.floor((MAX_SCAN_S - lookback_s) / step)
    if steps_per_page < 0 or (steps_per_page == 0 and end > start):
        raise PromQLLimitError(f"a lookback of {lookback_s:g} s leaves no room in a 24-hour scan")
    steps_per_page = min(steps_per_page, MAX_POINTS_PER_SERIES - 1)
    first = start
    while first <= end:
        last = min(end, first + steps_per_page * step)
        yield first, last
        first = last + step


def _check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_SERIES:
        raise PromQLLimitError(f"limit {limit}: expected 1 to {MAX_SERIES}")


def _stamp(seconds: float) -> str:
    """A Unix timestamp the API takes ("RFC 3339 timestamp or a Unix timestamp"), to the
    millisecond."""
    return f"{seconds:.3f}"


def _string_char(char: str) -> str:
    if char in '\\"':
        return "\\" + char
    if char == "\n":
        return "\\n"
    if char < " " or char == "\x7f":
        return f"\\x{ord(char):02x}"
    if char == "\ufffd":
        # Go's utf8.RuneError: the lexer refuses it written as itself, valid UTF-8 though it is
        # (prometheus/prometheus promql/parser/lex.go ``lexString``: ``case utf8.RuneError:
        # l.errorf("invalid UTF-8 rune")``), and takes its ``\u`` escape (``lexEscape``).
        return "\\ufffd"
    return char


def quote_string(value: str) -> str:
    """A label value or metric name as a PromQL string literal: names come from outside (a
    job's name, a cluster's, any OTLP sender's labels). PromQL strings take Go's escapes ("the
    usual escape sequences as in Go", "String literals",
    https://prometheus.io/docs/prometheus/latest/querying/basics/#string-literals), and its
    lexer ends a double-quoted string at a raw newline ("unterminated quoted string":
    prometheus/prometheus promql/parser/lex.go ``lexString``), so backslashes, quotes, newlines
    and the other control characters are escaped, and U+FFFD too (``_string_char``); any other
    character, UTF-8 beyond the BMP
    included, is written as itself (a ``\\u`` escape of a surrogate half, as ``json.dumps``
    writes one, is refused: ``lexEscape``, "invalid Unicode code point")."""
    return '"' + "".join(_string_char(c) for c in value) + '"'


def duration(seconds: int) -> str:
    """A PromQL duration in whole hours or minutes ("5m", "1h"), else seconds."""
    if seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    if seconds % 60 == 0:
        return f"{seconds // 60}m"
    return f"{seconds}s"


def quote_label(name: str) -> str:
    """A label name as PromQL 3 writes it: bare where it is a legacy name, quoted otherwise
    (``"@resource.k8s.pod.name"``): "A metric name that contains dots must be quoted"
    ("PromQL querying", CloudWatch-PromQL-Querying.html), and label names alike."""
    legacy = (
        name
        and (name[0].isalpha() or name[0] == "_")
        and all(c.isalnum() or c == "_" for c in name)
        and name.isascii()
    )
    return name if legacy else json.dumps(name)
