"""The serving queries on a real PromQL engine (Debian's Prometheus, tests/prometheus.py) over
vLLM-shaped series: two replicas of model ``llama`` (Deployment ``llama-vllm``, namespace
``serving``) and one of ``mistral``, scraped every 30 s for 15 minutes. TTFT buckets are vLLM's
(vllm/v1/metrics/buckets.py, TIME_TO_FIRST_TOKEN); the engine holds classic ``_bucket`` series
(``HistogramForm.CLASSIC``), the form a Prometheus scrape gives.

Each 30 s, each llama replica finishes 100 requests: 98 with a first token in (0.1, 0.25] s and 2
in (2.5, 5] s, so the model's p99 is 2.5 + 2.5 x (99 - 98) / 2 = 3.75 s and its p50
0.1 + 0.15 x 50 / 98 = 0.17653 s; 10 of the 100 end in an error (10%). Mistral's 100 all fall in
(0.25, 0.5]: p99 0.25 + 0.25 x 0.99 = 0.4975 s, p50 0.375 s, no errors.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest

from cdk.alarms.serving_promql import (
    errors_query,
    kv_cache_full_query,
    latency_slo_query,
    model_group,
    per_second,
    quantile,
    waiting_query,
)
from gpu_insights_agent.contract.serving import (
    HistogramForm,
    Server,
    Signal,
    ray_name,
    serving_metric,
)
from lambdas.shared.dcgm import CLOUDWATCH
from lambdas.shared.promql import PromQLClient, Series
from tests.prometheus import Sample, legacy_labels, serve, write_openmetrics

pytestmark = pytest.mark.promql_engine

CLUSTER = "inference"
START = 1_767_225_600  # 2026-01-01 00:00 UTC
STEPS = 31  # 15 minutes of 30 s scrapes
END = START + (STEPS - 1) * 30
TTFT_LE = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
           7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)  # fmt: skip
LABELS = legacy_labels()


def _pod(model: str, deployment: str, pod: str, node: str) -> dict[str, str]:
    return {
        CLOUDWATCH.cluster: CLUSTER,
        CLOUDWATCH.namespace: "serving",
        CLOUDWATCH.deployment: deployment,
        CLOUDWATCH.pod: pod,
        CLOUDWATCH.node: node,
        "model_name": model,
        "engine": "0",
    }


LLAMA_A = _pod("llama", "llama-vllm", "llama-vllm-5d8f-a", "ip-10-0-1-1.ec2.internal")
LLAMA_B = _pod("llama", "llama-vllm", "llama-vllm-5d8f-b", "ip-10-0-1-2.ec2.internal")
MISTRAL = _pod("mistral", "mistral-vllm", "mistral-vllm-77c-a", "ip-10-0-1-3.ec2.internal")


def _histogram(pod: dict[str, str], per_step: dict[float, int]) -> Iterator[Sample]:
    """Cumulative classic buckets: ``per_step`` observations a scrape, by bucket upper bound."""
    for step in range(STEPS):
        for le in (*TTFT_LE, float("inf")):
            count = step * sum(n for bound, n in per_step.items() if bound <= le)
            name = "vllm:time_to_first_token_seconds_bucket"
            yield (
                name,
                {**pod, "le": "+Inf" if le == float("inf") else f"{le:g}"},
                START + step * 30,
                float(count),
            )


def _series() -> Iterator[Sample]:
    for pod in (LLAMA_A, LLAMA_B):
        yield from _histogram(pod, {0.25: 98, 5.0: 2})
    yield from _histogram(MISTRAL, {0.5: 100})
    for step in range(STEPS):
        at = START + step * 30
        for pod, errors in ((LLAMA_A, 10), (LLAMA_B, 10), (MISTRAL, 0)):
            yield (
                "vllm:request_success_total",
                {**pod, "finished_reason": "stop"},
                at,
                step * (100.0 - errors),
            )
            yield (
                "vllm:request_success_total",
                {**pod, "finished_reason": "error"},
                at,
                step * float(errors),
            )
            yield "vllm:generation_tokens_total", pod, at, step * 30 * 1500.0
        # Waiting: 12 on llama A the whole time, 3 on B.
        yield "vllm:num_requests_waiting", LLAMA_A, at, 12.0
        yield "vllm:num_requests_waiting", LLAMA_B, at, 3.0
        # KV cache: A (new name) full and preempting; B sends only the old name, full and
        # preempting; mistral full but never preempting.
        yield "vllm:kv_cache_usage_perc", LLAMA_A, at, 0.97
        yield "vllm:gpu_cache_usage_perc", LLAMA_B, at, 0.98
        yield "vllm:kv_cache_usage_perc", MISTRAL, at, 0.99
        yield "vllm:num_preemptions_total", LLAMA_A, at, float(step)
        yield "vllm:num_preemptions_total", LLAMA_B, at, float(2 * step)
        yield "vllm:num_preemptions_total", MISTRAL, at, 4.0


def _engine(
    tmp_path_factory: pytest.TempPathFactory, name: str, series: Iterator[Sample]
) -> Iterator[PromQLClient]:
    folder: Path = tmp_path_factory.mktemp(name)
    write_openmetrics(folder / "serving.om", series)
    with serve(folder / "serving.om", folder / "data") as url:
        yield PromQLClient(endpoint=url, region="us-east-1", credentials=None)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromQLClient]:
    yield from _engine(tmp_path_factory, "serving", _series())


def _by_model(series: list[Series]) -> dict[str, float]:
    return {s.labels["model_name"]: round(s.points[-1][1], 5) for s in series}


def test_the_p99_and_p50_per_model_from_the_buckets(engine: PromQLClient) -> None:
    ttft = serving_metric(Server.VLLM, Signal.TTFT)
    assert ttft is not None
    by = model_group(ttft, LABELS)
    form = HistogramForm.CLASSIC
    p99 = engine.query(quantile(ttft, 0.99, CLUSTER, by, form=form, labels=LABELS), END)
    p50 = engine.query(quantile(ttft, 0.5, CLUSTER, by, form=form, labels=LABELS), END)
    assert _by_model(p99) == {"llama": 3.75, "mistral": 0.4975}
    assert _by_model(p50) == {"llama": 0.17653, "mistral": 0.375}  # 0.25 + 0.25 x 50 / 100
    # One series per model group: llama's two replicas are one.
    assert {s.labels[LABELS.deployment] for s in p99} == {"llama-vllm", "mistral-vllm"}


def test_the_ttft_alarm_returns_the_models_over_their_target(engine: PromQLClient) -> None:
    default = latency_slo_query(
        Signal.TTFT, CLUSTER, 2.0, (), form=HistogramForm.CLASSIC, labels=LABELS
    )
    own = latency_slo_query(
        Signal.TTFT, CLUSTER, 2.0, (("mistral", 0.3),), form=HistogramForm.CLASSIC, labels=LABELS
    )
    assert default is not None
    assert own is not None
    assert _by_model(engine.query(default.query, END)) == {"llama": 3.75}
    assert _by_model(engine.query(own.query, END)) == {"llama": 3.75, "mistral": 0.4975}


def test_generation_tokens_a_second_per_model(engine: PromQLClient) -> None:
    tokens = serving_metric(Server.VLLM, Signal.GENERATION_TOKENS)
    assert tokens is not None
    rate = engine.query(
        per_second(tokens, CLUSTER, model_group(tokens, LABELS), labels=LABELS), END
    )
    # 1,500 tokens a second per replica: llama's two, mistral's one.
    assert _by_model(rate) == {"llama": 3000.0, "mistral": 1500.0}


def test_the_errors_alarm_returns_the_model_over_five_percent(engine: PromQLClient) -> None:
    found = engine.query(errors_query(CLUSTER, 5.0, LABELS).query, END)
    assert _by_model(found) == {"llama": 0.1}


def test_the_waiting_alarm_names_the_replica_and_its_node(engine: PromQLClient) -> None:
    found = engine.query(waiting_query(CLUSTER, 10, 5, LABELS).query, END)
    assert [(s.labels[LABELS.pod], s.labels[LABELS.node], s.points[-1][1]) for s in found] == [
        ("llama-vllm-5d8f-a", "ip-10-0-1-1.ec2.internal", 12.0)
    ]


def test_the_kv_cache_alarm_needs_preemptions_and_reads_the_old_name(
    engine: PromQLClient,
) -> None:
    found = engine.query(kv_cache_full_query(CLUSTER, LABELS).query, END)
    assert sorted((s.labels[LABELS.pod], s.points[-1][1]) for s in found) == [
        ("llama-vllm-5d8f-a", 0.97),
        ("llama-vllm-5d8f-b", 0.98),
    ]


QWEN_RAY = {
    **_pod("qwen", "", "qwen-raycluster-worker-a", "ip-10-0-1-4.ec2.internal"),
    "ReplicaId": "r1",
}


def _ray_series() -> Iterator[Sample]:
    """A Ray Serve LLM replica: vLLM's metrics under Ray's spelling (contract ``ray_name``)
    and vLLM's labels; Ray's pods are no Deployment's."""
    for name, labels, at, value in _histogram(QWEN_RAY, {2.5: 100}):
        yield ray_name(name.removesuffix("_bucket")) + "_bucket", labels, at, value
    for step in range(STEPS):
        at = START + step * 30
        for reason, per_step in (("stop", 80.0), ("error", 20.0)):
            yield (
                ray_name("vllm:request_success_total"),
                {**QWEN_RAY, "finished_reason": reason},
                at,
                step * per_step,
            )


