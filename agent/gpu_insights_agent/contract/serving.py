"""Inference servers' own Prometheus metrics: one table, per server and signal, of the name a
scrape gives, its type and unit, and the label that names the model. The serving alarms
(cdk/alarms/serving_promql.py), docs/metrics.md and its tests read this table only.

How the names reach CloudWatch in OTel Container Insights mode: the add-on collects "the metrics
that each vLLM server exports on its /metrics endpoint", "you do not need to label or annotate
your pods" ("Collecting vLLM metrics with OTel Container Insights",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/container-insights-eks-otel-vllm.html),
through the OpenTelemetry Prometheus receiver, which keeps a scraped name as it is, ``_total``
included, unless ``trim_metric_suffixes`` is set (open-telemetry/opentelemetry-collector-contrib
PR #24256, "When set to true, suffixes will be trimmed"; PR #23229, "specifically `_total`
suffix will not be removed from metric names"). CloudWatch keeps an OTLP metric name as sent
(PromQL "based on the Prometheus 3.0 specification", UTF-8 names; "A metric name that contains
dots must be quoted ... as the value of the __name__ label", "PromQL querying",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-PromQL-Querying.html):
vLLM's colon stays (``vllm:num_requests_waiting``; a colon is legal in a Prometheus name anyway),
and every query here selects by ``__name__``. A histogram is no ``_bucket`` series there:
"CloudWatch stores both [explicit-bucket and exponential histograms] as exponential histograms"
("How CloudWatch stores histogram metrics",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/metrics-otel-histograms.html),
which PromQL reads as native histograms under the metric's own name (``HistogramForm``).

A signal may have had other names: ``names`` lists the newest first, then the older ones a
server of an older version still sends. Queries take the newest a replica sends and the older
only where it sends no newer (``or`` after aggregation), so a version that sends both during
its deprecation is not counted twice.
"""

import re
from typing import Final, Optional

from gpu_insights_agent.contract.metrics import StrEnum


class Server(StrEnum):
    """An inference server whose metrics the project reads."""

    VLLM = "vllm"
    #: NVIDIA NIM for LLMs (its vLLM-style names without the prefix).
    NIM = "nim-llm"
    TRITON = "triton"
    RAY_SERVE = "ray-serve"


class Signal(StrEnum):
    """What a serving metric tells, whatever the server calls it."""

    REQUESTS = "requests"
    ERRORS = "errors"
    TTFT = "time_to_first_token"
    INTER_TOKEN = "inter_token_latency"
    E2E = "e2e_latency"
    PROMPT_TOKENS = "prompt_tokens"
    GENERATION_TOKENS = "generation_tokens"
    RUNNING = "requests_running"
    WAITING = "requests_waiting"
    KV_CACHE = "kv_cache_usage"
    PREEMPTIONS = "preemptions"
    #: Per-request histograms of tokens read and written, which drift watches
    #: (``LENGTH_HISTOGRAMS``).
    PROMPT_LENGTH = "prompt_length"
    GENERATION_LENGTH = "generation_length"


class MetricType(StrEnum):
    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"


class HistogramForm(StrEnum):
    """How a store holds a histogram: CloudWatch as an exponential (PromQL native) histogram
    under the metric's name; a Prometheus that scraped the server as classic ``_bucket``
    series with an ``le`` label (the local engine of the tests, Prometheus 2.42)."""

    NATIVE = "native"
    CLASSIC = "classic"


class ServerRow:
    """Where a server serves its metrics and which of its labels names the model."""

    __slots__ = ("also_under_ray", "model_label", "path", "port", "server", "source")

    def __init__(
        self,
        server: Server,
        model_label: str,
        port: int,
        path: str,
        source: str,
        *,
        also_under_ray: bool = False,
    ):
        self.server = server
        self.model_label = model_label
        self.port = port
        self.path = path
        self.source = source
        #: Its metrics also arrive under Ray's spelling (``ray_name``), from Ray Serve LLM.
        self.also_under_ray = also_under_ray


