import json
from datetime import UTC, date, datetime
from typing import Any

import pytest

from lambdas.weekly_report.figures import (
    GpuDay,
    WeekFigures,
    headline,
    read_findings,
    week_figures,
)
from lambdas.weekly_report.render import html_report, text_summary
from lambdas.weekly_report.waste import week_waste
from lambdas.weekly_report.week import days, iso_week_name, report_week


@pytest.mark.parametrize(
    ("run", "monday", "name"),
    [
        (datetime(2026, 11, 30, 8, tzinfo=UTC), date(2026, 11, 23), "2026-W48"),  # a Monday
        (datetime(2026, 12, 6, 23, 59, tzinfo=UTC), date(2026, 11, 23), "2026-W48"),  # Sunday night
        # Year ends: ISO week 1 of 2026 began on Monday 29 December 2025.
        (datetime(2026, 1, 5, 8, tzinfo=UTC), date(2025, 12, 29), "2026-W01"),
        # 2020 had 53 ISO weeks; the week of 28 December 2020 is 2020-W53.
        (datetime(2021, 1, 4, 8, tzinfo=UTC), date(2020, 12, 28), "2020-W53"),
    ],
)
def test_report_week_is_the_last_complete_iso_week(run: datetime, monday: date, name: str) -> None:
    start, end = report_week(run)
    assert (start, (end - start).days) == (monday, 7)
    assert iso_week_name(start) == name
    assert len(days(start, end)) == 7


def _finding(
    kind: str,
    resource: str,
    severity: str,
    waste: float | None = None,
    day: str = "2026-11-24",
    **evidence: float,
) -> str:
    return json.dumps(
        {
            "kind": kind,
            "resource": resource,
            "severity": severity,
            "summary": f"{kind} on {resource}",
            "recommendation": "fix it",
            "estimated_monthly_waste_usd": waste,
            "detected_at": day,
            "evidence": evidence,
        }
    )


def _figures() -> tuple[dict[str, Any], WeekFigures]:
    files = read_findings(
        [
            "\n".join(
                [
                    _finding("ebs_idle_volume", "vol-1", "warning", 40.0),
                    _finding(
                        "training_data_bound",
                        "job/bert",
                        "warning",
                        600.0,
                        waste_in_lookback_usd=120.0,
                    ),
                    "not json",
                    '{"no": "kind"}',
                ]
            ),
            "\n".join(
                [
                    _finding(
                        "ebs_idle_volume", "vol-1", "warning", 40.0, day="2026-11-25"
                    ),  # same, next day
                    _finding("gpu_xid_errors", "node-a", "critical"),
                ]
            ),
        ]
    )
    gpu_days = [
        GpuDay(date(2026, 11, 23), 24.0, 60.0, 70.0),
        GpuDay(date(2026, 11, 24), 48.0, 30.0, None),
    ]
    # The GPU analyzer's tables of the two days: 24 and 48 GPU-hours by class.
    waste = week_waste(
        {
            "2026-11-23": {
                "classes": {"not_held": 4.0, "held_working": 16.0, "held_not_working": 4.0}
            },
            "2026-11-24": {
                "classes": {
                    "not_held": 30.0,
                    "held_working": 6.0,
                    "held_not_working": 10.0,
                    "lost_or_faulted": 2.0,
                }
            },
        },
        gpu_hour_usd=6.88,
    )
    figures = week_figures(
        cluster="train",
        week="2026-W48",
        gpu_days=gpu_days,
        xids=[("node-a", "79", 1.0), ("node-b", "13", 3.0)],
        alarms=[("gpu-insights-train-gpu-lost", "2026-11-24 03:00")],
        files=files,
        job_costs={
            "bert": {"gpu_hours": 64.0, "dollars": 440.3},
            "resnet": {"gpu_hours": 8.0, "dollars": 55.0},
        },
        throughput={"bert": [900.0, None]},
        waste=waste,
        previous={"gpu_hours": 100.0, "storage_waste_usd": None},
    )
    return figures.to_dict(), figures


def test_figures_from_known_inputs() -> None:
    document, _ = _figures()
    assert document["gpu_hours"] == 72.0
    assert document["change"]["gpu_hours"] == -28.0
    assert document["power_utilization"] == pytest.approx((60 * 24 + 30 * 48) / 72)
    assert document["sm_active"] == 70.0  # the day without SM data does not count as zero
    assert document["findings_by_kind"] == {
        "ebs_idle_volume": 1,
        "training_data_bound": 1,
        "gpu_xid_errors": 1,
    }
    assert next(f["kind"] for f in document["top_findings"]) == "gpu_xid_errors"  # critical first
    assert document["storage_waste_usd"] == 40.0  # the same idle volume on two days counts once
    assert document["most_wasteful_jobs"] == [
        {"job": "bert", "waste_usd": 120.0, "held_not_working_usd": None, "inferred": False}
    ]  # no attribution given
    assert document["costliest_jobs"][0]["job"] == "bert"
    assert document["xids"][0] == {"node": "node-b", "code": "13", "count": 3.0}
    assert (document["malformed_finding_lines"], document["finding_files"]) == (2, 2)


