"""The report's inference serving section from a week of serving tables as the training analyzer
writes them (serving_table.encode), at $4 a GPU-hour: a chat Deployment of llama-3-8b at $3
per million output tokens (last week $4), the same model on a RayService at $6, a mistral-7b
InferenceService at $12 that is new this week; one day's chat row is bad (skipped, that day's
other rows kept), one day has no table."""

import csv
import io
import json
from datetime import date, timedelta
from typing import Any

import pytest

from lambdas.shared.serving_table import ServingRow, encode
from lambdas.weekly_report.figures import read_findings, week_figures
from lambdas.weekly_report.render import html_report, text_summary
from lambdas.weekly_report.serving_section import (
    read_days,
    serving_csv,
    serving_figures,
    serving_line,
)

MONDAY = date(2026, 11, 23)  # 2026-W48
WEEK = [MONDAY + timedelta(days=i) for i in range(7)]
LAST_WEEK = [d - timedelta(days=7) for d in WEEK]
BAD_DAY, NO_TABLE = WEEK[2], WEEK[6]


def _row(namespace: str, workload: str, kind: str, model: str, **figures: float) -> ServingRow:
    values: dict[str, Any] = {
        "replicas": 2,
        "gpu_hours": 48.0,
        "requests": 10_000.0,
        "prompt_tokens": 1e6,
        "generation_tokens": 64e6,
        "mean_power_percent": 60.0,
        "mean_kv_cache_percent": 40.0,
        "max_waiting": 3.0,
        "preemptions": 0.0,
        "ttft_p99_s": 0.4,
    }
    values.update(figures)
    values["cost_usd"] = values["gpu_hours"] * 4.0
    return ServingRow(namespace=namespace, workload=workload, kind=kind, model=model, **values)


CHAT = _row("ml", "chat-llama", "Deployment", "llama-3-8b")  # $192, 64M tokens: $3/M
RAY = _row("research", "ray-llm", "RayService", "llama-3-8b", gpu_hours=12.0, generation_tokens=8e6)
RAG = _row("ml", "rag", "InferenceService", "mistral-7b", gpu_hours=24.0, generation_tokens=8e6)


def _bodies(days: list[date], rows: list[ServingRow]) -> dict[date, bytes | None]:
    return {d: encode(d, rows).encode() for d in days}


def _this_week() -> dict[date, bytes | None]:
    bodies = _bodies(WEEK, [CHAT, RAY, RAG])
    bad = json.loads(encode(BAD_DAY, [CHAT, RAY, RAG]))
    bad["rows"][0]["gpu_hours"] = -1
    bodies[BAD_DAY] = json.dumps(bad).encode()
    bodies[NO_TABLE] = None
    return bodies


