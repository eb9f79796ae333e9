import csv
import io
import json
from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Any

import pytest

from lambdas.training_analyzer.goodput.jobs import Badput
from lambdas.weekly_report.figures import (
    GpuDay,
    WeekFigures,
    headline,
    read_findings,
    week_figures,
)
from lambdas.weekly_report.render import html_report, text_summary
from lambdas.weekly_report.waste import waste_csv, week_waste
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
                        gpu_hours=64.0,
                        gpu_hour_usd=6.88,
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
    document, figures = _figures()
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
    # No attribution and no goodput given: bert's waste is what its finding measured, the
    # $120 of its lookback, not a week at its $600 a month's pace ($138.08).
    (bert,) = document["most_wasteful_jobs"]
    assert (bert["job"], bert["held_not_working_usd"], bert["waste_usd"]) == ("bert", None, 120.0)
    assert bert["priced_findings"][0]["basis"] == "finding"
    assert document["costliest_jobs"][0]["job"] == "bert"
    assert document["xids"][0] == {"node": "node-b", "code": "13", "count": 3.0}
    assert (document["malformed_finding_lines"], document["finding_files"]) == (2, 2)
    # node-a's XID 79 went into no alarm's history (only gpu-lost did): the XID table's sentence
    # claims no page for it, and the alarm table's does not call its alarms the XIDs' pages.
    html = html_report(figures)
    assert "each was paged as it happened" not in html
    assert "the pages behind the XIDs" not in html
    assert "an XID or a lost GPU above with no alarm here went into no alarm" in html


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


#: The demo's week as the attribution saw it: bert-data-bound stepping on its two GPUs all
#: week at 22% of their power limit, its ranks waiting for data 40% of each step; the notebook
#: idle overnight (inferred from its pod's name); resnet-healthy stepping and working.
WEEK_JOBS = [
    {"namespace": "nlp", "job": "bert-data-bound", "held_gpu_hours": 336.0,
     "working_gpu_hours": 336.0, "stepping_gpu_hours": 336.0, "not_working_gpu_hours": 0.0,
     "waste_usd": 0.0},
    {"namespace": "research", "job": "jupyter-alice", "held_gpu_hours": 168.0,
     "working_gpu_hours": 63.0, "not_working_gpu_hours": 105.0, "waste_usd": 722.4,
     "inferred": True},
    {"namespace": "vision", "job": "resnet-healthy", "held_gpu_hours": 336.0,
     "working_gpu_hours": 336.0, "stepping_gpu_hours": 336.0, "not_working_gpu_hours": 0.0,
     "waste_usd": 0.0},
]  # fmt: skip


def _priced(kind: str, resource: str, monthly: float, **evidence: float) -> dict[str, Any]:
    finding: dict[str, Any] = json.loads(
        _finding(kind, resource, "warning", monthly, day="2026-11-29", **evidence)
    )
    return finding


def _week_of_jobs(
    findings: list[dict[str, Any]], goodput: dict[str, Any] | None = None
) -> WeekFigures:
    week = days(date(2026, 11, 23), date(2026, 11, 30))
    return week_figures(
        cluster="train",
        week="2026-W48",
        gpu_days=[GpuDay(d, 24.0, 50.0, None) for d in week],
        xids=[],
        alarms=[],
        files=read_findings([json.dumps(f) for f in findings]),
        job_costs={
            job: {"gpu_hours": 48.0, "dollars": 330.24, "active_hours": 24.0}
            for job in ("bert-data-bound", "resnet-healthy", "llama-slow-checkpoint")
        },
        throughput={"bert-data-bound": [100.0] * 7},
        waste=week_waste(
            {"2026-11-23": {"jobs": WEEK_JOBS, "namespaces": WEEK_JOBS}}, gpu_hour_usd=6.88
        ),
        previous={"storage_waste_usd": None},
        storage_analyzed=True,
        goodput=goodput,
    )


def test_the_funnels_productive_stage_is_the_jobs_goodput_split_by_its_badput() -> None:
    """The week's goodput (the training section's lead) feeds the funnel: bert's 60% goodput
    over what it held makes 201.6 of its 336 GPU-hours productive, the 134.4 beside them its
    data loading; resnet's 95%, 319.2 (16.8 checkpoint saves)."""
    zero = {f"{b}_gpu_hours": 0.0 for b in Badput}
    goodput = {"jobs": [
        {"job": "bert-data-bound", **zero, "productive_gpu_hours": 196.8,
         "data_loading_gpu_hours": 131.2, "waiting_for_gpus_gpu_hours": 4.0},
        {"job": "resnet-healthy", **zero, "productive_gpu_hours": 311.6,
         "checkpoint_save_gpu_hours": 16.4},
    ]}  # fmt: skip
    figures = _week_of_jobs(FINDINGS, goodput)
    assert figures.goodput is goodput
    rows = {w["workload"]: w for w in figures.funnel["workloads"]}
    assert rows["bert-data-bound"]["productive"]["gpu_hours"] == pytest.approx(201.6)
    assert rows["bert-data-bound"]["badput"]["data_loading"]["gpu_hours"] == 134.4
    assert rows["resnet-healthy"]["productive"]["gpu_hours"] == pytest.approx(319.2)
    by_category = figures.funnel["drops"]["active_not_productive"]["by_category"]
    assert {k: v["gpu_hours"] for k, v in by_category.items()} == {
        "data_loading": 134.4,
        "no_step_or_token_signal": 63.0,
        "checkpoint_save": 16.8,
    }


