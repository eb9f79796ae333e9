"""The serving reads on a real PromQL engine (Debian's Prometheus, tests/prometheus.py) over
vLLM-shaped series, scraped every minute for two hours (the reads' "day" is their window).

- KServe InferenceService ``code`` (raw mode: Deployment ``code-predictor``, its pods labelled
  ``serving.kserve.io/inferenceservice=code``), model ``qwen-coder``: replica A serves both hours,
  C the first only, B the second only, so at most two served at once, three in all. A finishes 10
  requests a minute (1,200 in the window), generates 500 tokens a minute (60,000), is preempted
  once a minute (120); its KV cache is 30% used, up to 7 requests wait; of each minute's 100 first
  tokens 98 come in (0.1, 0.25] s and 2 in (2.5, 5] s: p99 = 2.5 + 2.5 x (99 - 98) / 2 = 3.75 s.
- Deployment ``chat``, model ``llama``, one replica on a vLLM that sends the old KV-cache name.
- DCGM's series of A's GPU, with A's pod labels on them as the add-on's ``k8sattributes``
  processor puts them: the GPU-hour attribution names the same workload.

Each counter starts from its first scrape a minute into the window, so Prometheus' extrapolation
to the window's start (the counter's zero a minute before) gives the exact increase.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpu_insights_agent.contract.serving import HistogramForm, Signal
from lambdas.shared.dcgm import DCGM_POWER, DCGM_UTIL
from lambdas.shared.promql import PromQLClient
from lambdas.training_analyzer.gpu_hours.otel import read_holds
from lambdas.training_analyzer.serving.keys import ModelKey
from lambdas.training_analyzer.serving.promql import ServingQueries, read_serving
from tests.prometheus import Sample, legacy_labels, serve, write_openmetrics

pytestmark = pytest.mark.promql_engine

CLUSTER = "inference"
START = 1_767_225_600  # 2026-01-01 00:00 UTC
END = START + 7200
LABELS = legacy_labels()
TTFT_LE = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _pod(pod: str, model: str, deployment: str, isvc: str | None = None) -> dict[str, str]:
    found = {
        LABELS.cluster: CLUSTER,
        LABELS.namespace: "serving",
        LABELS.deployment: deployment,
        LABELS.pod: pod,
        LABELS.node: "ip-10-0-1-1.ec2.internal",
        "model_name": model,
        "engine": "0",
    }
    if isvc:
        found[LABELS.pod_label("serving.kserve.io/inferenceservice")] = isvc
        found[LABELS.pod_label("component")] = "predictor"
    return found


A = _pod("code-predictor-7c9b4d6f8-x2v9k", "qwen-coder", "code-predictor", "code")
B = _pod("code-predictor-7c9b4d6f8-q8hzt", "qwen-coder", "code-predictor", "code")
C = _pod("code-predictor-7c9b4d6f8-b5wlm", "qwen-coder", "code-predictor", "code")
D = _pod("chat-5c8d9f7b6-m2kzp", "llama", "chat")


def _series() -> Iterator[Sample]:
    for minute in range(1, 121):
        at = START + minute * 60
        yield "vllm:request_success_total", {**A, "finished_reason": "stop"}, at, 10.0 * minute
        yield "vllm:generation_tokens_total", A, at, 500.0 * minute
        yield "vllm:prompt_tokens_total", A, at, 2000.0 * minute
        yield "vllm:num_preemptions_total", A, at, float(minute)
        yield "vllm:kv_cache_usage_perc", A, at, 0.3
        yield "vllm:num_requests_waiting", A, at, 7.0 if minute % 2 else 0.0
        for le in (*TTFT_LE, float("inf")):
            bucket = {**A, "le": "+Inf" if le == float("inf") else f"{le:g}"}
            count = (98 if le >= 0.25 else 0) + (2 if le >= 5.0 else 0)
            yield "vllm:time_to_first_token_seconds_bucket", bucket, at, float(count * minute)
        # C the first hour only, B the second: requests at zero, present.
        other = C if minute < 60 else B
        yield "vllm:request_success_total", {**other, "finished_reason": "stop"}, at, 0.0
        yield "vllm:request_success_total", {**D, "finished_reason": "stop"}, at, 2.0 * minute
        yield "vllm:gpu_cache_usage_perc", D, at, 0.1
        yield "vllm:num_requests_waiting", D, at, 0.0
        # DCGM's series of A's GPU, as the add-on labels a held GPU's: A's pod labels on it.
        dcgm = {**{k: v for k, v in A.items() if k not in ("model_name", "engine")},
                LABELS.gpu: "0"}  # fmt: skip
        yield DCGM_UTIL, dcgm, at, 40.0
        yield DCGM_POWER, dcgm, at, 350.0


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromQLClient]:
    folder: Path = tmp_path_factory.mktemp("serving-day")
    write_openmetrics(folder / "serving.om", _series())
    with serve(folder / "serving.om", folder / "data") as url:
        yield PromQLClient(endpoint=url, region="us-east-1", credentials=None)


CODE = ModelKey("serving", "code", "InferenceService", "qwen-coder")
CHAT = ModelKey("serving", "chat", "Deployment", "llama")


def test_a_days_serving_per_model_of_a_workload(engine: PromQLClient) -> None:
    reads = read_serving(
        engine, CLUSTER, start=START, end=END, form=HistogramForm.CLASSIC, labels=LABELS
    )
    by_model = {
        name: {k.model: round(v, 3) for k, v in readings.items() if v}
        for name, readings in (
            ("requests", reads.requests),
            ("prompt", reads.prompt_tokens),
            ("tokens", reads.generation_tokens),
            ("preemptions", reads.preemptions),
            ("kv", reads.kv_cache),
        )
    }
    assert by_model["requests"] == {CODE: 1200.0, CHAT: 240.0}
    assert by_model["prompt"] == {CODE: 240_000.0}
    assert by_model["tokens"] == {CODE: 60_000.0}
    assert by_model["preemptions"] == {CODE: 120.0}
    # The old KV-cache name read where a replica sends no new one.
    assert by_model["kv"] == {CODE: 0.3, CHAT: 0.1}
    assert {k.model: v for k, v in reads.waiting.items()} == {CODE: 7.0, CHAT: 0.0}
    assert {k: round(v, 5) for k, v in reads.ttft_p99_s.items()} == {CODE: 3.75}
    # Three replicas in the window, at most two in one hour.
    assert reads.replicas == {CODE: 2, CHAT: 1}
    # Hour by hour (the autoscaling rule's reads): who sent series, the KV cache's mean and
    # the most waiting per replica; C and B send no KV-cache gauge, so their hours are unsized.
    first, second = START, START + 3600
    sent = {k.model: {h: sorted(p) for h, p in v.items()} for k, v in reads.hourly_replicas.items()}
    assert sent == {
        CODE.model: {first: sorted([A[LABELS.pod], C[LABELS.pod]]),
                     second: sorted([A[LABELS.pod], B[LABELS.pod]])},
        CHAT.model: {first: [D[LABELS.pod]], second: [D[LABELS.pod]]},
    }  # fmt: skip
    assert {(k.model.model, k.pod): v for k, v in reads.hourly_kv_cache.items()} == {
        (CODE.model, A[LABELS.pod]): {first: pytest.approx(0.3), second: pytest.approx(0.3)},
        (CHAT.model, D[LABELS.pod]): {first: pytest.approx(0.1), second: pytest.approx(0.1)},
    }
    assert {(k.model.model, k.pod): v for k, v in reads.hourly_waiting.items()} == {
        (CODE.model, A[LABELS.pod]): {first: 7.0, second: 7.0},
        (CHAT.model, D[LABELS.pod]): {first: 0.0, second: 0.0},
    }


def test_one_query_per_signal_for_the_whole_cluster() -> None:
    queries = ServingQueries(CLUSTER)
    rate = queries.rate(Signal.REQUESTS)
    # Every server's requests row in one query, joined with ``or``; a day's range.
    for name in (
        "request_finish_total",
        "nv_inference_request_success",
        "ray_serve_deployment_request_counter_total",
    ):
        assert f'__name__="{name}"' in rate
    # vLLM's under both its spelling and Ray Serve LLM's.
    assert '__name__=~"(ray_)?vllm[:_]request_success_total"' in rate
    assert "[1440m]" in rate


def test_the_gpu_hour_attribution_names_the_same_workload_from_dcgms_series(
    engine: PromQLClient,
) -> None:
    """The GPU-hours of a KServe replica go to its InferenceService, the workload its serving
    rows are keyed by, not to its ``code-predictor`` Deployment."""
    holds, _ = read_holds(engine, CLUSTER, start=START, end=END, gpu_hours=[], labels=LABELS)
    assert {(h.controller, h.controller_kind, h.pod) for h in holds} == {
        ("code", "InferenceService", A[LABELS.pod])
    }
    assert len(holds) == 2  # one an hour
