"""A quality proxy that a serving team defines: one number per request (a judge's score, the
answer's mean log-probability, a user's thumbs-up as 1 or 0), sent as an OTLP histogram per
model, which drift watches beside the token-length histograms (docs/quality-proxy.md).

Two lines in a request handler::

    quality = QualityRecorder(cluster_name="serving", model="llama-3-8b")   # once, per worker
    quality.record(score)                   # per request; record(score, model=...) for another

``record`` adds the value to its model's histogram in memory and returns: it never blocks,
never raises, and never does I/O. A daemon thread sends every model's histogram every
``flush_s`` (60 s) as one OTLP/HTTP JSON request (``otlp.json_encoding``,
``otlp.http_sink``) through the emitter's background sender, to the add-on's OTLP endpoint
(``DEFAULT_OTLP_ENDPOINT``, or ``GPU_INSIGHTS_OTLP_ENDPOINT``, or ``otlp_endpoint``).

The histogram is cumulative (``AGGREGATION_TEMPORALITY_CUMULATIVE``): each request carries
every count since the model's first value, as the add-on's scrape of vLLM's own histograms
does (the OpenTelemetry Prometheus receiver sends a scraped histogram with
``SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)``,
open-telemetry/opentelemetry-collector-contrib
receiver/prometheusreceiver/internal/metricfamily.go, ``appendMetric``), so drift reads the
quality histogram and the token-length ones the same way, with ``increase()`` over a window; a
request the endpoint refuses or never gets costs no count, as the next one carries it. CloudWatch
"stores both [explicit-bucket and exponential histograms] as exponential histograms" ("How
CloudWatch stores histogram metrics",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/metrics-otel-histograms.html),
which PromQL reads as a native histogram under ``QUALITY_METRIC`` (contract/serving.py).

Bounded: fixed buckets per model, at most ``max_models`` models (a value of a model past the
cap is counted in ``overflow`` and the first such model logged once), a queue of
``queue_capacity`` requests (the oldest dropped and counted when it is full). A value that is
no finite number, or a model name that is empty, not text, not UTF-8, has a character that is
not printable or is over ``MAX_MODEL_CHARS``, is refused: counted in ``refused`` by reason
and each reason logged once. Each process is one series (``service.instance.id``): run one
recorder per worker process, made after the fork (a FastAPI lifespan, not import time).

Standard library only, Python 3.9 and later, like the training emitter.
"""

import logging
import math
import numbers
import os
import threading
import time
import uuid
from collections import Counter
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

from gpu_insights_agent.contract.metrics import (
    DEFAULT_OTLP_ENDPOINT,
    OTLP_CLUSTER,
    OTLP_ENDPOINT_ENV,
    OTLP_INSTANCE,
    OTLP_NAMESPACE,
    OTLP_NODE,
    OTLP_POD,
    OTLP_SERVICE,
    POD_NAME_ENV,
    dimension_value_problem,
)
from gpu_insights_agent.contract.serving import QUALITY_METRIC, QUALITY_MODEL_LABEL
from gpu_insights_agent.emitter.background_sender import BackgroundSender, BatchSink
from gpu_insights_agent.emitter.otlp import pod_namespace
from gpu_insights_agent.otlp import json_encoding
from gpu_insights_agent.otlp.http_sink import OtlpJsonSink, endpoint_problem
from gpu_insights_agent.otlp.json_encoding import Attributes, HistogramPoint
from gpu_insights_agent.quality.histogram import DEFAULT_BOUNDS, Histogram, bounds_problem

log = logging.getLogger(__name__)

#: The recorder's ``service.name`` and instrumentation scope.
SERVICE_NAME = "gpu-insights-serving-quality"
SCOPE = "gpu_insights_agent.quality"
#: The longest model name taken: the bound CloudWatch puts on a dimension value
#: (``dimension_value_problem``), which keeps the table of models small.
MAX_MODEL_CHARS = 1024
DEFAULT_MAX_MODELS = 50

#: Why a value was refused: the keys of ``refused``.
NOT_A_NUMBER = "value is not a number"
NOT_FINITE = "value is NaN or infinite"
NO_MODEL = "no model named"
MODEL_NOT_TEXT = "model is not a string"
MODEL_EMPTY = "model is empty"
MODEL_TOO_LONG = f"model is over {MAX_MODEL_CHARS} characters"
MODEL_NOT_UTF8 = "model is not UTF-8"
MODEL_NOT_PRINTABLE = "model has a character that is not printable"
INTERNAL = "internal error"


class QualityRecorderError(ValueError):
    """A ``QualityRecorder`` argument it cannot run with; raised at construction, never by
    ``record``, and the message names the argument."""


