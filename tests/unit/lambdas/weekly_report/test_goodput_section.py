"""The training section's lead: the week's fleet goodput from the daily files, by job size
with the time between failures, the jobs with the most badput, HTML and CSV escaped."""

import csv
import io
from typing import Any

import pytest

from lambdas.training_analyzer.goodput.jobs import Badput
from lambdas.weekly_report.goodput_section import goodput_csv, goodput_figures, goodput_section


def entry(
    job: str, gpus: int, productive: float, failures: int = 0, **badput: float
) -> dict[str, Any]:
    """A job's day in the goodput file (JobGoodput.to_json), GPU-hours by category."""
    hours = {"productive": productive} | {str(b): badput.get(str(b), 0.0) for b in Badput}
    return {
        "job": job, "gpus": gpus, "gpu_hours": hours, "attempts": [], "failures": failures,
        "restarts": failures, "steps_redone": 0.0, "mtbf_hours": None,
        "mean_checkpoint_save_s": None, "checkpoint_interval_s": None,
        "optimal_checkpoint_interval_s": None, "ideal_step_s": None,
        "step_time_deviation": None,
    }  # fmt: skip


def week() -> dict[str, Any]:
    monday = {"day": "2026-11-30", "jobs": [
        entry("notebook", 1, 12.0, hung=12.0),
        entry("<b>ft</b>", 8, 150.0, data_loading=42.0),
        entry("=llama", 512, 10_000.0, failures=2, progress_lost=1_000.0, recovery=288.0,
              waiting_for_gpus=512.0),
        {"job": "broken"},  # no numbers: counted, not added
    ]}  # fmt: skip
    tuesday = {"day": "2026-12-01", "jobs": [entry("=llama", 512, 11_000.0, failures=1,
                                                   progress_lost=1_288.0)]}  # fmt: skip
    return goodput_figures([monday, None, tuesday])


def test_fleet_goodput_and_by_size_with_the_time_between_failures() -> None:
    g = week()
    # 21,162 productive of 24,304 GPU-hours held or waited for.
    assert g["total_gpu_hours"] == pytest.approx(24_304.0)
    assert g["goodput"] == pytest.approx(21_162.0 / 24_304.0)
    assert g["badput_gpu_hours"]["progress_lost"] == pytest.approx(2_288.0)
    assert g["malformed"] == 1
    sizes = {s["size"]: s for s in g["by_size"]}
    assert list(sizes) == ["1 GPU", "2-8 GPUs", "512+ GPUs"]
    big = sizes["512+ GPUs"]
    # Running: 23,576 GPU-hours held (pending left out) over 512 GPUs, 3 failures.
    assert big["running_hours"] == pytest.approx(23_576.0 / 512)
    assert big["mtbf_hours"] == pytest.approx(23_576.0 / 512 / 3)
    assert big["goodput"] == pytest.approx(21_000.0 / 24_088.0)
    assert sizes["1 GPU"]["goodput"] == pytest.approx(0.5)
    assert sizes["1 GPU"]["mtbf_hours"] is None
    assert [r["job"] for r in g["jobs"]] == ["=llama", "<b>ft</b>", "notebook"]


def test_the_section_escapes_job_names_and_the_csv_keeps_them_text() -> None:
    g = week()
    # A name may break after its punctuation (html_table.py ``breakable``): read without it.
    html = goodput_section(g).replace("<wbr>", "")
    assert "Fleet goodput: 87.1% of 24,304.0 GPU-hours" in html
    assert html.count("<table>") == html.count('<p class="relates">') == 3
    assert "&lt;b&gt;ft&lt;/b&gt;" in html
    assert "<b>ft</b>" not in html
    assert "progress lost (steps redone after a restart): 2,288.0" in html
    assert "1 job entries of the goodput files were not readable" in html
    rows = list(csv.DictReader(io.StringIO(goodput_csv(g, cluster="c", week="2026-W49"))))
    assert [r["job"] for r in rows] == ["'=llama", "<b>ft</b>", "notebook"]
    assert float(rows[0]["progress_lost_gpu_hours"]) == pytest.approx(2_288.0)
    assert float(rows[0]["mtbf_hours"]) == pytest.approx(23_576.0 / 512 / 3)
    assert goodput_section(goodput_figures([])) == ""


def attempt(
    index: int, labels: tuple[str, ...], resumed_from: float | None, **hours: float
) -> dict[str, Any]:
    """One attempt of a job's day (JobGoodput.to_json's ``attempts``), GPU-hours by category."""
    return {"index": index, "first_hour": 0.0, "resumed_from": resumed_from,
            "gpu_hours": {"productive": 0.0} | hours, "labels": list(labels)}  # fmt: skip


def test_each_job_counts_its_attempts_over_the_week_with_the_lowest_goodput_of_one() -> None:
    """A labelled attempt is the same one on every day it ran; an unlabelled one running
    when a day began goes on from the day before's last; a restart begins another."""
    llama = entry("llama", 8, 10_000.0, progress_lost=1_000.0, recovery=288.0)
    llama["attempts"] = [
        attempt(0, ("torchelastic-0",), 0, productive=6_000.0),
        attempt(1, ("torchelastic-1",), 1200, productive=4_000.0, progress_lost=1_000.0,
                recovery=288.0),
    ]  # fmt: skip
    llama_tuesday = entry("llama", 8, 11_000.0, progress_lost=1_288.0)
    llama_tuesday["attempts"] = [
        attempt(0, ("torchelastic-1",), None, productive=11_000.0, progress_lost=1_288.0)
    ]
    notebook = entry("<i>nb</i>", 1, 12.0, hung=12.0)
    notebook["attempts"] = [attempt(0, (), 0, productive=12.0, hung=12.0)]
    notebook_tuesday = entry("<i>nb</i>", 1, 6.0, recovery=2.0)
    notebook_tuesday["attempts"] = [
        attempt(0, (), None, productive=6.0),  # still running from Monday
        attempt(1, (), 0, recovery=2.0),  # a new process on Tuesday
    ]
    g = goodput_figures(
        [{"jobs": [llama, notebook]}, None, {"jobs": [llama_tuesday, notebook_tuesday]}]
    )
    rows = {r["job"]: r for r in g["jobs"]}
    assert rows["llama"]["attempts"] == 2
    # torchelastic-1 over both days: 15,000 of 17,576 GPU-hours kept.
    assert rows["llama"]["lowest_attempt_goodput"] == pytest.approx(15_000 / 17_576)
    assert rows["<i>nb</i>"]["attempts"] == 2
    assert rows["<i>nb</i>"]["lowest_attempt_goodput"] == 0.0
    html = goodput_section(g).replace("<wbr>", "")
    assert '<td class="num">2 (85.3%)</td>' in html
    assert "&lt;i&gt;nb&lt;/i&gt;" in html
    assert "<i>nb</i>" not in html
    table = list(csv.DictReader(io.StringIO(goodput_csv(g, cluster="c", week="2026-W49"))))
    by_job = {r["job"]: r for r in table}
    assert by_job["llama"]["attempts"] == "2"
    assert float(by_job["llama"]["lowest_attempt_goodput"]) == pytest.approx(15_000 / 17_576)
