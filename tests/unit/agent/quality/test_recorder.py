"""The quality proxy's sender against a local OTLP/HTTP endpoint that reads each request as
opentelemetry-proto's ``ExportMetricsServiceRequest``: one cumulative histogram per model under
the contract's name and label, bounded memory, refusals counted by reason and logged once, and
a request path that never raises nor waits on the network."""

import inspect
import logging
import re
import time
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import pytest

from gpu_insights_agent.contract.metrics import (
    DEFAULT_OTLP_ENDPOINT,
    OTLP_ENDPOINT_ENV,
    OTLP_INSTANCE,
)
from gpu_insights_agent.contract.serving import QUALITY_METRIC, QUALITY_MODEL_LABEL
from gpu_insights_agent.otlp.json_encoding import CUMULATIVE, HistogramPoint
from gpu_insights_agent.quality import recorder as recorder_module
from gpu_insights_agent.quality.histogram import MAX_BOUNDS, Histogram
from gpu_insights_agent.quality.recorder import (
    INTERNAL,
    MAX_MODEL_CHARS,
    MODEL_EMPTY,
    MODEL_NOT_PRINTABLE,
    MODEL_NOT_TEXT,
    MODEL_NOT_UTF8,
    MODEL_TOO_LONG,
    NO_MODEL,
    NOT_A_NUMBER,
    NOT_FINITE,
    SERVICE_NAME,
    QualityRecorder,
    QualityRecorderError,
    encode,
)
from tests.unit.agent.otlp.otlp_endpoint import Endpoint, silent_endpoint
from tests.unit.agent.otlp.otlp_json import HistogramRow, histograms, parse

BOUNDS = (0.25, 0.5, 0.75, 1.0)
#: 2023-11-14 22:13:20 UTC, and a minute later.
T0 = 1_700_000_000.0


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def received(endpoint: Endpoint) -> list[list[HistogramRow]]:
    """Each request's histogram datapoints."""
    return [histograms(parse(body)) for body in endpoint.bodies]


def recorder(endpoint: Endpoint, **kwargs: object) -> QualityRecorder:
    options: dict[str, object] = {
        "cluster_name": "serving",
        "model": "llama-3-8b",
        "buckets": BOUNDS,
        "otlp_endpoint": endpoint.url,
        "ticker": False,
        **kwargs,
    }
    return QualityRecorder(**options)  # type: ignore[arg-type]