def model_problem(model: str) -> Optional[str]:
    """Why the text cannot name a model's series, or None."""
    if not model.strip():
        return MODEL_EMPTY
    if len(model) > MAX_MODEL_CHARS:
        return MODEL_TOO_LONG
    try:
        model.encode("utf-8")  # a lone surrogate (bytes decoded with surrogateescape) fails
    except UnicodeEncodeError:
        return MODEL_NOT_UTF8
    return None if model.isprintable() else MODEL_NOT_PRINTABLE


def model_name(model: object) -> Tuple[Optional[str], Optional[str]]:
    """The model's name as text and None, or None and why it cannot label a series. Bytes are
    taken where they are UTF-8."""
    if isinstance(model, bytes):
        try:
            model = model.decode("utf-8")
        except UnicodeDecodeError:
            return None, MODEL_NOT_UTF8
    if not isinstance(model, str):
        return None, MODEL_NOT_TEXT
    why = model_problem(model)
    return (None, why) if why else (model, None)


def number(value: object) -> Tuple[Optional[float], Optional[str]]:
    """The value as a finite float and None, or None and why not. A bool is 1 or 0 (a
    thumbs-up); a string is refused, not parsed."""
    if isinstance(value, bool):
        return float(value), None
    if not isinstance(value, numbers.Real):  # int, float, NumPy's scalars, Fraction
        return None, NOT_A_NUMBER
    try:
        result = float(value)
    except (OverflowError, ValueError, TypeError):  # an int past a double's range
        return None, NOT_FINITE
    return (result, None) if math.isfinite(result) else (None, NOT_FINITE)


def encode(points: Sequence[HistogramPoint]) -> bytes:
    """The OTLP/HTTP JSON body of one flush's histograms."""
    return json_encoding.encode(points, scope=SCOPE)