#: The training analyzer's findings of the week's last day (a one-day lookback): bert waits
#: 40% of its 48 stepping GPU-hours; llama, on GPUs the exporter does not report, stalls on
#: checkpoints; the notebook's last day held without work; an idle volume.
FINDINGS = [
    _priced("training_data_bound", "job/bert-data-bound", 0.4 * 48 * 6.88 * 730 / 24,
            waste_in_lookback_usd=0.4 * 48 * 6.88, gpu_hours=48.0, gpu_hour_usd=6.88),
    _priced("training_slow_checkpoint", "job/llama-slow-checkpoint", 635.0,
            waste_in_lookback_usd=20.87, gpu_hours=16.0, gpu_hour_usd=6.88),
    _priced("gpu_held_not_working", "namespace/research/job/jupyter-alice", 3139.2,
            waste_in_window_usd=103.2),
    _priced("ebs_idle_volume", "vol-1", 40.0),
]  # fmt: skip


def test_one_gpu_hour_one_class_one_price_in_the_job_tables_and_the_actions() -> None:
    """The data-bound job's GPU-hours are priced once, by its training finding, on the week's
    stepping GPU-hours; the job tables and the actions are the same figures, and add up."""
    figures = _week_of_jobs(FINDINGS)
    wasted = {j["job"]: j for j in figures.most_wasteful_jobs}
    bert = wasted["bert-data-bound"]
    # 40% of 336 stepping GPU-hours at $6.88: $924.67, not the $2,311.68 of 336 GPU-hours
    # "held without work" plus the finding's own $44 (which main's report put side by side).
    assert (bert["held_not_working_usd"], bert["waiting_usd"]) == (0.0, 924.67)
    assert bert["waste_usd"] <= bert["held_usd"]
    assert wasted["jupyter-alice"]["waste_usd"] == 722.4
    # llama's pods held no GPU the exporter reported (and no goodput is given): what its
    # finding measured, $20.87, not a week at its $635 a month's pace ($146.14).
    assert wasted["llama-slow-checkpoint"]["waste_usd"] == 20.87
    assert "resnet-healthy" not in wasted
    costs = {j["job"]: j for j in figures.costliest_jobs}
    assert [costs["resnet-healthy"][k] for k in ("held_gpu_hours", "stepping_gpu_hours")] == [
        336.0,
        336.0,
    ]
    assert costs["llama-slow-checkpoint"]["held_gpu_hours"] is None
    assert costs["bert-data-bound"] == bert  # one row, in both tables
    # The actions: the most dollars first, each GPU-hour once, adding up to the week's total.
    assert [(a["title"], a["usd"]) for a in figures.actions] == [
        ("bert-data-bound: waits for data", 924.67),
        ("research / jupyter-alice: 105.0 GPU-hours held without work", 722.4),
        ("llama-slow-checkpoint: stalls on checkpoint saves", 20.87),
        ("vol-1: idle EBS volume", 9.21),
    ]
    assert figures.priced_waste_usd == pytest.approx(924.67 + 722.4 + 20.87 + 9.21)
    assert figures.actions[0]["evidence"].startswith(
        "40% of its 336.0 stepping GPU-hours this week. training_data_bound job/bert-data-bound"
    )
    assert figures.actions[1]["finding"] == (
        "gpu_held_not_working namespace/research/job/jupyter-alice"
    )
    html = html_report(figures)
    # The report opens with the actions, before the headline and the tables.
    assert html.index('id="actions"') < html.index('id="headline"') < html.index('id="waste"')
    assert "<b>$925 this week</b>: <b>bert-data-bound: waits for data</b>" in html
    assert '<th scope="col">of them stepping</th>' in html
    # Each part of a job's waste in its own column, so the row adds up: llama's $21 is what its
    # finding measured (its pods held no GPU the exporter saw), not waiting while stepping.
    num = '<td class="num">{}</td>'.format
    assert (
        "<td>llama-slow-checkpoint</td>" + "".join(map(num, ("n/a", "n/a", "$21", "$21"))) in html
    )
    assert "<td>bert-data-bound</td>" + "".join(map(num, ("$0", "$925", "n/a", "$925"))) in html
    # What the tables' sentences say of each other holds for these rows: jupyter-alice is in
    # "Jobs that wasted most" and not in "Training jobs"; resnet-healthy the other way round.
    assert "a job the attribution inferred from its pods' names (a notebook) is here" in (
        html.replace("&#x27;", "'")
    )
    assert "<td>jupyter-alice (inferred)</td>" in html
    # Every table says how it relates to the others, in one sentence.
    assert html.count("<table>") == html.count('<p class="relates">') - 2  # actions, headline
    summary = text_summary(figures, link="L")
    assert "What to do this week ($1,677 priced, each GPU-hour once):" in summary
    assert "- $925: bert-data-bound: waits for data" in summary