def test_a_stream_arrives_as_one_cumulative_histogram_per_model_under_the_contracts_name(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POD_NAME", "vllm-7d9f-abcde")
    monkeypatch.setenv("POD_NAMESPACE", "inference")
    clock = Clock(T0)
    quality = recorder(endpoint, wall_clock=clock, node_name="ip-10-0-1-7.ec2.internal")
    for score in (0.05, 0.25, 0.3, 0.3, 0.95, 1.0, 1.7):
        assert quality.record(score)
    assert quality.record(0.6, model="llama-3-8b-lora-legal")
    clock.now = T0 + 60
    quality.flush()
    assert quality.drain(5.0)
    for score in (0.1, 0.9):
        quality.record(score)
    clock.now = T0 + 120
    quality.close()

    first, second = received(endpoint)
    assert set(endpoint.headers) == {("/v1/metrics", "application/json")}
    by_model = {row.labels[QUALITY_MODEL_LABEL]: row for row in first}
    base = by_model["llama-3-8b"]
    assert (base.name, base.unit, base.scope) == (QUALITY_METRIC, "1", "gpu_insights_agent.quality")
    assert base.temporality == CUMULATIVE
    assert (base.bounds, base.bucket_counts, base.total) == (list(BOUNDS), [2, 2, 0, 2, 1], 7)
    assert (base.min, base.max) == (0.05, 1.7)
    assert base.sum == pytest.approx(4.55)
    assert (base.start_ns, base.time_ns) == (int(T0 * 1e9), int((T0 + 60) * 1e9))
    assert by_model["llama-3-8b-lora-legal"].bucket_counts == [0, 0, 1, 0, 0]
    assert base.resource == {
        "k8s.cluster.name": "serving",
        "k8s.namespace.name": "inference",
        "k8s.pod.name": "vllm-7d9f-abcde",
        "k8s.node.name": "ip-10-0-1-7.ec2.internal",
        "service.name": SERVICE_NAME,
        OTLP_INSTANCE: base.resource[OTLP_INSTANCE],
    }
    # Cumulative: the second request counts the first's values too, from the same start.
    later = {row.labels[QUALITY_MODEL_LABEL]: row for row in second}["llama-3-8b"]
    assert (later.bucket_counts, later.total) == ([3, 2, 0, 3, 1], 9)
    assert (later.start_ns, later.time_ns) == (base.start_ns, int((T0 + 120) * 1e9))
    assert (quality.recorded, quality.sent, quality.dropped) == (10, 4, 0)


def test_each_worker_process_is_its_own_series(endpoint: Endpoint) -> None:
    """Two workers of one pod sending one cumulative series would interleave two counts:
    each recorder names itself (``service.instance.id``)."""
    one, two = recorder(endpoint), recorder(endpoint)
    assert one.resource != two.resource
    assert len({dict(r.resource)[OTLP_INSTANCE] for r in (one, two)}) == 2


def test_a_log_probability_goes_without_a_sum_as_otlp_asks(endpoint: Endpoint) -> None:
    quality = recorder(endpoint, buckets=(-4.0, -2.0, -1.0, -0.5, 0.0))
    for logprob in (-0.2, -0.7, -3.1):
        quality.record(logprob)
    quality.close()
    ((row,),) = received(endpoint)
    assert (row.bucket_counts, row.sum, row.min, row.max) == ([0, 1, 0, 1, 1, 0], None, -3.1, -0.2)


def test_a_thumbs_up_is_one_and_a_thumbs_down_zero(endpoint: Endpoint) -> None:
    quality = recorder(endpoint, buckets=(0.0, 1.0))
    for thumb in (True, True, False, 1, 0):
        quality.record(thumb)
    assert quality.record(Fraction(1, 2))  # any real number: NumPy's scalars too
    quality.close()
    ((row,),) = received(endpoint)
    assert (row.bucket_counts, row.sum) == ([2, 4, 0], 3.5)


def test_bad_values_and_model_names_are_refused_by_count_and_each_reason_logged_once(
    endpoint: Endpoint, caplog: pytest.LogCaptureFixture
) -> None:
    quality = recorder(endpoint)
    nobody = recorder(endpoint, model=None)
    bad_values = [float("nan"), float("inf"), -float("inf"), 10**400, "0.9", None, [0.5]]
    bad_models: list[object] = [
        "",
        "   ",
        "m" * (MAX_MODEL_CHARS + 1),
        b"\xffllama",
        "llama\udcff",  # bytes decoded with surrogateescape
        "llama\n<script>",
        "llama\u200b",  # a zero-width space: a format character
        42,
    ]
    with caplog.at_level(logging.WARNING, logger=recorder_module.__name__):
        for value in bad_values * 2:
            assert not quality.record(value)  # type: ignore[arg-type]
        for model in bad_models * 2:
            assert not quality.record(0.5, model=model)  # type: ignore[arg-type]
        assert not nobody.record(0.5)
        assert quality.record(0.5, model=b"llama-3-8b")  # UTF-8 bytes name the model
    assert dict(quality.refused) == {
        NOT_FINITE: 8,
        NOT_A_NUMBER: 6,
        MODEL_EMPTY: 4,
        MODEL_TOO_LONG: 2,
        MODEL_NOT_UTF8: 4,
        MODEL_NOT_PRINTABLE: 4,
        MODEL_NOT_TEXT: 2,
    }
    assert dict(nobody.refused) == {NO_MODEL: 1}
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == 8  # once per reason
    assert any("'llama\\n<script>'" in line for line in logged)  # shown escaped
    assert not any(len(line) > 400 for line in logged)  # an over-long name is cut
    quality.close()
    ((row,),) = received(endpoint)
    assert (row.labels, row.total) == ({QUALITY_MODEL_LABEL: "llama-3-8b"}, 1)


def test_models_past_the_cap_are_counted_in_overflow_and_logged_once(
    endpoint: Endpoint, caplog: pytest.LogCaptureFixture
) -> None:
    quality = recorder(endpoint, model=None, max_models=3)
    with caplog.at_level(logging.WARNING, logger=recorder_module.__name__):
        for i in range(1000):
            quality.record(0.5, model=f"adapter-{i % 10}")
    assert (quality.recorded, quality.overflow) == (300, 700)
    assert len(quality.snapshot()) == 3
    (line,) = [r.getMessage() for r in caplog.records]
    assert "over 3 models" in line
    assert "'adapter-3'" in line


def test_a_refusing_endpoint_costs_counted_points_and_the_next_request_carries_the_counts(
    endpoint: Endpoint,
) -> None:
    """A 400 is never retried (OTLP/HTTP "Failures"): the request is dropped and counted;
    being cumulative, the next one that arrives still counts every value."""
    quality = recorder(endpoint)
    endpoint.status = 400
    for _ in range(3):
        quality.record(0.9)
        quality.flush()
        assert quality.drain(5.0)
    assert (quality.sent, quality.dropped, endpoint.bodies) == (0, 3, [])
    endpoint.status = 200
    quality.record(0.1)
    quality.close()
    ((row,),) = received(endpoint)
    assert (row.bucket_counts, row.total) == ([1, 0, 0, 3, 0], 4)
    assert (quality.sent, quality.dropped) == (1, 3)


def test_an_endpoint_that_accepts_and_never_answers_never_delays_a_request() -> None:
    """A listener that takes the connection and never reads nor answers: the sender thread waits
    out its timeout; ``record`` and ``flush`` never do."""
    with silent_endpoint() as url:
        quality = QualityRecorder(
            cluster_name="c", model="m", otlp_endpoint=url, flush_s=0.001, close_timeout_s=0
        )
        worst = 0.0
        for i in range(2000):
            started = time.perf_counter()
            quality.record(i / 2000)
            if i % 100 == 0:
                quality.flush()
            worst = max(worst, time.perf_counter() - started)
        quality.close()
        assert worst < 0.1
        assert quality.recorded == 2000
        assert quality.sent == 0


def test_record_never_raises_into_the_request(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    quality = recorder(endpoint)
    quality.record(0.5)

    def broken(self: Histogram, value: float) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(Histogram, "add", broken)
    assert quality.record(0.5) is False
    assert quality.refused[INTERNAL] == 1


def test_the_ticker_sends_every_flush_s(endpoint: Endpoint) -> None:
    quality = recorder(endpoint, ticker=True, flush_s=0.02)
    quality.record(0.4)
    deadline = time.monotonic() + 10
    while len(endpoint.bodies) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    quality.close()
    assert len(endpoint.bodies) >= 2  # the same cumulative counts, every flush
    assert all(rows[0].bucket_counts == [0, 1, 0, 0, 0] for rows in received(endpoint))


def test_the_endpoint_is_the_argument_else_the_variable_else_the_addons(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(OTLP_ENDPOINT_ENV, raising=False)
    assert QualityRecorder(cluster_name="c", ticker=False).endpoint == DEFAULT_OTLP_ENDPOINT
    monkeypatch.setenv(OTLP_ENDPOINT_ENV, "http://agent:4318/v1/metrics")
    assert QualityRecorder(cluster_name="c", ticker=False).endpoint == (
        "http://agent:4318/v1/metrics"
    )
    argument = QualityRecorder(
        cluster_name="c", otlp_endpoint="http://x:1/v1/metrics", ticker=False
    )
    assert argument.endpoint == "http://x:1/v1/metrics"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"cluster_name": ""}, "cluster_name must be a non-empty string"),
        ({"model": ""}, "model: model is empty"),
        ({"model": "a\tb"}, "model: model has a character that is not printable"),
        ({"buckets": (1.0, 0.5)}, "strictly increasing"),
        ({"buckets": ()}, "1 to 100 bounds"),
        ({"flush_s": 0}, "flush_s must be a positive number"),
        ({"max_models": 0}, "max_models must be a positive integer"),
        ({"max_models": True}, "max_models must be a positive integer"),
        ({"queue_capacity": 0}, "queue_capacity must be a positive integer"),
        ({"close_timeout_s": -1}, "close_timeout_s must be 0 to 3600"),
        ({"otlp_endpoint": "tcp://agent:4318"}, "otlp_endpoint: .* is not http"),
    ],
)
def test_a_bad_argument_is_refused_at_construction_by_name(
    arguments: dict[str, object], message: str
) -> None:
    options: dict[str, object] = {"cluster_name": "c", "ticker": False, **arguments}
    with pytest.raises(QualityRecorderError, match=message):
        QualityRecorder(**options)  # type: ignore[arg-type]


