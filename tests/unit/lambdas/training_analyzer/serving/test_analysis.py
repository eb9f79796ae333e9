"""A day of serving to rows and findings, with the numbers a person would check by hand.

Prices at H100's $6.88 a GPU-hour (lambdas/training_analyzer/gpu_prices.py); a month is 730
hours, 30.4167 days (gpu_hours/findings.py HOURS_PER_MONTH)."""

from datetime import date

import pytest

from lambdas.shared.findings import Kind, Severity
from lambdas.shared.serving_table import ServingRow
from lambdas.training_analyzer.gpu_hours.by_workload import WorkloadGpu
from lambdas.training_analyzer.serving.analysis import (
    ServingReads,
    serving_findings,
    serving_rows,
)
from lambdas.training_analyzer.serving.autoscaling import replicas_needed
from lambdas.training_analyzer.serving.keys import ModelKey, ReplicaKey

DAY = date(2026, 11, 30)
PRICE = 6.88


def _reads(
    model: ModelKey,
    pods: list[str],
    *,
    requests: float,
    tokens: float,
    kv: float,
    waiting: float,
    preemptions: float = 0.0,
) -> ServingReads:
    """Every replica alike: the day's totals split evenly between them."""
    each = len(pods)
    keys = [ReplicaKey(model, pod) for pod in pods]
    return ServingReads(
        requests=dict.fromkeys(keys, requests / each),
        prompt_tokens=dict.fromkeys(keys, 4 * tokens / each),
        generation_tokens=dict.fromkeys(keys, tokens / each),
        preemptions=dict.fromkeys(keys, preemptions / each),
        kv_cache=dict.fromkeys(keys, kv),
        waiting=dict.fromkeys(keys, waiting),
        ttft_p99_s={model: 0.42},
        replicas={model: each},
    )


CHAT = ModelKey("serving", "chat", "Deployment", "llama-3-8b")
CHAT_PODS = ["chat-7c9b4d6f8-x2v9k", "chat-7c9b4d6f8-q8hzt", "chat-7c9b4d6f8-b5wlm"]


def test_an_idle_deployments_spare_replicas_are_found_with_their_dollars() -> None:
    # Three H100 replicas held all day (72 GPU-hours) at 18% of their power limit, the KV
    # cache 6% used, nothing waiting: one replica holds 3 x 6% = 18% (under the 40% target).
    reads = _reads(CHAT, CHAT_PODS, requests=43_200, tokens=8_640_000, kv=0.06, waiting=0)
    workloads = {("serving", "chat"): WorkloadGpu("Deployment", 72.0, 18.0)}
    (row,) = serving_rows(reads, workloads, PRICE)
    assert row.replicas == 3
    assert row.gpu_hours == 72.0
    assert row.cost_usd == pytest.approx(495.36)
    assert row.mean_kv_cache_percent == pytest.approx(6.0)
    assert row.ttft_p99_s == 0.42
    # $495.36 over 8.64 M generated tokens.
    assert row.usd_per_million_output_tokens == pytest.approx(57.3333, abs=1e-4)
    (finding,) = serving_findings([row], day=DAY, gpu_hour_usd=PRICE)
    assert finding.kind is Kind.SERVING_OVERPROVISIONED
    assert finding.resource == "namespace/serving/Deployment/chat"
    assert finding.severity is Severity.WARNING
    assert finding.evidence["replicas_needed"] == 1
    # Two replicas of 24 GPU-hours a day: 2 x 24 x 6.88 x 30.4167 = $10,044.80 a month.
    assert finding.estimated_monthly_waste_usd == pytest.approx(10_044.80)
    assert "2 of them could go ($10,045 a month)" in finding.summary
    assert "Scale chat to 1 replica" in finding.recommendation


def test_a_single_idle_replica_is_told_of_a_smaller_gpu_unpriced() -> None:
    reads = _reads(CHAT, CHAT_PODS[:1], requests=1_000, tokens=100_000, kv=0.02, waiting=0)
    workloads = {("serving", "chat"): WorkloadGpu("Deployment", 24.0, 12.0)}
    (finding,) = serving_findings(serving_rows(reads, workloads, PRICE), day=DAY,
                                  gpu_hour_usd=PRICE)  # fmt: skip
    assert finding.kind is Kind.SERVING_OVERPROVISIONED
    assert finding.severity is Severity.INFO
    assert finding.estimated_monthly_waste_usd is None
    assert "a smaller GPU" in finding.summary


