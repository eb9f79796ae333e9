"""``status``'s serving read on a real PromQL engine: the models each server's series name, by
name and model label, in one query, and the models whose alarm series are absent."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.demo.promql import answering
from cli.status.aws import read_serving_seen
from cli.status.serving import missing_series
from gpu_insights_agent.contract.serving import Server, Signal
from lambdas.shared.dcgm import CLOUDWATCH
from lambdas.shared.promql import PromQLClient
from tests.prometheus import Sample, serve, write_openmetrics

pytestmark = pytest.mark.promql_engine

REGION = "us-west-2"
CLUSTER = "inference"
AT = 1_767_225_600.0


def _pod(pod: str, **model: str) -> dict[str, str]:
    return {CLOUDWATCH.cluster: CLUSTER, CLOUDWATCH.pod: pod, **model}


def _series() -> Iterator[Sample]:
    llama = _pod("llama-a", model_name="llama")
    qwen = _pod("qwen-ray-worker", model_name="qwen")  # Ray Serve LLM
    resnet = _pod("triton-a", model="resnet")  # Triton without histogram_latencies
    other = {**_pod("llama-x", model_name="llama"), CLOUDWATCH.cluster: "elsewhere"}
    for at in (AT - 60, AT - 30, AT):
        yield "vllm:request_success_total", {**llama, "finished_reason": "stop"}, at, 5.0
        yield "vllm:time_to_first_token_seconds", llama, at, 1.0
        yield "vllm:num_requests_waiting", llama, at, 0.0
        yield "vllm:kv_cache_usage_perc", llama, at, 0.5
        yield "ray_vllm_request_success_total", {**qwen, "finished_reason": "stop"}, at, 5.0
        yield "ray_vllm_num_requests_waiting", qwen, at, 0.0
        yield "ray_vllm_time_to_first_token_seconds", qwen, at, 1.0
        yield "nv_inference_request_success", resnet, at, 9.0
        yield "nv_inference_pending_request_count", resnet, at, 0.0
        yield "num_requests_waiting", other, at, 0.0  # another cluster's: not read


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromQLClient]:
    folder: Path = tmp_path_factory.mktemp("status-serving")
    write_openmetrics(folder / "serving.om", _series())
    with serve(folder / "serving.om", folder / "data") as url, answering(REGION, url):
        yield PromQLClient(
            endpoint=f"https://monitoring.{REGION}.amazonaws.com", region=REGION, credentials=None
        )


def test_status_reads_each_servers_models_and_names_the_absent_series(
    engine: PromQLClient,
) -> None:
    signals = (Signal.TTFT, Signal.WAITING, Signal.KV_CACHE)
    seen = read_serving_seen(engine, CLUSTER, signals, now=AT)
    assert seen[Server.VLLM][Signal.REQUESTS] == {"llama", "qwen"}
    assert seen[Server.VLLM][Signal.KV_CACHE] == {"llama"}
    assert seen[Server.TRITON][Signal.REQUESTS] == {"resnet"}
    assert Server.NIM not in seen
    missing = missing_series(seen, targeted=("llama", "mistral"), signals=signals)
    assert [(m.model, m.server, m.signal) for m in missing] == [
        ("qwen", Server.VLLM, Signal.KV_CACHE),
        ("resnet", Server.TRITON, Signal.TTFT),
        ("resnet", Server.TRITON, Signal.KV_CACHE),
        ("mistral", None, Signal.REQUESTS),
    ]
    assert engine.requests == 1
