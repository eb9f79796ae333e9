"""The report's failures: the week's failed runs once each, causes per job and node, and the
recurring signatures with what they point at, priced."""

from typing import Any

import pytest

from lambdas.weekly_report.failures_section import (
    failure_figures,
    failures_csv,
    failures_section,
    week_runs,
)

H = 3600.0
START, END = 100 * H, 268 * H  # a week of hours


def _run(job: str, at: float, node: str, sig: str = "CUDA out of memory", gpu_hours: float = 4.0,
         cause: str = "cuda_out_of_memory") -> dict[str, Any]:  # fmt: skip
    return {"job": job, "at": at, "cause": cause, "signature": sig, "nodes": [node],
            "gpu_hours": gpu_hours}  # fmt: skip


def test_overlapping_daily_files_count_each_failed_run_once_and_only_the_weeks() -> None:
    monday = {"failures": [_run("a", 110 * H, "n1", gpu_hours=6.0), _run("b", 90 * H, "n1")]}
    # The next day's lookback starts later: it saw less of run a.
    tuesday = {"failures": [_run("a", 110 * H, "n1", gpu_hours=2.0), {"job": "broken"}]}
    later = {"failures": [_run("c", 268 * H, "n2")]}  # next week's
    runs = week_runs([monday, tuesday, later, None, {"failures": "x"}], start=START, end=END)
    assert [(r["job"], r["gpu_hours"]) for r in runs] == [("a", 6.0)]


def test_the_copy_priced_at_what_its_pods_held_is_kept_over_a_larger_one() -> None:
    """At a 14-day lookback a failure is in fourteen daily files: the one whose attributed
    day it failed in priced it at what its pods held (2.5 GPU-hours over 75 minutes on two
    GPUs); the later ones at its GPUs x its two stepping clock hours (4)."""
    held = {**_run("tok", 110 * H, "n1", gpu_hours=2.5), "held": True}
    later = [{"failures": [_run("tok", 110 * H, "n1", gpu_hours=4.0)]} for _ in range(3)]
    runs = week_runs([later[0], {"failures": [held]}, *later[1:]], start=START, end=END)
    assert [(r["job"], r["gpu_hours"], r["held"]) for r in runs] == [("tok", 2.5, True)]


def test_one_node_across_jobs_points_at_the_node_and_across_nodes_at_the_code() -> None:
    runs = [
        _run("a", 110 * H, "n1", "Xid <n>", cause="gpu_xid"),
        _run("b", 120 * H, "n1", "Xid <n>", cause="gpu_xid"),
        _run("c", 130 * H, "n2", "KeyError: 'label'", gpu_hours=1.5,
             cause="application_exception"),
        _run("d", 140 * H, "n3", "KeyError: 'label'", gpu_hours=0.5,
             cause="application_exception"),
    ]  # fmt: skip
    figures = failure_figures(runs, gpu_hour_usd=10.0)
    assert (figures["failures"], figures["gpu_hours"], figures["usd"]) == (4, 10.0, 100.0)
    by_signature = {s["signature"]: s for s in figures["signatures"]}
    xid = by_signature["Xid <n>"]
    assert (xid["suspect"], xid["jobs"], xid["nodes"]) == ("node", ["a", "b"], ["n1"])
    assert (xid["gpu_hours"], xid["usd"]) == (8.0, 80.0)
    code = by_signature["KeyError: 'label'"]
    assert (code["suspect"], code["nodes"], code["gpu_hours"]) == (
        "code_or_data",
        ["n2", "n3"],
        2.0,
    )
    assert (code["first_seen"], code["last_seen"]) == ("1970-01-06 10:00", "1970-01-06 20:00")
    assert figures["by_node"][0] == {
        "node": "n1", "cause": "gpu_xid", "failures": 2, "jobs": ["a", "b"],
    }  # fmt: skip


def test_a_run_on_several_nodes_is_counted_on_each_but_blames_none() -> None:
    run = {**_run("a", 110 * H, "n1"), "nodes": ["n1", "n2"]}
    figures = failure_figures([run], gpu_hour_usd=1.0)
    assert [n["node"] for n in figures["by_node"]] == ["n1", "n2"]
    (group,) = figures["signatures"]
    assert (group["nodes"], group["suspect"]) == ([], "none")


def test_the_csv_has_a_row_per_failed_run_and_the_section_says_when_there_is_none() -> None:
    figures = failure_figures([_run("a", 110 * H, "n1")], gpu_hour_usd=2.5)
    assert failures_csv(figures, cluster="c", week="2026-W48").splitlines() == [
        "cluster,week,job,failed_hour,cause,nodes,signature,gpu_hours,usd",
        '"c","2026-W48","a","1970-01-05 14:00","cuda_out_of_memory","n1","CUDA out of memory",'
        "4.0,10.0",
    ]
    assert "$10 at $2.50 a GPU-hour" in failures_section(figures)
    empty = failures_section(failure_figures([], gpu_hour_usd=2.5))
    assert "No failed training run was read" in empty


@pytest.mark.parametrize("suspect", ["node", "code_or_data"])
def test_the_section_names_what_a_signature_points_at(suspect: str) -> None:
    nodes = ["n1", "n1"] if suspect == "node" else ["n1", "n2"]
    hours = (110 * H, 111 * H)
    runs = [_run(job, at, node) for job, at, node in zip("ab", hours, nodes, strict=True)]
    html = failures_section(failure_figures(runs, gpu_hour_usd=1.0))
    assert ("<td>the node (one node, several jobs)</td>" in html) is (suspect == "node")
    assert ("<td>the code or data (several nodes)</td>" in html) is (suspect == "code_or_data")


def test_failures_of_unknown_cause_count_but_do_not_recur() -> None:
    """Two runs whose logs named no cause have no signature: counted per job, never a
    recurring signature of their own."""
    runs = [_run("vit", at, "n1", sig="", cause="unknown") for at in (110 * H, 130 * H)]
    figures = failure_figures([*runs, _run("a", 120 * H, "n2")], gpu_hour_usd=10.0)
    assert figures["failures"] == 3
    assert [s["signature"] for s in figures["signatures"]] == ["CUDA out of memory"]
    assert {j["job"]: j["failures"] for j in figures["by_job"]} == {"vit": 2, "a": 1}
