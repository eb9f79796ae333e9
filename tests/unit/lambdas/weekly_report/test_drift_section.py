"""The report's traffic drift: a model's days of ``serving_drift`` findings read together (its
first hour, its days, its latest moves), its name escaped, and no section without drift."""

from typing import Any

from lambdas.weekly_report.drift_section import drift_figures, drift_line, drift_section


def _finding(day: str, since: str | None, moved: list[str], model: str) -> dict[str, Any]:
    return {
        "kind": "serving_drift",
        "resource": f"namespace/inference/model/{model}",
        "summary": "...",
        "recommendation": "More outputs cut at max_tokens.",
        "evidence": {
            "day": day,
            "namespace": "inference",
            "model": model,
            "baseline": "the same hours of 4 of the 4 weeks before",
            "moved": moved,
            "signals": {"prompt_length": {"since": since}},
        },
    }


MODEL = "mistral<script>"
WEEK = [
    _finding("2026-12-06", "2026-12-06 00:00 UTC", ["prompts 80% longer"], MODEL),
    _finding("2026-12-05", "2026-12-05 14:00 UTC", ["prompts 79% longer"], MODEL),
    {"kind": "serving_saturated", "resource": "x", "evidence": {}},
    {"kind": "serving_drift", "evidence": "not a mapping"},
]


def test_a_models_days_are_read_together() -> None:
    (model,) = drift_figures(WEEK)
    assert model["model"] == MODEL
    assert model["days"] == ["2026-12-05", "2026-12-06"]
    assert model["since"] == "2026-12-05 14:00 UTC"
    assert model["moved"] == ["prompts 80% longer"]  # the latest day's


def test_the_section_escapes_the_models_name_and_shows_its_figures() -> None:
    html = drift_section(drift_figures(WEEK))
    assert '<h2 id="drift">Traffic drift</h2>' in html
    assert "<script>" not in html
    assert "mistral&lt;script&gt;" in html
    assert "prompts 80% longer" in html
    assert '<td class="num">2</td>' in html
    # What it was compared with: the weeks before, or a new model's days before.
    assert "<td>the same hours of 4 of the 4 weeks before</td>" in html
    assert drift_line(drift_figures(WEEK)) == (
        "Traffic drift: 1 model(s) moved from their past: mistral<script> since "
        "2026-12-05 14:00 UTC"
    )


def test_no_drift_no_section() -> None:
    assert drift_section(drift_figures(WEEK[2:])) == ""
    assert drift_line([]) is None