def test_a_busy_or_queueing_deployment_is_not_overprovisioned() -> None:
    workloads = {("serving", "chat"): WorkloadGpu("Deployment", 72.0, 18.0)}
    queued = _reads(CHAT, CHAT_PODS, requests=43_200, tokens=8_640_000, kv=0.06, waiting=1)
    assert serving_findings(serving_rows(queued, workloads, PRICE), day=DAY,
                            gpu_hour_usd=PRICE) == []  # fmt: skip
    powered = {("serving", "chat"): WorkloadGpu("Deployment", 72.0, 30.0)}
    idle = _reads(CHAT, CHAT_PODS, requests=43_200, tokens=8_640_000, kv=0.06, waiting=0)
    assert serving_findings(serving_rows(idle, powered, PRICE), day=DAY,
                            gpu_hour_usd=PRICE) == []  # fmt: skip


def test_a_saturated_deployment_is_told_what_to_add_at_its_per_replica_load() -> None:
    code = ModelKey("serving", "code", "InferenceService", "qwen-coder")
    pods = ["code-predictor-7c9b4d6f8-x2v9k", "code-predictor-7c9b4d6f8-q8hzt"]
    # Two replicas, KV cache 80% used all day, up to 37 requests waiting, 900 of 60,000
    # requests preempted (1.5%): 2 x 80 / 40 = 4 replicas needed, 2 to add.
    reads = _reads(
        code, pods, requests=60_000, tokens=30_000_000, kv=0.8, waiting=37, preemptions=900
    )
    workloads = {("serving", "code"): WorkloadGpu("InferenceService", 48.0, 71.0)}
    (finding,) = serving_findings(serving_rows(reads, workloads, PRICE), day=DAY,
                                  gpu_hour_usd=PRICE)  # fmt: skip
    assert finding.kind is Kind.SERVING_SATURATED
    assert finding.resource == "namespace/serving/InferenceService/code"
    assert finding.evidence["replicas_to_add"] == 2
    assert finding.evidence["preempted_percent"] == 1.5
    assert finding.evidence["monthly_cost_of_added_usd"] == pytest.approx(10_044.80)
    assert finding.estimated_monthly_waste_usd is None
    assert "up to 37 requests waiting at a replica and 900 preemptions (1.5%" in finding.summary
    assert finding.recommendation.startswith("Add 2 replicas (about $10,045 a month")
    # The same day with its GPUs unread: the replicas' cost is unknown, not $0.
    (unpriced,) = serving_findings(serving_rows(reads, {}, PRICE), day=DAY, gpu_hour_usd=PRICE)
    assert unpriced.recommendation.startswith(
        "Add 2 replicas (their cost unknown: no GPU-hours were attributed to its replicas)"
    )


def test_a_workloads_gpu_hours_are_split_between_its_models_by_generated_tokens() -> None:
    a = ModelKey("serving", "multi", "RayService", "small")
    b = ModelKey("serving", "multi", "RayService", "large")
    reads = ServingReads(
        generation_tokens={ReplicaKey(a, "p"): 1_000_000, ReplicaKey(b, "p"): 3_000_000},
        requests={ReplicaKey(a, "p"): 10, ReplicaKey(b, "p"): 10},
    )
    rows = serving_rows(reads, {("serving", "multi"): WorkloadGpu("RayService", 24.0, 50.0)},
                        PRICE)  # fmt: skip
    hours = {r.model: r.gpu_hours for r in rows}
    assert hours == {"small": 6.0, "large": 18.0}
    # The same price per token for both: $165.12 over 4 M tokens.
    assert {round(r.usd_per_million_output_tokens or 0, 2) for r in rows} == {41.28}
    # No KV cache or queue read (a server that sends neither): no finding, not a guess.
    assert serving_findings(rows, day=DAY, gpu_hour_usd=PRICE) == []


def test_a_model_without_gpu_hours_in_the_attribution_costs_nothing_and_says_so() -> None:
    reads = _reads(CHAT, CHAT_PODS[:1], requests=10, tokens=0, kv=0.5, waiting=0)
    (row,) = serving_rows(reads, {}, PRICE)
    assert (row.gpu_hours, row.cost_usd, row.mean_power_percent) == (0.0, 0.0, None)
    assert row.usd_per_million_output_tokens is None
    assert isinstance(row, ServingRow)


@pytest.mark.parametrize(
    ("replicas", "kv", "needed"), [(3, 6.0, 1), (2, 80.0, 4), (4, 40.0, 4), (10, 41.0, 11)]
)
def test_replicas_needed_hold_the_mean_kv_cache_at_the_target(
    replicas: int, kv: float, needed: int
) -> None:
    assert replicas_needed(replicas, kv, 40.0) == needed
