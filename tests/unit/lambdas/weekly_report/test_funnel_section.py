"""The report's GPU-hour funnel (lambdas/weekly_report/funnel_section.py) from a week's
attribution, its jobs' priced findings and its serving days, at $6.88 a GPU-hour."""

import csv

import pytest

from lambdas.training_analyzer.goodput.jobs import HOUR, Badput, JobGoodput, Split
from lambdas.weekly_report.funnel_section import (
    day_funnel,
    funnel_csv,
    funnel_section,
    goodput_splits,
    week_funnel,
)

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


def test_each_jobs_goodput_fills_its_productive_stage_and_names_the_drop() -> None:
    # bert's week of goodput (the goodput section's row): 240 of its 320 held GPU-hours kept
    # steps' work, 80 data loading, 8 pending; the attribution says it held 336 (x 1.05),
    # all active: 252 productive, 84 data loading, the pending hours in no stage.
    zero = {f"{b}_gpu_hours": 0.0 for b in Badput}
    bert_week = zero | {"productive_gpu_hours": 240.0, "data_loading_gpu_hours": 80.0}
    week = {"jobs": [{"job": "bert", **bert_week, "waiting_for_gpus_gpu_hours": 8.0}]}
    doc = week_funnel(WASTE, JOBS, goodput=goodput_splits(week))
    (bert,) = [w for w in doc["workloads"] if w["workload"] == "bert"]
    assert (bert["productive"]["gpu_hours"], bert["productive_source"]) == (252.0, "job goodput")
    assert bert["badput"] == {"data_loading": {"gpu_hours": 84.0, "usd": round(84 * PRICE, 2)}}
    assert doc["drops"]["active_not_productive"]["by_category"]["data_loading"]["gpu_hours"] == 84
    # The notebook has no goodput: its active hours stay the no-signal badput.
    (nb,) = [w for w in doc["workloads"] if w["workload"] == "<nb>"]
    assert nb["badput"] == {"no_step_or_token_signal": {"gpu_hours": 63.0, "usd": 433.44}}


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


def test_a_days_funnel_joins_the_days_attribution_and_its_jobs_goodput() -> None:
    """``gpu-insights analyze training``'s day: the attribution's table and the day's goodput
    entries (JobGoodput.to_json()): bert held 48 GPU-hours, all active, and its emitter says
    60% of them were kept steps' work, 40% data loading."""
    table = {
        "jobs": [{"namespace": "nlp", "job": "bert", "held_gpu_hours": 48.0,
                  "working_gpu_hours": 48.0, "stepping_gpu_hours": 48.0}],
        "capacity": [{"node": "a", "gpu_hours": 192.0, "group": "p5.48xlarge"}],
    }  # fmt: skip
    split = Split(28.8 * HOUR, {Badput.DATA_LOADING: 19.2 * HOUR})
    bert = JobGoodput("bert", 2, split, (), 0, 0, 0.0, *[None] * 6)
    doc = day_funnel(table, [bert.to_json()], gpu_hour_usd=PRICE)
    fleet = {s: v["gpu_hours"] for s, v in doc["fleet"].items()}
    assert fleet == {"paid": 192.0, "allocated": 48.0, "active": 48.0, "productive": 28.8}
    assert doc["drops"]["active_not_productive"]["by_category"] == {
        "data_loading": {"gpu_hours": 19.2, "usd": round(19.2 * PRICE, 2)}
    }


def test_a_goodput_of_pending_time_alone_gives_no_productive_stage() -> None:
    """A job whose week of goodput is only its pods' pending (it held nothing the emitter saw)
    keeps the stepping hours' productive stage: pending time is in no stage."""
    split = {"productive": 0.0, "waiting_for_gpus": 5.0}
    doc = week_funnel(WASTE, JOBS, goodput={"bert": split})
    (bert,) = [w for w in doc["workloads"] if w["workload"] == "bert"]
    assert bert["productive_source"] == "training steps"
    assert bert["productive"]["gpu_hours"] == pytest.approx(336 - 134.18)