@pytest.fixture(scope="module")
def ray_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromQLClient]:
    yield from _engine(tmp_path_factory, "ray-serving", _ray_series())


def test_ray_serve_llms_vllm_series_are_read_as_vllms(ray_engine: PromQLClient) -> None:
    """``ray_vllm_*`` reaches vLLM's alarms: the TTFT p99 over its 2 s target (every request in
    the 1-2.5 s bucket: p99 1 + 1.5 x 0.99 = 2.485 s), and 20% of its requests finished with
    an error."""
    default = latency_slo_query(
        Signal.TTFT, CLUSTER, 2.0, (), form=HistogramForm.CLASSIC, labels=LABELS
    )
    assert default is not None
    assert _by_model(ray_engine.query(default.query, END)) == {"qwen": 2.485}
    assert _by_model(ray_engine.query(errors_query(CLUSTER, 5.0, LABELS).query, END)) == {
        "qwen": 0.2
    }


GEMMA_OLD = _pod("gemma", "gemma-vllm", "gemma-vllm-6c-a", "ip-10-0-1-5.ec2.internal")
PHI = _pod("phi", "phi-vllm", "phi-vllm-9b-a", "ip-10-0-1-6.ec2.internal")


def _http_series() -> Iterator[Sample]:
    """gemma: a vLLM whose finish reasons have no "error" (stop, length, abort), 10% of its
    completions answered 5xx; phi: a newer vLLM with 5% engine errors and 8% 5xx (a crash's
    failures among them). Both answer /metrics, which is no inference handler."""
    for step in range(STEPS):
        at = START + step * 30
        for pod, engine_errors, http_5xx in ((GEMMA_OLD, 0.0, 10.0), (PHI, 5.0, 8.0)):
            replica = {k: v for k, v in pod.items() if k not in ("model_name", "engine")}
            yield "vllm:num_requests_running", pod, at, 4.0
            for reason, per_step in (("stop", 100.0 - engine_errors), ("error", engine_errors)):
                if per_step:
                    labels = {**pod, "finished_reason": reason}
                    yield "vllm:request_success_total", labels, at, step * per_step
            for handler, status, per_step in (
                ("/v1/completions", "2xx", 100.0 - http_5xx),
                ("/v1/completions", "5xx", http_5xx),
                ("/metrics", "2xx", 50.0),
            ):
                labels = {**replica, "handler": handler, "method": "POST", "status": status}
                yield "http_requests_total", labels, at, step * per_step


@pytest.fixture(scope="module")
def http_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromQLClient]:
    yield from _engine(tmp_path_factory, "http-serving", _http_series())


def test_vllms_errors_are_its_5xx_where_it_counts_them_else_its_engines(
    http_engine: PromQLClient,
) -> None:
    """gemma's engine never says "error", its HTTP layer does: 10%; phi's HTTP ratio (8%) is
    read before its engine's (5%), not added to it."""
    found = http_engine.query(errors_query(CLUSTER, 5.0, LABELS).query, END)
    assert _by_model(found) == {"gemma": 0.1, "phi": 0.08}