def test_the_docs_show_what_the_recorder_sends_and_its_figures() -> None:
    """docs/quality-proxy.md: its stream's buckets are the request's, its figures the code's."""
    text = (Path(__file__).resolve().parents[4] / "docs" / "quality-proxy.md").read_text()
    capture: list[bytes] = []

    class Capture:
        def send(self, documents: Sequence[HistogramPoint]) -> None:
            capture.append(encode(documents))

    quality = QualityRecorder(
        cluster_name="c", model="m", buckets=BOUNDS, sink=Capture(), ticker=False
    )
    stream = (0.05, 0.25, 0.3, 0.3, 0.95, 1.0, 1.7)
    assert "a stream of 0.05, 0.25, 0.3, 0.3, 0.95, 1.0\nand 1.7 is sent as" in text
    for value in stream:
        quality.record(value)
    quality.close()
    (body,) = capture
    shown = re.search(r'^"bucketCounts":.*$', text, re.M)
    assert shown is not None
    assert shown.group(0) in body.decode()
    assert '"count":"7"' in body.decode()
    defaults = inspect.signature(QualityRecorder.__init__).parameters
    for figure in (
        f"Every {defaults['flush_s'].default:g} s",
        f"At most {defaults['max_models'].default} models",
        f"The queue holds {defaults['queue_capacity'].default}\n  requests",
        f"1 to {MAX_BOUNDS} of them",
        f"over {MAX_MODEL_CHARS:,} characters",
    ):
        assert figure in text
