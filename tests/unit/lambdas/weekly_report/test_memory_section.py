"""The report's GPU memory right-sizing section, from the findings the training analyzer
writes (its own analysis, so the section reads what the analyzer really says): an H100 80GB
job at 71 GiB, one at 9 GiB (1g.10gb), on a 24-hour lookback at $6.88 a GPU-hour."""

import csv
import io
from typing import Any

import pytest

from lambdas.shared.findings import stamped
from lambdas.training_analyzer.gpu_memory.analysis import (
    GIB,
    GpuMemory,
    judge_jobs,
    memory_findings,
)
from lambdas.weekly_report.figures import read_findings, week_figures
from lambdas.weekly_report.memory_section import memory_csv, memory_section
from lambdas.weekly_report.render import html_report

H100 = 81_559 * 2**20
DAY = 1_764_547_200.0


def _findings_file(end: float, **jobs: list[float]) -> str:
    gpus = [
        GpuMemory(
            "ml", job, f"{job}-0", "nvidia0", tuple(v * GIB for v in peaks), H100, "p5.48xlarge"
        )
        for job, peaks in jobs.items()
    ]
    found = memory_findings(judge_jobs(gpus, gpu_hour_usd=6.88, window_hours=24))
    return "\n".join(f.to_json() for f in stamped(found, "train", end))


def _figures(*texts: str) -> Any:
    return week_figures(
        cluster="train", week="2026-W49", gpu_days=[], xids=[], alarms=[],
        files=read_findings(texts), job_costs={}, throughput={},
    )  # fmt: skip


def test_each_verdict_is_a_row_with_its_numbers() -> None:
    figures = _figures(_findings_file(DAY, llama=[70.0] * 20 + [71.0] * 4, eval=[8.0] * 23 + [9.0]))
    near, small = figures.memory_jobs
    assert (near["job"], near["verdict"], near["p95_gib"], near["capacity_gib"]) == (
        "llama", "near capacity", 71.0, 79.65,
    )  # fmt: skip
    assert near["monthly_saving_usd"] is None
    assert (small["job"], small["verdict"], small["profile"], small["peak_gib"]) == (
        "eval", "oversized", "1g.10gb", 9.0,
    )  # fmt: skip
    # A GPU all day is 730 GPU-hours a month; 1g.10gb takes 1/7 of each.
    assert small["monthly_saving_usd"] == pytest.approx(730 * 6 / 7 * 6.88, abs=0.01)
    html = html_report(figures)
    section = html[html.index('id="gpu-memory"') :]
    assert "1 job(s) used 85% or more of their GPUs&#x27; memory" in section
    assert "$4,305 a month" in section
    assert "<td>llama</td>" in section
    assert "<td>1g.10gb</td>" in section
    assert '<td class="num">79.7</td>' in section  # capacity, GiB


def test_a_jobs_latest_verdict_wins() -> None:
    # Monday the job ran small; by Wednesday it filled its GPUs: one row, the latest verdict.
    figures = _figures(
        _findings_file(DAY, bert=[9.0]), _findings_file(DAY + 2 * 86_400, bert=[72.0])
    )
    (row,) = figures.memory_jobs
    assert (row["job"], row["verdict"]) == ("bert", "near capacity")


def test_the_csv_has_one_row_per_job_with_cluster_and_week() -> None:
    figures = _figures(_findings_file(DAY, eval=[9.0]))
    rows = list(csv.DictReader(io.StringIO(memory_csv(figures.memory_jobs, cluster="train",
                                                      week="2026-W49"))))  # fmt: skip
    assert rows == [
        {
            "cluster": "train", "week": "2026-W49", "namespace": "ml", "job": "eval",
            "gpus": "1", "peak_gib": "9.0", "p95_gib": "9.0", "capacity_gib": "79.65",
            "verdict": "oversized", "gpu_model": "H100 80GB", "profile": "1g.10gb",
            "monthly_saving_usd": "179.37",
        }
    ]  # fmt: skip  # one GPU-hour of the day's 24: 730 / 24 x 6/7 x $6.88 a month


def test_a_week_without_memory_findings_says_so() -> None:
    assert "No job's GPU memory was near" in memory_section([])
    assert figures_json_has_rows(_figures()) == []


def figures_json_has_rows(figures: Any) -> list[Any]:
    return list(figures.to_dict()["memory_jobs"])