def test_the_headline_gpu_hours_are_the_waste_tables_classes_and_add_up() -> None:
    """One source of truth: the headline's GPU-hours by class are the attribution's (the
    waste table's) figures, every class is there, lost or faulted included, and they add up
    to the week's GPU-hours, in the JSON, in the HTML tiles, in the SNS summary and by day."""
    document, figures = _figures()
    classes = document["waste"]["classes"]
    assert classes == {
        "not_held": 34.0,
        "held_working": 22.0,
        "held_not_working": 14.0,
        "lost_or_faulted": 2.0,
    }
    assert {k: document["gpu_hour_classes"][k] for k in classes} == classes
    assert {k: headline(figures)[f"{k}_gpu_hours"] for k in classes} == classes
    assert document["gpu_hours"] == sum(classes.values()) == 72.0
    assert [d["gpu_hours"] for d in document["days"]] == [24.0, 48.0]
    assert [d["lost_or_faulted"] for d in document["days"]] == [0.0, 2.0]
    html = html_report(figures)
    for name, hours, cost in (
        ("not held by any pod", 34, 34 * 6.88),
        ("held and working", 22, 22 * 6.88),
        ("held but not working", 14, 14 * 6.88),
        ("lost or faulted", 2, 2 * 6.88),
    ):
        assert f"GPU-hours {name}<b>{hours} (${cost:,.0f})</b>" in html
    assert "Idle GPU-hours" not in html
    assert "not held by any pod 34 ($234)" in text_summary(figures, link="L")


def test_html_is_self_contained_accessible_and_says_what_it_skipped() -> None:
    _, figures = _figures()
    html = html_report(figures, link="https://example.com/report.html")
    for external in ("<script", "<link", "@import", "url(", 'src="http'):
        assert external not in html
    assert '<meta name="viewport"' in html
    assert "@media print" in html
    assert html.count("<svg") == 3
    assert html.count("<title>") == 4
    assert 'role="img"' in html
    assert "<desc>" in html
    assert '<th scope="col">' in html
    assert 'class="sev-critical">critical</td>' in html  # the word, not only a colour
    assert "2 malformed finding line(s)" in html
    assert "down 28.0 on the week before" in html


def test_an_empty_week_says_so() -> None:
    empty = week_figures(
        cluster="train",
        week="2026-W48",
        gpu_days=[],
        xids=[],
        alarms=[],
        files=read_findings([]),
        job_costs={},
        throughput={},
    )
    html = html_report(empty)
    assert "No GPU data and no findings this week." in html
    assert "No findings this week." in html
    assert "No XID errors." in html
    assert text_summary(empty, link="L").endswith("No findings this week.\nReport: L")


def test_job_tables_take_held_hours_from_the_attribution_and_label_both_measures() -> None:
    """The same job in both tables: its held GPU-hours and dollars are the attribution's (the
    waste section's), its stepping hours the training analyzer's, each labelled; a job the
    attribution only infers gets no held figure. A week with no storage analysis has no storage
    figure, and next to a last week without one a figure reads "new", not "up"."""
    table = {
        "classes": {"held_not_working": 48.0},
        "jobs": [
            {"namespace": "nlp", "job": "bert", "held_gpu_hours": 48.0,
             "not_working_gpu_hours": 48.0, "waste_usd": 330.24},
            {"namespace": "lab", "job": "notebook", "held_gpu_hours": 24.0,
             "not_working_gpu_hours": 10.0, "waste_usd": 68.8, "inferred": True},
        ],
    }  # fmt: skip
    finding = {
        "kind": "training_data_bound",
        "resource": "job/bert",
        "severity": "warning",
        "evidence": {"waste_in_lookback_usd": 44.0},
    }
    week = days(date(2026, 11, 23), date(2026, 11, 30))
    figures = week_figures(
        cluster="train",
        week="2026-W48",
        gpu_days=[GpuDay(d, 24.0, 50.0, None) for d in week],
        xids=[],
        alarms=[],
        files=read_findings([json.dumps(finding)]),
        job_costs={"bert": {"gpu_hours": 16.0, "dollars": 110.08, "active_hours": 8.0}},
        throughput={"bert": [100.0] * 7},
        waste=week_waste({"2026-11-23": table}, gpu_hour_usd=6.88),
        previous={"storage_waste_usd": None},
        storage_analyzed=True,
    )
    assert figures.costliest_jobs == [
        {"job": "bert", "gpu_hours": 16.0, "dollars": 110.08, "active_hours": 8.0,
         "held_gpu_hours": 48.0, "held_usd": 330.24, "held_not_working_usd": 330.24},
    ]  # fmt: skip
    # The notebook's name is inferred: it is no training job's, but it wasted GPU-hours, so it
    # ranks among the jobs that wasted most, marked.
    assert [(j["job"], j["inferred"]) for j in figures.most_wasteful_jobs] == [
        ("bert", False),
        ("notebook", True),
    ]
    assert figures.most_wasteful_jobs[0] == {
        "job": "bert", "waste_usd": 44.0, "held_not_working_usd": 330.24, "inferred": False,
    }  # fmt: skip
    html = html_report(figures)
    assert '<h3 id="wasteful-jobs">Jobs that wasted most</h3>' in html
    assert "<td>notebook (inferred)</td>" in html
    assert '<th scope="col">GPU-hours held (week)</th>' in html
    assert '<th scope="col">GPU-hours stepping (last lookback)</th>' in html
    assert "Storage waste a month<b>$0</b><small>new</small>" in html
    # The throughput chart is dated by the week's days, as the other charts.
    chart = html[html.index("Training throughput by job") :]
    assert ">11-23</text>" in chart[: chart.index("</svg>")]
    assert ">1</text>" not in chart[: chart.index("</svg>")]
    unanalyzed = week_figures(
        cluster="train", week="2026-W48", gpu_days=[], xids=[], alarms=[],
        files=read_findings([]), job_costs={}, throughput={}, storage_analyzed=False,
    )  # fmt: skip
    assert unanalyzed.storage_waste_usd is None
    assert headline(unanalyzed)["storage_waste_usd"] is None
