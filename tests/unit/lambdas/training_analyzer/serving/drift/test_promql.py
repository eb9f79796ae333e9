"""Drift's reads turned into windows: CloudWatch's native answer (the share under each power of
two, the count and the sum) and a Prometheus scrape's classic one (cumulative ``le`` counts)
give one model's hour the same bins; the queries ask both forms, the native one at powers of
two. (The classic form on a real engine: tests/functional/lambdas/test_serving_drift_reads.py.)"""

import math

from lambdas.shared.dcgm import CLOUDWATCH as L
from lambdas.shared.exporter_promql import EDGE
from lambdas.shared.promql import Series
from lambdas.training_analyzer.serving.drift.detect import DriftSignal, Window
from lambdas.training_analyzer.serving.drift.finding import DriftModel
from lambdas.training_analyzer.serving.drift.promql import (
    NATIVE_LENGTH_BOUNDS,
    DriftQueries,
    windows,
)

MODEL = {"model_name": "llama", L.namespace: "inference"}
HOUR_END = 7200 - EDGE  # the hour from 3600


def _series(le: str, value: float) -> Series:
    return Series({**MODEL, "le": le}, ((HOUR_END, value),))


def test_a_native_answer_is_counts_under_each_bound() -> None:
    # 1,000 requests: 10% under 256 tokens, 60% under 512, all under 1,024; 500,000 tokens.
    answer = [
        _series("f:256", 0.1),
        _series("f:512", 0.6),
        _series("f:1024", 1.0),
        _series("+Inf", 1000.0),
        _series("sum", 500_000.0),
    ]
    found = windows(DriftSignal.PROMPT_LENGTH, answer)
    window = found[DriftModel("inference", "llama")][DriftSignal.PROMPT_LENGTH][3600]
    assert window == Window({"256": 100.0, "512": 500.0, "1024": 400.0, "+Inf": 0.0}, 500_000.0)
    assert window.mean == 500.0


def test_a_classic_answer_is_the_same_hour_and_a_rate_of_nothing_is_skipped() -> None:
    answer = [
        _series("256", 100.0),
        _series("512", 600.0),
        _series("1024", 1000.0),
        _series("+Inf", 1000.0),
        _series("sum", 500_000.0),
        Series({**MODEL, "le": "2048"}, ((HOUR_END, math.nan),)),
    ]
    found = windows(DriftSignal.PROMPT_LENGTH, answer)
    window = found[DriftModel("inference", "llama")][DriftSignal.PROMPT_LENGTH][3600]
    assert window == Window({"256": 100.0, "512": 500.0, "1024": 400.0, "+Inf": 0.0}, 500_000.0)


def test_finish_reasons_are_counted_by_reason() -> None:
    answer = [
        Series({**MODEL, "finished_reason": r}, ((HOUR_END, n),))
        for r, n in (("stop", 900.0), ("length", 100.0))
    ]
    found = windows(DriftSignal.FINISH_REASON, answer)
    window = found[DriftModel("inference", "llama")][DriftSignal.FINISH_REASON][3600]
    assert window == Window({"stop": 900.0, "length": 100.0})


def test_the_queries_ask_both_forms_the_native_at_powers_of_two() -> None:
    query = DriftQueries("train").all()[DriftSignal.PROMPT_LENGTH]
    assert NATIVE_LENGTH_BOUNDS[:3] == (1.0, 2.0, 4.0)
    by = 'sum by ("@resource.k8s.namespace.name", model_name)'
    assert f"histogram_fraction(-Inf, 131072, {by}" in query
    assert '__name__=~"(ray_)?vllm[:_]request_prompt_tokens_bucket"' in query  # vLLM, Ray's too
    assert '__name__="request_prompt_tokens_bucket"' in query  # NIM
    assert "offset 60m" in query  # an hourly store's increase
