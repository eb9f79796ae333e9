"""A model's day against its baseline: a planted shift is named from its first hour with its
numbers; an unchanged day, and a significant shift too small to act on, raise nothing."""

from datetime import UTC, date, datetime

from lambdas.shared.findings import Kind, Severity
from lambdas.training_analyzer.serving.drift import drift_findings
from lambdas.training_analyzer.serving.drift.detect import (
    DriftSignal,
    ModelDay,
    Window,
    alpha_per_test,
    compare,
    detect,
    total,
)
from lambdas.training_analyzer.serving.drift.finding import DriftModel
from lambdas.training_analyzer.serving.drift.promql import DriftReads

DAY = date(2026, 12, 5)
START = int(datetime(2026, 12, 5, tzinfo=UTC).timestamp())
#: A prompt-length histogram's shares over vLLM's buckets, and each bucket's mean.
SHARES = {"200": 0.1, "500": 0.4, "1000": 0.4, "2000": 0.1}
MEANS = {"200": 150.0, "500": 350.0, "1000": 700.0, "2000": 1400.0}
LONGER = {"200": 0.02, "500": 0.2, "1000": 0.5, "2000": 0.28}


def _prompts(n: float, shares: dict[str, float]) -> Window:
    counts = {k: n * s for k, s in shares.items()}
    return Window(counts, sum(c * MEANS[k] for k, c in counts.items()))


def _finish(n: float, truncated: float) -> Window:
    return Window({"stop": n * (1 - truncated), "length": n * truncated})


def _day(shift_from: int | None, *, longer: dict[str, float] = LONGER) -> ModelDay:
    day = ModelDay()
    hours = [START + h * 3600 for h in range(24)]
    shifted = [shift_from is not None and h >= START + shift_from * 3600 for h in hours]
    day.current[DriftSignal.PROMPT_LENGTH] = {
        h: _prompts(1_000, longer if s else SHARES) for h, s in zip(hours, shifted, strict=True)
    }
    day.baseline[DriftSignal.PROMPT_LENGTH] = {h: _prompts(4_000, SHARES) for h in hours}
    day.current[DriftSignal.FINISH_REASON] = {
        h: _finish(1_000, 0.2 if s else 0.1) for h, s in zip(hours, shifted, strict=True)
    }
    day.baseline[DriftSignal.FINISH_REASON] = {h: _finish(4_000, 0.1) for h in hours}
    return day


def test_a_shift_is_found_from_its_first_hour_with_its_size() -> None:
    shifts = {s.signal: s for s in detect(_day(14))}
    prompts = shifts[DriftSignal.PROMPT_LENGTH]
    assert prompts.since == START + 14 * 3600
    assert (prompts.hours_drifted, prompts.hours_tested) == (10, 24)
    # From the shift's hour on: mean 575 -> 815 tokens.
    assert prompts.baseline.mean == 575.0
    assert round(prompts.current.mean or 0) == 815
    finish = shifts[DriftSignal.FINISH_REASON]
    assert finish.since == START + 14 * 3600
    # Two signals, 25 tests each: the model-day's 0.5% split fifty ways.
    assert prompts.alpha == alpha_per_test(2) == 0.005 / 50


def test_an_unchanged_day_raises_nothing() -> None:
    assert detect(_day(None)) == []


def test_a_significant_shift_too_small_to_act_on_raises_nothing() -> None:
    # 5% of requests move one bucket up at 1,000 requests an hour: significant over the day
    # (p < 1e-6 on 24,000 requests) but the mean moves 4% and the bins 0.05: under 0.1.
    slight = {"200": 0.1, "500": 0.35, "1000": 0.45, "2000": 0.1}
    day = _day(0, longer=slight)
    prompts = DriftSignal.PROMPT_LENGTH
    now, before = total(day.current[prompts].values()), total(day.baseline[prompts].values())
    assert now is not None
    assert before is not None
    test = compare(prompts, now, before)
    assert test is not None
    assert test.p_value < alpha_per_test(2)
    assert prompts not in {s.signal for s in detect(day)}


def test_the_finding_names_the_model_what_moved_by_how_much_and_since_when() -> None:
    model = DriftModel("inference", "mistralai/Mistral-7B-Instruct-v0.3")
    reads = DriftReads({model: _day(14)}, {model: "the same hours of 4 of the 4 weeks before"})
    (finding,) = drift_findings(reads, DAY)
    assert finding.kind is Kind.SERVING_DRIFT
    assert finding.severity is Severity.WARNING
    assert finding.resource == "namespace/inference/model/mistralai/Mistral-7B-Instruct-v0.3"
    assert finding.summary == (
        "mistralai/Mistral-7B-Instruct-v0.3 in inference drifted from the same hours of 4 of the 4 "
        "weeks before: prompts 42% longer (mean 575 -> 815 tokens); truncated outputs (finish "
        "reason length) 10.0% -> 20.0%, since 2026-12-05 14:00 UTC"
    )
    assert "new client or a prompt-template change" in finding.recommendation
    assert "raise max_tokens" in finding.recommendation
    assert "retraining it with fresh data" in finding.recommendation
    prompts = finding.evidence["signals"]["prompt_length"]
    assert prompts["mean_change_percent"] == 41.7
    assert prompts["hours_drifted"] == 10
    assert prompts["chi_square"] > prompts["threshold"]
