import csv
import io

import pytest

from lambdas.weekly_report.figures import WeekFigures
from lambdas.weekly_report.render import html_report
from lambdas.weekly_report.waste import COVERAGE, waste_csv, week_waste


def day(notebook_idle: float) -> dict[str, object]:
    return {
        "classes": {"held_working": 20.0, "held_not_working": notebook_idle, "not_held": 4.0},
        "unmeasured_gpu_hours": 0.5,
        "stepping_under_threshold_gpu_hours": 2.0,
        "no_container_insights_gpu_hours": 1.25,
        "unattributed_gpu_hours": 0.25,
        "namespaces": [
            {
                "namespace": "vision",
                "held_gpu_hours": 20.0,
                "working_gpu_hours": 20.0,
                "stepping_gpu_hours": 18.0,
            },
            {
                "namespace": "research",
                "held_gpu_hours": notebook_idle,
                "not_working_gpu_hours": notebook_idle,
                "waste_usd": notebook_idle * 6.88,
            },
        ],
        "jobs": [
            {
                "namespace": "research",
                "job": "alice-notebook",
                "held_gpu_hours": notebook_idle,
                "not_working_gpu_hours": notebook_idle,
                "waste_usd": notebook_idle * 6.88,
                "inferred": True,
            },
            {"namespace": "vision", "job": "resnet", "held_gpu_hours": 20.0, "inferred": False},
        ],
    }


def test_the_week_sums_days_ranks_idle_holders_and_compares_with_last_week() -> None:
    last = week_waste({"2026-11-16": day(2.0)}, gpu_hour_usd=6.88)
    waste = week_waste(
        {f"2026-11-{23 + d}": day(10.0) for d in range(7)}, gpu_hour_usd=6.88, previous=last
    )
    assert waste["classes"]["held_not_working"] == 70.0
    assert waste["cost_usd"]["held_not_working"] == pytest.approx(481.6)
    first, second = waste["namespaces"]
    assert first["namespace"] == "research"
    # The day tables' ``waste_usd`` is the cost of the not-working hours: named for what it is.
    assert first["held_not_working_usd"] == pytest.approx(481.6)
    assert "waste_usd" not in first
    assert first["efficiency"] == 0.0
    assert first["not_working_change_gpu_hours"] == 68.0
    assert second["efficiency"] == 1.0
    assert second["held_not_working_usd"] == 0.0
    (job,) = waste["jobs"]
    assert job["job"] == "alice-notebook"
    # An exact job's row says so, not by leaving the flag out.
    assert {j["job"]: j["inferred"] for j in waste["all_jobs"]} == {
        "alice-notebook": True,
        "resnet": False,
    }
    # What the classes rest on, summed over the days, is in the report.
    assert waste["unmeasured_gpu_hours"] == 3.5
    assert waste["stepping_under_threshold_gpu_hours"] == 14.0
    assert waste["no_container_insights_gpu_hours"] == 8.75
    assert waste["unattributed_gpu_hours"] == 1.75
    assert job["not_working_change_gpu_hours"] == 68.0
    rows = list(csv.DictReader(io.StringIO(waste_csv(waste, cluster="c", week="2026-W48"))))
    assert rows[0]["namespace"] == "research"
    assert (rows[0]["cluster"], rows[0]["week"]) == ("c", "2026-W48")
    assert float(rows[0]["held_not_working_usd"]) == pytest.approx(481.6)
    assert [(r["namespace"], float(r["stepping_gpu_hours"])) for r in rows] == [
        ("research", 0.0),
        ("vision", 126.0),
    ]
    # Showback charges every held GPU-hour, idle or not.
    assert float(rows[0]["held_usd"]) == pytest.approx(
        float(rows[0]["held_gpu_hours"]) * waste["gpu_hour_usd"], abs=0.01
    )
    html = html_report(WeekFigures(cluster="c", week="2026-W48", waste=waste))
    # What to do first, then the headline, then the tables it comes from.
    assert html.index('id="actions"') < html.index('id="headline"') < html.index('id="waste"')
    assert "alice-notebook (inferred)" in html
    assert "14.0 GPU-hours drew under the thresholds while their job stepped" in html
    assert "3.5 GPU-hours were held with no power reading" in html
    assert "8.8 GPU-hours were held on nodes without Container Insights data" in html
    assert "1.8 GPU-hours of pods&#x27; holds could not be placed" in html
    # Nothing to say, nothing said: no sentence of zeros.
    quiet = {**waste, **dict.fromkeys(COVERAGE, 0.0)}
    assert "Of these" not in html_report(WeekFigures(cluster="c", week="w", waste=quiet))
