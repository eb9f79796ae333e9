"""``status`` names every model whose series an SLO alarm reads do not arrive."""

from cli.preflight.checks import Verdict
from cli.serving_paths import data_paths
from cli.status.serving import check_serving_series, missing_series
from gpu_insights_agent.contract.serving import Server, Signal
from lambdas.shared.container_insights_mode import ContainerInsightsMode

OTEL = ContainerInsightsMode.OTEL


def test_each_model_without_an_alarms_series_is_named_with_its_server_and_fix() -> None:
    both = frozenset({"llama", "qwen"})
    seen = {
        Server.VLLM: {
            Signal.REQUESTS: both,
            Signal.TTFT: both,
            Signal.E2E: both,
            Signal.WAITING: both,
            Signal.KV_CACHE: frozenset({"llama"}),  # qwen's server sends no KV cache gauge
        },
        # Triton without histogram_latencies: no first-response histogram.
        Server.TRITON: {
            Signal.REQUESTS: frozenset({"resnet"}),
            Signal.WAITING: frozenset({"resnet"}),
        },
    }
    found = missing_series(seen, targeted=("llama", "mistral"))
    assert [(m.model, m.server, m.signal) for m in found] == [
        ("qwen", Server.VLLM, Signal.KV_CACHE),
        ("resnet", Server.TRITON, Signal.TTFT),
        ("resnet", Server.TRITON, Signal.E2E),
        ("resnet", Server.TRITON, Signal.KV_CACHE),
        ("mistral", None, Signal.REQUESTS),
    ]
    assert found[0].enable == "vllm sends no vllm:kv_cache_usage_perc for it"
    assert found[1].enable == "start Triton with --metrics-config histogram_latencies=true"
    assert found[2].enable == "triton exports no such metric"
    # A model no server names: each server's data path (cli/serving_paths.py, preflight's).
    assert "nim-llm (port 8000 /v1/metrics): this project's Prometheus receiver" in found[4].enable
    bare = missing_series(seen, ("mistral",), paths=data_paths(OTEL, scraped=False))
    assert "nim-llm (port 8000 /v1/metrics): no path (deploy with -c serving_metrics=true)" in (
        bare[-1].enable
    )
    check = check_serving_series(found)
    assert check.verdict is Verdict.WARN
    assert check.detail.startswith("5 model signal(s) without series")
    assert "'mistral' (no server): no requests series" in check.detail


def test_every_series_present_is_ok_and_an_unreadable_read_fails() -> None:
    seen = {Server.NIM: {s: frozenset({"llama"}) for s in Signal}}
    assert missing_series(seen, targeted=("llama",)) == []
    assert check_serving_series([]).verdict is Verdict.OK
    assert check_serving_series([], unreadable="AccessDenied").verdict is Verdict.FAIL