def _figures(findings: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    last = _bodies(LAST_WEEK, [_row("ml", "chat-llama", "Deployment", "llama-3-8b",
                                    generation_tokens=48e6)])  # fmt: skip
    return serving_figures(read_days(_this_week()), read_days(last), findings or [])


def test_prices_per_million_output_tokens_week_on_week() -> None:
    serving = _figures()
    # Six days read, 2026-11-29 missing; 2026-11-25's chat row skipped, its others counted.
    assert serving["days_read"] == [d.isoformat() for d in WEEK if d != NO_TABLE]
    assert serving["missing_days"] == ["2026-11-29"]
    assert serving["unreadable_days"] == []
    assert serving["skipped_rows"] == [
        {"day": "2026-11-25", "error": "row 0: gpu_hours is negative: -1"}
    ]
    # Five full days of 84 GPU-hours ($336) and the bad day's RayService and mistral (36, $144).
    assert (serving["gpu_hours"], serving["cost_usd"]) == (456.0, 1824.0)
    # $1,824 over 416M tokens.
    assert serving["usd_per_million_output_tokens"] == 4.3846
    chat, rag, ray = serving["workloads"]  # the costliest first
    assert (chat["workload"], chat["cost_usd"], chat["generation_tokens"]) == (
        "chat-llama",
        960,
        320e6,
    )
    assert (
        chat["usd_per_million_output_tokens"],
        chat["last_week_usd_per_million_output_tokens"],
    ) == (3.0, 4.0)
    assert chat["change_percent"] == -25.0
    assert (chat["replicas"], chat["requests"]) == (2, 50_000)
    assert (rag["model"], rag["cost_usd"], rag["usd_per_million_output_tokens"]) == (
        "mistral-7b", 576.0, 12.0,
    )  # fmt: skip
    assert rag["last_week_usd_per_million_output_tokens"] is None
    assert (ray["kind"], ray["usd_per_million_output_tokens"]) == ("RayService", 6.0)
    llama, mistral = serving["models"]
    # llama-3-8b over both workloads: $960 + $288 over 320M + 48M tokens, against last week's $4.
    assert (llama["model"], llama["cost_usd"], llama["usd_per_million_output_tokens"]) == (
        "llama-3-8b", 1248.0, 3.3913,
    )  # fmt: skip
    assert llama["change_percent"] == -15.2
    assert mistral["change_percent"] is None
    assert serving["last_week_days_read"] == 7


def test_the_section_and_summary_say_the_prices_gaps_and_skipped_row() -> None:
    finding = {
        "kind": "serving_overprovisioned",
        "resource": "deployment/ml/chat-llama",
        "severity": "warning",
        "summary": "2 replicas at 20% KV cache",
        "recommendation": "run 1 replica",
        "estimated_monthly_waste_usd": 1401.6,
    }
    files = read_findings(
        [
            json.dumps({**finding, "detected_at": "2026-11-24", "estimated_monthly_waste_usd": 9}),
            json.dumps({**finding, "detected_at": "2026-11-28"}),
            json.dumps({**finding, "kind": "gpu_held_not_working", "resource": "job/x"}),
        ]
    )
    figures = week_figures(
        cluster="train", week="2026-W48", gpu_days=[], xids=[], alarms=[], files=files,
        job_costs={}, throughput={},
    )  # fmt: skip
    figures.serving = _figures(files.findings)
    (listed,) = figures.serving["findings"]  # the latest of the two days, no other kind
    assert listed["monthly_usd"] == 1401.6
    html = html_report(figures)
    section = html[html.index('id="serving"') :]
    assert "No serving table for 2026-11-29" in section
    assert (
        "In the serving table of 2026-11-25, row 0: gpu_hours is negative: -1: that row was "
        "skipped, the day&#x27;s others are counted." in section
    )
    assert (
        '<td>chat-llama</td><td>Deployment</td><td>llama-3-8b</td><td class="num">2</td>' in section
    )
    assert (
        '<td class="num">$3.00</td><td class="num">$4.00</td><td class="num">-25.0%</td>' in section
    )
    assert '<td class="num">$12.00</td><td class="num">n/a</td><td class="num">new</td>' in section
    # As shown: a name may break after its separators (html_table.breakable).
    assert "serving_overprovisioned: 2 replicas at 20% KV cache" in section.replace("<wbr>", "")
    assert '<td class="num">$1,402</td>' in section
    text = text_summary(figures, link="https://example.com/r")
    assert (
        "Serving: 456.0 GPU-hours ($1,824); per million output tokens, cheapest llama-3-8b "
        "$3.39, dearest mistral-7b $12.00."
    ) in text.splitlines()
    assert json.loads(json.dumps(figures.to_dict()))["serving"]["cost_usd"] == 1824.0


def test_a_week_without_serving_rows_has_no_section_and_no_line() -> None:
    empty = serving_figures(read_days(dict.fromkeys(WEEK)), read_days({}), [])
    figures = week_figures(
        cluster="train", week="2026-W48", gpu_days=[], xids=[], alarms=[],
        files=read_findings([]), job_costs={}, throughput={},
    )  # fmt: skip
    figures.serving = empty
    assert 'id="serving"' not in html_report(figures)
    assert "Serving" not in text_summary(figures, link="l")
    assert serving_line(empty) is None
    assert serving_csv(empty, cluster="train", week="2026-W48").count("\n") == 1  # the header


def test_a_table_filed_under_another_day_is_skipped_and_named() -> None:
    days = read_days({WEEK[0]: encode(WEEK[1], [CHAT]).encode(), WEEK[1]: b"{not json"})
    assert days.rows == []
    assert days.unreadable[WEEK[0]] == "the table at this day's key says it is 2026-11-24"
    assert days.unreadable[WEEK[1]].startswith("not a serving table")


@pytest.mark.parametrize("model", ['=HYPERLINK("http://x")<script>alert(1)</script>'])
def test_a_hostile_model_name_is_escaped_in_html_and_csv(model: str) -> None:
    row = _row("ml", "-chat", "Deployment", model)
    serving = serving_figures(read_days(_bodies(WEEK[:1], [row])), read_days({}), [])
    figures = week_figures(
        cluster="train", week="2026-W48", gpu_days=[], xids=[], alarms=[],
        files=read_findings([]), job_costs={}, throughput={},
    )  # fmt: skip
    figures.serving = serving
    html = html_report(figures)
    assert "<script>" not in html
    shown = html.replace("<wbr>", "")  # a name may break after its separators
    assert "=HYPERLINK(&quot;http://x&quot;)&lt;script&gt;alert(1)&lt;/script&gt;" in shown
    (line,) = csv.DictReader(io.StringIO(serving_csv(serving, cluster="c", week="w")))
    assert line["model"] == "'" + model
    assert line["workload"] == "'-chat"
    assert float(line["usd_per_million_output_tokens"]) == 3.0


def test_tokens_without_gpu_hours_have_no_price_rather_than_a_free_one() -> None:
    """A workload whose GPUs' series were not read (no GPU-hour attributed) served 64M tokens at
    an unknown price: None, not $0.00 a million."""
    unpriced = _row("ml", "chat-llama", "Deployment", "llama-3-8b", gpu_hours=0.0)
    serving = serving_figures(read_days(_bodies(WEEK, [unpriced])), read_days({}), [])
    (workload,) = serving["workloads"]
    assert (workload["generation_tokens"], workload["cost_usd"]) == (7 * 64e6, 0.0)
    assert workload["usd_per_million_output_tokens"] is None
    assert serving["usd_per_million_output_tokens"] is None


def test_a_long_multiline_model_name_is_one_bounded_line_in_the_summary_and_html() -> None:
    """A model name is whatever the server was started with: in the SNS summary (plain text) a
    line break would forge a line of its own, and 10 KB would bury the rest; it is one line, cut,
    there and in the HTML, and kept whole in the CSV."""
    model = "evil\nReport: http://phish.example\r\n" + "x" * 10_000
    rows = [_row("ml", "chat", "Deployment", model), RAG]
    serving = serving_figures(read_days(_bodies(WEEK[:1], rows)), read_days({}), [])
    line = serving_line(serving)
    assert line is not None
    assert "\n" not in line
    assert "\r" not in line
    assert "evil Report: http://phish.example " + "x" * 50 in line
    assert len(line) < 500
    assert "mistral-7b $12.00" in line
    figures = week_figures(
        cluster="train", week="2026-W48", gpu_days=[], xids=[], alarms=[],
        files=read_findings([]), job_costs={}, throughput={},
    )  # fmt: skip
    figures.serving = serving
    html = html_report(figures)
    assert "x" * 201 not in html
    assert "evil Report: http://phish.example " + "x" * 50 in html.replace("<wbr>", "")
    (kept, _) = csv.DictReader(io.StringIO(serving_csv(serving, cluster="c", week="w")))
    assert kept["model"] == model


def test_drift_findings_are_left_to_their_own_section() -> None:
    """A ``serving_drift`` finding is the drift section's (drift_section.py), not listed twice;
    the other serving findings stay."""
    findings = [
        {"kind": "serving_saturated", "resource": "namespace/ml/Deployment/chat-llama",
         "detected_at": "2026-11-27T00:00:00+00:00", "summary": "saturated"},
        {"kind": "serving_drift", "resource": "namespace/ml/model/llama-3-8b",
         "detected_at": "2026-11-27T00:00:00+00:00", "summary": "drifted"},
    ]  # fmt: skip
    assert [f["kind"] for f in _figures(findings)["findings"]] == ["serving_saturated"]
