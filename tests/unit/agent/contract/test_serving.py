"""The serving metric table: each server's names as its source writes them, the renames newest
first, one row per server and signal."""

import re
from collections import Counter

from gpu_insights_agent.contract.serving import (
    SERVERS,
    SERVING_METRICS,
    MetricType,
    Server,
    Signal,
    name_regex,
    ray_name,
    servers_with,
    serving_metric,
)


def test_one_row_per_server_and_signal_and_every_server_named() -> None:
    pairs = Counter((m.server, m.signal) for m in SERVING_METRICS)
    assert max(pairs.values()) == 1
    assert {m.server for m in SERVING_METRICS} == set(SERVERS) == set(Server)


def test_vllm_renames_list_the_newest_name_first() -> None:
    kv = serving_metric(Server.VLLM, Signal.KV_CACHE)
    itl = serving_metric(Server.VLLM, Signal.INTER_TOKEN)
    assert kv is not None
    assert itl is not None
    assert kv.names == ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
    assert itl.names == ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds")
    # A fraction 0-1, despite _perc.
    assert kv.unit == "1"


def test_counters_keep_the_total_suffix_the_scrape_gives() -> None:
    for m in SERVING_METRICS:
        if m.type is MetricType.COUNTER and m.server in (Server.VLLM, Server.NIM, Server.RAY_SERVE):
            assert all(n.endswith("_total") for n in m.names), m


def test_vllm_errors_are_finished_requests_with_reason_error() -> None:
    errors = serving_metric(Server.VLLM, Signal.ERRORS)
    requests = serving_metric(Server.VLLM, Signal.REQUESTS)
    assert errors is not None
    assert requests is not None
    assert errors.names == requests.names == ("vllm:request_success_total",)
    assert errors.matchers == (("finished_reason", "error"),)


def test_model_labels_and_latency_units() -> None:
    assert {s: r.model_label for s, r in SERVERS.items()} == {
        Server.VLLM: "model_name",
        Server.NIM: "model_name",
        Server.TRITON: "model",
        Server.RAY_SERVE: "deployment",
    }
    ttft = {m.server: m.seconds_per_unit for m in servers_with(Signal.TTFT)}
    assert ttft == {Server.VLLM: 1, Server.NIM: 1, Server.TRITON: 0.001}
    for m in SERVING_METRICS:
        assert (m.type is MetricType.HISTOGRAM) == (m.seconds_per_unit is not None), m


def test_vllms_names_are_read_under_ray_serve_llms_spelling_too() -> None:
    """Ray Serve LLM's ``ray_vllm_*``: vLLM's Ray wrappers sanitise ``:`` to ``_`` and Ray
    prefixes ``ray_``; one pattern matches both spellings of a name and nothing else."""
    assert SERVERS[Server.VLLM].also_under_ray
    assert not any(r.also_under_ray for s, r in SERVERS.items() if s is not Server.VLLM)
    assert ray_name("vllm:request_success_total") == "ray_vllm_request_success_total"
    assert ray_name("vllm:num_requests_waiting") == "ray_vllm_num_requests_waiting"
    for m in SERVING_METRICS:
        for name in m.names if m.server is Server.VLLM else ():
            pattern = re.compile(name_regex(name))
            assert pattern.fullmatch(name), name
            assert pattern.fullmatch(ray_name(name)), name
            assert not pattern.fullmatch(f"{name}_bucket")
            assert not pattern.fullmatch(name.replace("vllm:", "sglang:"))