SERVERS: Final[dict[Server, ServerRow]] = {
    r.server: r
    for r in (
        # Every vLLM metric is labelled model_name (the served model name); V1 adds engine
        # (vllm-project/vllm vllm/v1/metrics/loggers.py ``labelnames = ["model_name",
        # "engine"]``); /metrics on the OpenAI server's port, 8000 (docs/design/metrics.md).
        # Ray Serve LLM runs the same engine and exports the same metrics through Ray's, as
        # ``ray_vllm_*`` (``ray_name``): read as vLLM's.
        ServerRow(
            Server.VLLM,
            "model_name",
            8000,
            "/metrics",
            "vllm docs/design/metrics.md",
            also_under_ray=True,
        ),
        # /v1/metrics on port 8000 (docs.nvidia.com/nim/large-language-models/latest/
        # observability.html); the model label is vLLM's, the engine NIM runs (UNCONFIRMED
        # in NIM's own docs).
        ServerRow(
            Server.NIM,
            "model_name",
            8000,
            "/v1/metrics",
            "docs.nvidia.com/nim/large-language-models/latest/observability.html",
        ),
        # Labels model and version; port 8002 (triton-inference-server/server
        # docs/user_guide/metrics.md).
        ServerRow(
            Server.TRITON, "model", 8002, "/metrics", "triton-inference-server docs/metrics.md"
        ),
        # A Serve deployment, not a model, labels its replicas' series; KubeRay's metrics
        # port 8080 (docs.ray.io/en/latest/serve/monitoring.html, "Built-in Ray Serve metrics").
        ServerRow(
            Server.RAY_SERVE,
            "deployment",
            8080,
            "/metrics",
            "docs.ray.io/en/latest/serve/monitoring.html",
        ),
    )
}


class ServingMetric:
    """One row: a server's metric for a signal."""

    __slots__ = ("matchers", "names", "seconds_per_unit", "server", "signal", "type", "unit")

    def __init__(
        self,
        server: Server,
        signal: Signal,
        names: tuple[str, ...],
        type: MetricType,
        unit: str,
        *,
        matchers: tuple[tuple[str, str], ...] = (),
        seconds_per_unit: Optional[float] = None,
    ) -> None:
        self.server = server
        self.signal = signal
        #: The scraped names, newest first (older versions' after).
        self.names = names
        self.type = type
        #: UCUM, as OTLP writes units: "s", "ms", "1" (a count or a fraction), "{token}".
        self.unit = unit
        #: Label matchers that pick the signal out of a wider metric (vLLM's errors are
        #: ``request_success_total{finished_reason="error"}``).
        self.matchers = matchers
        #: For a latency: seconds in one of its units (ms: 0.001), so a target in seconds
        #: reads against it.
        self.seconds_per_unit = seconds_per_unit

    @property
    def model_label(self) -> str:
        return SERVERS[self.server].model_label

    def __repr__(self) -> str:
        return f"ServingMetric({self.server!s}, {self.signal!s}, {self.names[0]})"