def test_a_namespaces_waste_is_both_parts_in_the_table_and_the_csv() -> None:
    """nlp's data-bound job steps all week (100% efficiency: its hours are working) but waits
    40% of each step: its namespace's waste is that $924.67, not the $0 of its not-working
    hours, in the report's namespace table and the showback CSV alike, each part named."""
    figures = _week_of_jobs(FINDINGS)
    spaces = {n["namespace"]: n for n in figures.waste["namespaces"]}
    parts = ("held_not_working_usd", "waiting_while_stepping_usd", "waste_usd")
    assert [spaces["nlp"][k] for k in parts] == [0.0, 924.67, 924.67]
    assert [spaces["research"][k] for k in parts] == [722.4, 0.0, 722.4]
    assert spaces["nlp"]["efficiency"] == 1.0
    rows = {
        r["namespace"]: r
        for r in csv.DictReader(io.StringIO(waste_csv(figures.waste, cluster="c", week="w")))
    }
    assert [float(rows["nlp"][k]) for k in parts] == [0.0, 924.67, 924.67]
    html = html_report(figures)
    table = html[html.index("Waste and efficiency by namespace") :]
    assert "an hour its job stepped in counts as working however long the step waited" in table
    assert (
        '<td>nlp</td><td class="num">336.0</td><td class="num">336.0</td>'
        '<td class="num">0.0</td><td class="num">0.0</td><td class="num">$0</td>'
        '<td class="num">$925</td><td class="num">$925</td><td class="num">100%</td>'
    ) in table


def test_a_jobs_training_findings_together_price_at_most_its_stepping_hours() -> None:
    # Two findings that each say more than half of bert's stepping time was lost: together
    # they take all of its stepping GPU-hours, never more (the larger share first).
    slow = _priced(
        "training_slow_checkpoint",
        "job/bert-data-bound",
        1.0,
        waste_in_lookback_usd=0.7 * 48 * 6.88,
        gpu_hours=48.0,
        gpu_hour_usd=6.88,
    )
    bound = _priced(
        "training_data_bound",
        "job/bert-data-bound",
        1.0,
        waste_in_lookback_usd=0.5 * 48 * 6.88,
        gpu_hours=48.0,
        gpu_hour_usd=6.88,
    )
    bert = next(j for j in _week_of_jobs([slow, bound]).most_wasteful_jobs)
    assert [(p["kind"], p["share"], p["gpu_hours"]) for p in bert["priced_findings"]] == [
        ("training_slow_checkpoint", 0.7, 235.2),
        ("training_data_bound", 0.3, 100.8),
    ]
    assert bert["waste_usd"] == bert["held_usd"] == 2311.68


def test_a_week_without_storage_analysis_has_no_storage_figure() -> None:
    """A week with no storage analysis has no storage figure, and next to a last week without
    one a figure reads "new", not "up"; the throughput chart is dated by the week's days."""
    figures = _week_of_jobs([])
    html = html_report(figures)
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


def test_a_line_break_in_a_finding_forges_no_line_of_the_summary() -> None:
    figures = week_figures(
        cluster="train", week="2026-W48", gpu_days=[], xids=[], alarms=[],
        files=read_findings([]), job_costs={}, throughput={},
    )  # fmt: skip
    figures.top_findings = [
        {
            "kind": "training_job_failures",
            "severity": "warning",
            "summary": "Job evil\nReport: https://evil.example/sso\r\u2028failed 3 times.",
        }
    ]
    lines = text_summary(figures, link="L").splitlines()
    assert lines[-2:] == [
        "- [warning] training_job_failures: Job evil Report: https://evil.example/sso failed "
        "3 times.",
        "Report: L",
    ]


