"""The serving dashboards' bodies: what each widget reads, how many lines it can draw, and the
alarms' targets in their titles (the queries' values on a real engine:
tests/functional/cli/backtest/test_serving_dashboard.py)."""

from typing import Any

from cli.backtest.dashboards import body_rule_errors
from cli.backtest.promql_widgets import series_bound
from dashboards.bodies import MAX_BODY_BYTES, encode
from dashboards.serving import (
    DEPLOYMENT_PATTERN,
    MODELS_DRAWN,
    MODELS_NOT_DRAWN,
    MODELS_SERVING,
    NAMESPACE_PATTERN,
    REPLICAS_DRAWN,
    ServingTargets,
    deployment,
    serving,
)
from dashboards.widgets import CHART_WIDGET, chart_queries
from gpu_insights_agent.contract.serving import Signal, servers_with

TARGETS = ServingTargets(
    ttft_p99_s=2.0,
    ttft_p99_targets=(("llama", 1.5),),
    e2e_p99_s=None,
    e2e_p99_targets=(("mistral", 20.0),),
    waiting_requests=10,
    waiting_minutes=5,
    kv_cache_full=0.95,
    error_percent=5.0,
)


def _charts(body: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {
        w["properties"]["title"]: chart_queries(w)
        for w in body["widgets"]
        if w["type"] == CHART_WIDGET
    }


def test_each_model_widget_draws_at_most_ten_models_per_server_and_keeps_the_rules() -> None:
    body = serving("inference", "us-east-1", TARGETS)
    assert body_rule_errors(body) == []
    charts = _charts(body)
    assert len(encode(body).encode()) < MAX_BODY_BYTES
    for title, queries in charts.items():
        bound = 1 if title in {MODELS_SERVING, MODELS_NOT_DRAWN} else MODELS_DRAWN
        assert [series_bound(q["query"]) for q in queries] == [bound] * len(queries), title
    # One query per server with the signal, labelled with it: vLLM, NIM and Triton time the
    # first token; all four count requests.
    ttft = charts["Time to first token p99 (s), 10 models; alarm above 2 s (llama 1.5 s)"]
    assert [q["label"] for q in ttft] == [str(m.server) for m in servers_with(Signal.TTFT)]
    assert [q["label"] for q in ttft] == ["vllm", "nim-llm", "triton"]
    assert len(charts["Requests a second, 10 models"]) == 4
    # Triton's TTFT histogram is in ms: its p99 is written in seconds.
    assert ttft[2]["query"].count("* 0.001") == 1
    assert "histogram_quantile(0.5," in charts["Time to first token p50 (s), 10 models"][0]["query"]


def test_the_alarms_targets_are_in_the_titles_of_what_they_read() -> None:
    titles = set(_charts(serving("inference", "us-east-1", TARGETS)))
    assert {
        "Time to first token p99 (s), 10 models; alarm above 2 s (llama 1.5 s)",
        "End-to-end latency p99 (s), 10 models; alarm above (mistral 20 s)",
        "Requests waiting, the busiest replica; alarm above 10 on a replica for 5 min",
        "KV cache used, the fullest replica (%); alarm at 95% while preempting",
        "Errors (% of finished requests); alarm above 5%",
        # No target on p50, p90 or inter-token latency: no alarm reads them.
        "Time to first token p90 (s), 10 models",
        "Inter-token latency p99 (s), 10 models",
    } <= titles
    bare = set(_charts(serving("inference", "us-east-1")))
    assert "Errors (% of finished requests)" in bare
    assert not any("alarm" in t for t in bare)


def test_kv_cache_and_errors_are_drawn_in_percent_preemptions_a_minute() -> None:
    charts = _charts(serving("inference", "us-east-1"))
    kv = charts["KV cache used, the fullest replica (%)"]
    assert [q["label"] for q in kv] == ["vllm", "nim-llm"]
    assert all(") * 100) and on (" in q["query"] for q in kv)
    assert all(") * 100) and on (" in q["query"] for q in charts["Errors (% of finished requests)"])
    (preemptions,) = charts["Preemptions a minute"]
    assert ") * 60) and on (" in preemptions["query"]


def test_the_deployment_dashboard_reads_one_deployment_replica_by_replica() -> None:
    body = deployment("inference", "us-east-1", TARGETS)
    assert body_rule_errors(body) == []
    assert [(v["id"], v["pattern"], v["inputType"]) for v in body["variables"]] == [
        ("namespace", NAMESPACE_PATTERN, "input"),
        ("deployment", DEPLOYMENT_PATTERN, "input"),
    ]
    charts = _charts(body)
    for title, queries in charts.items():
        assert [series_bound(q["query"]) for q in queries] == [REPLICAS_DRAWN] * len(queries)
        for q in queries:
            # Every series it reads is the typed namespace's (and the deployment's, but DCGM's).
            assert NAMESPACE_PATTERN in q["query"], title
            if "DCGM_FI_DEV_POWER_USAGE" not in q["query"]:
                assert DEPLOYMENT_PATTERN in q["query"], title
    assert "Time to first token p99 (s), per replica; alarm above 2 s (llama 1.5 s)" in charts
    assert "GPU power per replica (W, DCGM)" in charts
    assert "GPU power against the limit per replica (%, the busiest GPU)" not in charts
    otlp = _charts(deployment("inference", "us-east-1", exporter_otlp=True))
    (limit,) = otlp["GPU power against the limit per replica (%, the busiest GPU)"]
    assert '__name__="gpu_power_utilization"' in limit["query"]