_M = ServingMetric
S = Signal
C, G, H = MetricType.COUNTER, MetricType.GAUGE, MetricType.HISTOGRAM
#: The table. vLLM: vllm-project/vllm vllm/v1/metrics/loggers.py and docs/design/metrics.md
#: (prometheus_client writes a Counter ``vllm:prompt_tokens`` as ``vllm:prompt_tokens_total``);
#: renames from PRs #18354 (``gpu_cache_usage_perc`` -> ``kv_cache_usage_perc``, v0.9.2,
#: hidden in v0.11, removed in v0.12: PR #29330) and #32661 (``time_per_output_token_seconds``
#: -> ``inter_token_latency_seconds``, deprecated in 0.11, hidden in 0.12, then removed).
#: vLLM has no error counter: a request that "finished" with reason "error" (a retryable
#: internal error, HTTP 500: vllm/v1/engine/__init__.py ``FinishReason``) is one.
#: KV cache use is a fraction 0-1 ("1 means 100 percent usage") despite ``_perc``.
SERVING_METRICS: Final[tuple[ServingMetric, ...]] = (
    _M(Server.VLLM, S.REQUESTS, ("vllm:request_success_total",), C, "{request}"),
    _M(
        Server.VLLM,
        S.ERRORS,
        ("vllm:request_success_total",),
        C,
        "{request}",
        matchers=(("finished_reason", "error"),),
    ),
    _M(Server.VLLM, S.TTFT, ("vllm:time_to_first_token_seconds",), H, "s", seconds_per_unit=1),
    _M(
        Server.VLLM,
        S.INTER_TOKEN,
        ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
        H,
        "s",
        seconds_per_unit=1,
    ),
    _M(Server.VLLM, S.E2E, ("vllm:e2e_request_latency_seconds",), H, "s", seconds_per_unit=1),
    _M(Server.VLLM, S.PROMPT_TOKENS, ("vllm:prompt_tokens_total",), C, "{token}"),
    _M(Server.VLLM, S.GENERATION_TOKENS, ("vllm:generation_tokens_total",), C, "{token}"),
    _M(Server.VLLM, S.RUNNING, ("vllm:num_requests_running",), G, "{request}"),
    _M(Server.VLLM, S.WAITING, ("vllm:num_requests_waiting",), G, "{request}"),
    _M(Server.VLLM, S.KV_CACHE, ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"), G, "1"),
    _M(Server.VLLM, S.PREEMPTIONS, ("vllm:num_preemptions_total",), C, "{preemption}"),
    # NIM for LLMs (docs.nvidia.com/nim/large-language-models/latest/observability.html)
    # exports three request counters: request_finish_total, "Count of finished requests,
    # differentiated by finish reason as label", request_success_total, "Count of successful
    # requests", and request_failure_total, "Count of failed requests" (their HELP lines, as
    # DataDog/integrations-core nvidia_nim/datadog_checks/nvidia_nim/metrics.py records a NIM
    # scrape); NVIDIA's Run:ai page on NIM metrics says which: success "requests with finish
    # reason 'stop' or 'length'", failure "requests with other finish reason"
    # (docs.nvidia.com/run-ai, "NIM Observability Metrics via API"). So every finished request
    # is in request_finish_total, the failures among them: requests over finish, not apart.
    _M(Server.NIM, S.REQUESTS, ("request_finish_total",), C, "{request}"),
    _M(Server.NIM, S.ERRORS, ("request_failure_total",), C, "{request}"),
    _M(Server.NIM, S.TTFT, ("time_to_first_token_seconds",), H, "s", seconds_per_unit=1),
    _M(Server.NIM, S.INTER_TOKEN, ("time_per_output_token_seconds",), H, "s", seconds_per_unit=1),
    _M(Server.NIM, S.E2E, ("e2e_request_latency_seconds",), H, "s", seconds_per_unit=1),
    _M(Server.NIM, S.PROMPT_TOKENS, ("prompt_tokens_total",), C, "{token}"),
    _M(Server.NIM, S.GENERATION_TOKENS, ("generation_tokens_total",), C, "{token}"),
    _M(Server.NIM, S.RUNNING, ("num_requests_running",), G, "{request}"),
    _M(Server.NIM, S.WAITING, ("num_requests_waiting",), G, "{request}"),
    _M(Server.NIM, S.KV_CACHE, ("gpu_cache_usage_perc",), G, "1"),
    # Triton (triton-inference-server/server docs/user_guide/metrics.md): success and
    # failure are separate counters; latencies are cumulative microsecond counters by
    # default, the first response a histogram in ms only with ``histogram_latencies=true``
    # (experimental); no tokens, no KV cache, no preemptions.
    _M(Server.TRITON, S.REQUESTS, ("nv_inference_request_success",), C, "{request}"),
    _M(Server.TRITON, S.ERRORS, ("nv_inference_request_failure",), C, "{request}"),
    _M(
        Server.TRITON,
        S.TTFT,
        ("nv_inference_first_response_histogram_ms",),
        H,
        "ms",
        seconds_per_unit=0.001,
    ),
    _M(Server.TRITON, S.WAITING, ("nv_inference_pending_request_count",), G, "{request}"),
    # Ray Serve (docs.ray.io/en/latest/serve/monitoring.html): per replica of a deployment;
    # the processing latency a histogram in ms; no tokens, no KV cache.
    _M(
        Server.RAY_SERVE,
        S.REQUESTS,
        ("ray_serve_deployment_request_counter_total",),
        C,
        "{request}",
    ),
    _M(Server.RAY_SERVE, S.ERRORS, ("ray_serve_deployment_error_counter_total",), C, "{request}"),
    _M(
        Server.RAY_SERVE,
        S.E2E,
        ("ray_serve_deployment_processing_latency_ms",),
        H,
        "ms",
        seconds_per_unit=0.001,
    ),
    _M(Server.RAY_SERVE, S.RUNNING, ("ray_serve_replica_processing_queries",), G, "{request}"),
    _M(Server.RAY_SERVE, S.WAITING, ("ray_serve_deployment_queued_queries",), G, "{request}"),
)
del _M, S, C, G, H


class HttpStatus:
    """A server's HTTP layer: its requests counter by status class, which names no model (a
    replica serves one: its model is read from the replica's ``joined`` gauge)."""

    __slots__ = ("error", "handlers", "joined", "name", "server", "status_label")

    def __init__(
        self,
        server: Server,
        name: str,
        status_label: str,
        error: str,
        handlers: str,
        joined: Signal,
    ) -> None:
        self.server = server
        self.name = name
        self.status_label = status_label
        #: The status label's value of a server error.
        self.error = error
        #: A regex of the inference handlers (not /metrics, /health).
        self.handlers = handlers
        #: The signal whose gauge carries the replica's model label.
        self.joined = joined


#: vLLM's OpenAI server counts its HTTP requests with prometheus_fastapi_instrumentator
#: (vllm-project/vllm PR #15657; docs/design/metrics.md: ``http_requests_total{handler=
#: "/v1/completions",method="POST",status="2xx"}``, the status grouped by class), so a 5xx is
#: an error on every vLLM that has it, a crash or a failed request that never reached the
#: engine included, where ``finished_reason="error"`` exists only in newer vLLM
#: (``VLLM_FINISH_REASONS``): its error ratio is the HTTP one where the replica sends it, the
#: engine's where not (``or``, so nothing is counted twice).
HTTP_STATUS: Final[dict[Server, HttpStatus]] = {
    Server.VLLM: HttpStatus(
        Server.VLLM, "http_requests_total", "status", "5xx", "/v1/.*", Signal.RUNNING
    ),
}

#: vLLM's finish reasons, each a ``finished_reason`` value of ``vllm:request_success_total``:
#: ``FINISH_REASON_STRINGS`` in vllm-project/vllm vllm/v1/engine/__init__.py, ("stop",
#: "length", "abort", "error", "repetition") in the newest; older v1 releases have ("stop",
#: "length", "abort") only.
VLLM_FINISH_REASONS: Final = ("stop", "length", "abort", "error", "repetition")

#: The servers whose requests counter does not count its errors (Triton: success and failure
#: are two counters): their error ratio is errors over requests plus errors.
ERRORS_APART: Final = frozenset({Server.TRITON})


def ray_name(name: str) -> str:
    """A vLLM metric's name as Ray Serve LLM exports it. vLLM's Ray wrappers replace every
    character but ``[a-zA-Z0-9_]`` by ``_`` ("For compatibility with Ray + OpenTelemetry, the
    metric name must be sanitized. In particular, this replaces disallowed character (e.g.,
    ':') with '_'", vllm-project/vllm vllm/v1/metrics/ray_wrappers.py
    ``_get_sanitized_opentelemetry_name``), and Ray prefixes an application's metrics with
    ``ray_`` and writes a counter with ``_total`` as prometheus_client does (Ray Serve's own
    ``serve_deployment_request_counter`` is ``ray_serve_deployment_request_counter_total``,
    docs.ray.io serve/monitoring.html): ``vllm:request_success_total`` is
    ``ray_vllm_request_success_total``, the ``ray_vllm_*`` family AWS's page on Ray with OTel
    Container Insights lists. The labels are vLLM's (``model_name``, ``finished_reason``)."""
    return "ray_" + re.sub(r"[^a-zA-Z0-9_]", "_", name)


def name_regex(name: str) -> str:
    """An RE2 pattern that matches ``name`` and its ``ray_name`` only (a character Ray
    replaces matches itself or ``_``), so one selector reads a model served by vLLM or by
    Ray Serve LLM: a replica sends one spelling, so nothing is counted twice."""
    return "(ray_)?" + "".join(
        c if re.fullmatch(r"[a-zA-Z0-9_]", c) else f"[{re.escape(c)}_]" for c in name
    )


def serving_metric(server: Server, signal: Signal) -> Optional[ServingMetric]:
    """The server's row for the signal, or None where the server has no such metric."""
    return next((m for m in SERVING_METRICS if m.server is server and m.signal is signal), None)


def servers_with(signal: Signal) -> tuple[ServingMetric, ...]:
    """Every server's row for ``signal``, in the table's order."""
    return tuple(m for m in SERVING_METRICS if m.signal is signal)


#: Each request's prompt and generation length, as histograms (one observation a request), for
#: drift (lambdas/training_analyzer/serving/drift, docs/drift.md). vLLM:
#: ``vllm:request_prompt_tokens`` and ``vllm:request_generation_tokens``, buckets
#: ``build_1_2_5_buckets(max_model_len)`` (vllm-project/vllm vllm/v1/metrics/loggers.py; Ray
#: Serve LLM's ``ray_vllm_*`` spelling through ``also_under_ray``); NIM for LLMs:
#: ``request_prompt_tokens`` and ``request_generation_tokens``, "Histogram of number of prefill
#: tokens processed" (docs.nvidia.com/nim/large-language-models/latest/observability.html).
#: Triton and Ray Serve export no token counts. Apart from ``SERVING_METRICS``: no alarm reads
#: them; the cost model prices them beside its rows (cli/cost/serving.py).
LENGTH_HISTOGRAMS: Final[tuple[ServingMetric, ...]] = tuple(
    ServingMetric(server, signal, (prefix + name,), MetricType.HISTOGRAM, "{token}")
    for server, prefix in ((Server.VLLM, "vllm:"), (Server.NIM, ""))
    for signal, name in (
        (Signal.PROMPT_LENGTH, "request_prompt_tokens"),
        (Signal.GENERATION_LENGTH, "request_generation_tokens"),
    )
)

#: The label of a request's finish reason on each server's requests counter, where the server
#: labels one: vLLM's ``labelname_finish_reason = "finished_reason"`` (vllm/v1/metrics/
#: loggers.py), its values ``VLLM_FINISH_REASONS``. NIM's ``request_finish_total`` is
#: "differentiated by finish reason as label", the label unnamed in NVIDIA's page: not read.
FINISH_REASON_LABEL: Final[dict[Server, str]] = {Server.VLLM: "finished_reason"}

#: The quality proxy a serving team defines (issue 41 item 9, docs/drift.md): one number per
#: request (a score, a log-probability, a thumbs-up as 1/0) that the standard-library sender
#: writes as an OTLP explicit-bucket histogram, labelled by the served model like vLLM's series
#: (``QUALITY_MODEL_LABEL``), and that drift watches beside the token-length histograms.
QUALITY_METRIC: Final = "gpu_insights_serving_quality"
QUALITY_MODEL_LABEL: Final = "model_name"