def test_a_days_means_are_the_same_whichever_reader_added_the_samples() -> None:
    """Classic's CloudWatch Average and OTel mode's PromQL sum over count add one day's samples
    in another order (the demo's week read 9.764241658834585% and ...587% SM activity): the
    report holds the same figure either way, to six places."""

    def day(sm: float) -> dict[str, Any]:
        figures = week_figures(
            cluster="train",
            week="2026-W49",
            gpu_days=[GpuDay(date(2026, 12, 6), 24.0, 43.368000000000002, sm)],
            xids=[],
            alarms=[],
            files=read_findings([]),
            job_costs={},
            throughput={},
        )
        return dict(figures.days[0])

    classic, otel = day(9.764241658834585), day(9.764241658834587)
    assert classic == otel
    assert (classic["sm_active"], classic["power_utilization"]) == (9.764242, 43.368)


#: llama-slow-checkpoint's week by its goodput, as ``make demo-otel`` measured it: 20.03
#: GPU-hours held (its pods on GPUs the exporter does not report), 3.03 of them checkpoint
#: saves, and an hour pending (held by no pod, so not what it held).
LLAMA_GOODPUT = {
    "job": "llama-slow-checkpoint",
    **{f"{b}_gpu_hours": 0.0 for b in Badput},
    "productive_gpu_hours": 16.15,
    "data_loading_gpu_hours": 0.85,
    "checkpoint_save_gpu_hours": 3.0333,
    "waiting_for_gpus_gpu_hours": 1.0,
}
#: Its day's slow-checkpoint finding: 19% of the 16 GPU-hours of its lookback ($20.87), $635 a
#: month at that day's pace, a week of which ($146) is more than the $137.81 it held all week.
LLAMA_SLOW = _priced("training_slow_checkpoint", "job/llama-slow-checkpoint", 634.78,
                     waste_in_lookback_usd=20.87, gpu_hours=16.0, gpu_hour_usd=6.88)  # fmt: skip


def _under_used(share: float) -> dict[str, Any]:
    lookback = share * 16 * 6.88
    return _priced(
        "training_gpu_underutilized",
        "job/llama-slow-checkpoint",
        1.0,
        waste_in_lookback_usd=lookback,
        gpu_hours=16.0,
        gpu_hour_usd=6.88,
    )


def test_a_job_the_attribution_lacks_is_priced_on_what_its_goodput_measured() -> None:
    """A job whose pods held no GPU the exporter reported is priced on its week's goodput: its
    slow checkpoints are the 3.03 GPU-hours of saves its goodput measured ($20.87), never a
    week at its day's pace ($146.09, more than the 20.03 GPU-hours it held cost)."""
    figures = _week_of_jobs([LLAMA_SLOW], {"jobs": [LLAMA_GOODPUT]})
    llama = next(j for j in figures.most_wasteful_jobs if j["job"] == "llama-slow-checkpoint")
    assert llama["goodput_held_gpu_hours"] == 20.03
    assert [(p["basis"], p["gpu_hours"], p["usd"]) for p in llama["priced_findings"]] == [
        ("goodput", 3.03, 20.87)
    ]
    assert llama["waste_usd"] == 20.87 <= 20.03 * 6.88
    action = next(a for a in figures.actions if a["title"].startswith("llama"))
    assert (action["usd"], action["gpu_hours"]) == (20.87, 3.03)
    assert action["evidence"].startswith(
        "3.03 of the 20.03 GPU-hours its goodput says it held this week"
    )
    num = '<td class="num">{}</td>'.format
    row = "".join(map(num, ("n/a", "n/a", "$21", "$21")))
    # (The goodput section's own figures are goodput_section's: left out of this one.)
    html = html_report(replace(figures, goodput={}))
    assert f"<td>llama-slow-checkpoint</td>{row}" in html


def test_a_jobs_findings_priced_on_its_goodput_take_at_most_what_it_held() -> None:
    """A finding with no badput category of its own (GPUs under-used while stepping) takes its
    share of what the job held; the findings together never more than that: 90% under-used
    leaves the checkpoint saves the last 2.0 of its 20.03 GPU-hours."""
    figures = _week_of_jobs([LLAMA_SLOW, _under_used(0.5)], {"jobs": [LLAMA_GOODPUT]})
    llama = next(j for j in figures.most_wasteful_jobs if j["job"] == "llama-slow-checkpoint")
    assert [(p["kind"], p["gpu_hours"]) for p in llama["priced_findings"]] == [
        ("training_gpu_underutilized", 10.02),
        ("training_slow_checkpoint", 3.03),
    ]
    figures = _week_of_jobs([LLAMA_SLOW, _under_used(0.9)], {"jobs": [LLAMA_GOODPUT]})
    llama = next(j for j in figures.most_wasteful_jobs if j["job"] == "llama-slow-checkpoint")
    assert [(p["kind"], p["gpu_hours"]) for p in llama["priced_findings"]] == [
        ("training_gpu_underutilized", 18.03),
        ("training_slow_checkpoint", 2.0),
    ]
    assert llama["waste_usd"] == pytest.approx(20.0333 * 6.88, abs=0.01)