class QualityRecorder:
    def __init__(
        self,
        *,
        cluster_name: str,
        model: Optional[str] = None,
        buckets: Sequence[float] = DEFAULT_BOUNDS,
        flush_s: float = 60.0,
        otlp_endpoint: Optional[str] = None,
        max_models: int = DEFAULT_MAX_MODELS,
        node_name: Optional[str] = None,
        pod_name: Optional[str] = None,
        close_timeout_s: float = 5.0,
        queue_capacity: int = 4,
        sink: Optional[BatchSink[HistogramPoint]] = None,
        wall_clock: Callable[[], float] = time.time,
        ticker: bool = True,
    ) -> None:
        """``model`` is what ``record`` counts a value under when it names none (vLLM's
        ``--served-model-name``: its series' ``model_name``). ``buckets`` are the upper bounds
        of the histogram's buckets (a last one above them is added). ``otlp_endpoint``
        (default: the ``GPU_INSIGHTS_OTLP_ENDPOINT`` variable, else the add-on's
        ``DEFAULT_OTLP_ENDPOINT``) is where it sends; ``sink`` replaces it. ``node_name`` and
        ``pod_name`` (default: the ``POD_NAME`` variable) label the resource, which the add-on's
        agent otherwise fills from the pod it sees. ``ticker`` starts the daemon thread that
        flushes every ``flush_s``; without it, ``flush()`` does so when called."""
        problem = dimension_value_problem("cluster_name", cluster_name)
        if problem:
            raise QualityRecorderError(problem)
        if model is not None:
            model, why = model_name(model)
            if why:
                raise QualityRecorderError(f"model: {why}")
        problem = bounds_problem(buckets)
        if problem:
            raise QualityRecorderError(problem)
        if not (isinstance(flush_s, (int, float)) and 0 < flush_s < math.inf):
            raise QualityRecorderError(f"flush_s must be a positive number, not {flush_s!r}")
        for what, count in (("max_models", max_models), ("queue_capacity", queue_capacity)):
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise QualityRecorderError(f"{what} must be a positive integer, not {count!r}")
        if not (isinstance(close_timeout_s, (int, float)) and 0 <= close_timeout_s <= 3600):
            raise QualityRecorderError(
                f"close_timeout_s must be 0 to 3600 seconds, not {close_timeout_s!r}"
            )
        #: Where the histograms go (None: to ``sink``).
        self.endpoint: Optional[str] = None
        if sink is None:
            endpoint = otlp_endpoint or os.environ.get(OTLP_ENDPOINT_ENV) or DEFAULT_OTLP_ENDPOINT
            problem = endpoint_problem(endpoint)
            if problem:
                raise QualityRecorderError(f"otlp_endpoint: {problem}")
            sink = OtlpJsonSink(endpoint, encode)
            self.endpoint = endpoint
        self.cluster_name = cluster_name
        self.model = model
        self.bounds = tuple(float(b) for b in buckets)
        self.flush_s = flush_s
        self.max_models = max_models
        self.close_timeout_s = close_timeout_s
        self._wall = wall_clock
        self.resource = self._resource(node_name, pod_name)
        #: Values counted, values of a model past ``max_models``, and values refused by reason.
        self.recorded = 0
        self.overflow = 0
        self.refused: Counter[str] = Counter()
        self._models: Dict[str, Histogram] = {}
        #: Held for in-memory work only, never for I/O.
        self._lock = threading.Lock()
        self._sender: BackgroundSender[HistogramPoint] = BackgroundSender(
            sink, capacity=queue_capacity, what="serving quality histograms"
        )
        self._sender.start()
        self._stop = threading.Event()
        if ticker:
            threading.Thread(
                target=self._tick, name="gpu-insights-quality-flush", daemon=True
            ).start()

    def _resource(self, node_name: Optional[str], pod_name: Optional[str]) -> Attributes:
        resource: List[Tuple[str, str]] = [(OTLP_CLUSTER, self.cluster_name)]
        namespace = pod_namespace()
        pod = pod_name if pod_name is not None else os.environ.get(POD_NAME_ENV) or None
        for key, value in ((OTLP_NAMESPACE, namespace), (OTLP_POD, pod), (OTLP_NODE, node_name)):
            if value:
                resource.append((key, value))
        resource.append((OTLP_SERVICE, SERVICE_NAME))
        resource.append((OTLP_INSTANCE, str(uuid.uuid4())))
        return tuple(resource)

    # --- the request path ---------------------------------------------------------------------

    def record(
        self, value: Union[float, numbers.Real], model: Union[str, bytes, None] = None
    ) -> bool:
        """Count ``value`` in ``model``'s histogram (the recorder's ``model`` when None). True
        when counted; False when refused or past ``max_models`` (counted, logged once). Never
        raises, never waits on the network."""
        try:
            return self._record(value, self.model if model is None else model)
        except Exception:  # a fault here costs the value, never the request
            self._refuse(INTERNAL, "")
            return False

    def _record(self, value: object, model: object) -> bool:
        as_float, why = number(value)
        if as_float is None:
            self._refuse(why or NOT_A_NUMBER, "")
            return False
        if isinstance(model, str):  # a model already counted: no check again
            with self._lock:
                histogram = self._models.get(model)
                if histogram is not None:
                    histogram.add(as_float)
                    self.recorded += 1
                    return True
        if model is None:
            self._refuse(NO_MODEL, "")
            return False
        name, why = model_name(model)
        if name is None:
            self._refuse(why or MODEL_NOT_TEXT, f" ({model!r:.200})")
            return False
        with self._lock:
            histogram = self._models.get(name)
            if histogram is None and len(self._models) < self.max_models:
                histogram = self._models[name] = Histogram(self.bounds, int(self._wall() * 1e9))
            if histogram is not None:
                histogram.add(as_float)
                self.recorded += 1
                return True
            self.overflow += 1
            first = self.overflow == 1
        if first:
            log.warning(
                "serving quality: over %d models; values of %r and of any other new model are "
                "counted in overflow, not sent (logged once)",
                self.max_models,
                name[:200],
            )
        return False

    def _refuse(self, why: str, detail: str) -> None:
        with self._lock:
            self.refused[why] += 1
            first = self.refused[why] == 1
        if first:
            log.warning(
                "serving quality: a value refused: %s%s (counted, logged once)", why, detail
            )

    # --- sending ------------------------------------------------------------------------------

    def snapshot(self) -> List[HistogramPoint]:
        """Every model's histogram as it stands, one datapoint each, stamped now."""
        time_ns = int(self._wall() * 1e9)
        with self._lock:
            return [
                histogram.point(
                    self.resource, QUALITY_METRIC, ((QUALITY_MODEL_LABEL, name),), time_ns
                )
                for name, histogram in self._models.items()
            ]

    def flush(self) -> None:
        """Hand the histograms to the sender thread; returns at once."""
        points = self.snapshot()
        if points:
            self._sender.submit(points)

    def _tick(self) -> None:
        while not self._stop.wait(self.flush_s):
            try:
                self.flush()
            except Exception:  # never let the thread die with a traceback in the server's log
                log.exception("serving quality flush failed")

    def drain(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for every queued request; True when none is left."""
        return self._sender.drain(timeout_s)

    @property
    def sent(self) -> int:
        """Histogram datapoints the endpoint took."""
        return self._sender.sent

    @property
    def dropped(self) -> int:
        """Histogram datapoints lost to a refusal, a failure or a full queue (their counts go
        out with the next request, the histograms being cumulative)."""
        return self._sender.dropped

    def close(self) -> None:
        """Stop the thread, send the histograms once more and wait up to ``close_timeout_s``
        (a server's shutdown)."""
        self._stop.set()
        self.flush()
        self._sender.drain(self.close_timeout_s)
        self._sender.close()

    def __enter__(self) -> "QualityRecorder":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
