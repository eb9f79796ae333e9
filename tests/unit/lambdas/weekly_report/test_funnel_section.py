"""The report's GPU-hour funnel (lambdas/weekly_report/funnel_section.py) from a week's
attribution, its jobs' priced findings and its serving days, at $6.88 a GPU-hour."""

import csv

import pytest

from lambdas.weekly_report.funnel_section import funnel_csv, funnel_section, week_funnel

PRICE = 6.88
WASTE = {
    "gpu_hour_usd": PRICE,
    "capacity": [
        {"node": "a", "gpu_hours": 1344.0, "group": "p5.48xlarge"},
        {"node": "b", "gpu_hours": 672.0, "group": "g5.12xlarge"},
    ],
    "capacity_sources": ["container_insights"],
    "held_by_node": {"a": 504.0, "b": 504.0},
    "all_jobs": [
        {"namespace": "nlp", "job": "bert", "held_gpu_hours": 336.0, "working_gpu_hours": 336.0,
         "faulted_gpu_hours": 0.0, "stepping_gpu_hours": 336.0, "inferred": False},
        {"namespace": "research", "job": "<nb>", "held_gpu_hours": 168.0,
         "working_gpu_hours": 63.0, "faulted_gpu_hours": 0.0, "stepping_gpu_hours": 0.0,
         "inferred": True},
        {"namespace": "serving", "job": "vllm", "held_gpu_hours": 504.0,
         "working_gpu_hours": 480.0, "faulted_gpu_hours": 0.0, "stepping_gpu_hours": 0.0,
         "inferred": True},
    ],
}  # fmt: skip
JOBS = [
    {
        "job": "bert",
        "inferred": False,
        "priced_findings": [
            {"kind": "training_data_bound", "gpu_hours": 134.18, "basis": "week"},
        ],
    }
]


def test_training_productive_is_its_stepping_hours_less_its_priced_losses() -> None:
    doc = week_funnel(WASTE, JOBS, served={("serving", "vllm"): 432.0})
    rows = {w["workload"]: w for w in doc["workloads"]}
    bert = rows["bert"]
    assert bert["productive"]["gpu_hours"] == pytest.approx(336 - 134.18)
    assert bert["badput"]["data_loading"]["gpu_hours"] == 134.18
    assert bert["productive_source"] == "training steps"
    # The replicas served tokens on days whose GPU-hours were 432: productive at most that.
    assert rows["vllm"]["productive"]["gpu_hours"] == 432.0
    assert rows["vllm"]["productive_source"] == "served tokens"
    # The notebook: no step, no token: its active hours are the no-signal badput.
    assert rows["<nb>"]["badput"] == {"no_step_or_token_signal": {"gpu_hours": 63.0,
                                                                  "usd": 433.44}}  # fmt: skip
    fleet = {s: v["gpu_hours"] for s, v in doc["fleet"].items()}
    assert fleet == {"paid": 2016.0, "allocated": 1008.0, "active": 879.0,
                     "productive": pytest.approx(633.82)}  # fmt: skip
    assert doc["drops"]["not_allocated"]["by_group"] == {
        "p5.48xlarge": {"gpu_hours": 840.0, "usd": 5779.2},
        "g5.12xlarge": {"gpu_hours": 168.0, "usd": 1155.84},
    }


def test_a_per_job_goodput_fills_the_productive_stage_where_given() -> None:
    doc = week_funnel(WASTE, JOBS, productive={("nlp", "bert"): 300.0})
    (bert,) = [w for w in doc["workloads"] if w["workload"] == "bert"]
    assert (bert["productive"]["gpu_hours"], bert["productive_source"]) == (300.0, "job goodput")


def test_the_section_escapes_names_and_the_csv_has_a_row_per_workload() -> None:
    doc = week_funnel(WASTE, JOBS)
    html = funnel_section(doc)
    assert "&lt;nb&gt;" in html
    assert "<nb>" not in html
    assert html.count('<p class="relates">') == html.count("<table>") == 3
    rows = list(csv.DictReader(funnel_csv(doc, cluster="c", week="2026-W49").splitlines()))
    assert [(r["workload"], r["allocated_gpu_hours"]) for r in rows] == [
        ("bert", "336.0"),
        ("<nb>", "168.0"),
        ("vllm", "504.0"),
    ]
    assert funnel_section({}) == ""
