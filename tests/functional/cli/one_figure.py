"""One figure per fact, over a demo run's outputs (report.json, its CSVs, the findings): every
job's GPU-hours and dollars the same in every table, finding, action and CSV that states them;
the GPU-hour funnel nested; its paid stage the GPU-hours EC2 bills for the demo's GPU nodes."""

import csv
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cli.demo.exporter import REPLAYED, replay_window
from cli.demo.realistic import nodes as ec2
from cli.demo.week import HOURS, NODES
from lambdas.training_analyzer.analysis import lookback_words
from lambdas.training_analyzer.goodput.funnel import check_nesting
from lambdas.weekly_report.funnel_section import GOODPUT_SOURCE
from lambdas.weekly_report.goodput_section import GOODPUT_CSV
from lambdas.weekly_report.job_waste import BADPUT_OF_FINDING

#: What one figure may differ by between two files: the rounding of the one that rounds most.
CENTS = 0.011
HUNDREDTHS = 0.011


def ec2_gpus(instance_types: Iterable[str]) -> dict[str, int]:
    """Each instance type's GPUs as EC2 describes it (``DescribeInstanceTypes``'
    ``GpuInfo.Gpus[].Count``, moto's copy of EC2's instance-type data): what EC2 bills a
    GPU-hour of, read apart from the demo's own instance model."""
    with mock_aws():
        client: Any = boto3.client("ec2", region_name="us-east-1")
        described = client.describe_instance_types(InstanceTypes=sorted(set(instance_types)))
    return {
        t["InstanceType"]: sum(g["Count"] for g in t.get("GpuInfo", {}).get("Gpus", []))
        for t in described["InstanceTypes"]
    }


def ec2_gpu_hours(all_week: Sequence[ec2.Node] = ()) -> float:
    """The GPU-hours EC2 bills for the demo's GPU nodes in its week: each node's instance
    type's GPUs (``ec2_gpus``) times the hours it ran: the week's three nodes (and
    ``all_week``'s) all week, the replayed node for its replay."""
    start, end = replay_window()
    ran = [(node, float(HOURS)) for node, _, _, _ in NODES.values()]
    ran += [(node, float(HOURS)) for node in all_week]
    ran.append((REPLAYED, (end - start) / 3600))
    gpus = ec2_gpus(node.instance_type.name for node, _ in ran)
    return sum(gpus[node.instance_type.name] * hours for node, hours in ran)


def _csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text(encoding="utf-8").splitlines()))


def _findings(out: Path) -> list[dict[str, Any]]:
    lines = (out / "training-findings.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def check_one_figure_per_fact(out: Path, all_week: Sequence[ec2.Node] = ()) -> dict[str, Any]:
    """Every assertion of the rule over ``out``; returns the report for the caller's own.
    ``all_week``: GPU nodes the run's world has beside the week's (the serving node)."""
    report: dict[str, Any] = json.loads((out / "report.json").read_text(encoding="utf-8"))
    funnel = report["funnel"]
    assert check_nesting(funnel) == []
    assert funnel["clamped"] == {}
    # Paid reconciles with the GPU-hours EC2 bills for the week's GPU nodes within 1%.
    paid = funnel["fleet"]["paid"]["gpu_hours"]
    billed = ec2_gpu_hours(all_week)
    assert abs(paid - billed) <= 0.01 * billed, (paid, billed)
    # The capacity no pod asked for is the headline's and the idle-capacity action's GPU-hours
    # no pod held, and the lost GPUs no pod held (the headline's lost or faulted), each named.
    unallocated = funnel["drops"]["not_allocated"]
    not_held = report["waste"]["classes"]["not_held"]
    assert unallocated["not_held"]["gpu_hours"] == pytest.approx(not_held, abs=HUNDREDTHS)
    rest = unallocated["lost_or_unseen"]["gpu_hours"]
    assert not_held + rest == pytest.approx(unallocated["gpu_hours"], abs=HUNDREDTHS)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert f"{unallocated['not_held']['gpu_hours']:,.1f} were on GPUs no pod held" in html
    jobs = {j["job"]: j for j in [*report["costliest_jobs"], *report["most_wasteful_jobs"]]}
    _held(report, out, jobs)
    _goodput_held(report, out)
    _goodput(report, out)
    _priced(report, out, jobs)
    _daily(report, out, jobs)
    _failed_runs(report, out)
    return report


def _held(report: dict[str, Any], out: Path, jobs: dict[str, dict[str, Any]]) -> None:
    funnel, price = report["funnel"], report["waste"]["gpu_hour_usd"]
    # Each job's held GPU-hours: the attribution's week, the job tables, the funnel's allocated
    # stage and funnel.csv, in GPU-hours and in dollars.
    held: dict[str, float] = defaultdict(float)
    for row in report["waste"]["all_jobs"]:
        held[row["job"]] += row["held_gpu_hours"]
    allocated: dict[str, float] = defaultdict(float)
    allocated_usd: dict[str, float] = defaultdict(float)
    for w in funnel["workloads"]:
        allocated[w["workload"]] += w["allocated"]["gpu_hours"]
        allocated_usd[w["workload"]] += w["allocated"]["usd"]
    assert held.keys() == allocated.keys()
    for job, hours in held.items():
        assert allocated[job] == pytest.approx(hours, abs=HUNDREDTHS), job
        assert allocated_usd[job] == pytest.approx(hours * price, abs=CENTS * 2), job
    rows = _csv(out / "funnel.csv")
    from_csv: dict[str, float] = defaultdict(float)
    for row in rows:
        from_csv[row["workload"]] += float(row["allocated_gpu_hours"])
    assert from_csv == pytest.approx(dict(allocated), abs=HUNDREDTHS)
    for job, row in jobs.items():
        if row["held_gpu_hours"] is not None:
            assert row["held_gpu_hours"] == pytest.approx(held[job], abs=HUNDREDTHS), job
            assert row["held_usd"] == pytest.approx(allocated_usd[job], abs=CENTS), job


def _goodput_held(report: dict[str, Any], out: Path) -> None:
    """Each training job's goodput is over the GPU-hours the attribution says it held (the
    job tables', funnel.csv's allocated, the failures'), so it falls in the size its pods held
    and each badput's GPU-hours are the funnel's; a job told its GPUs were held with no steps
    had them idle (a job whose steps ran outside the emitter's loop has no goodput)."""
    held: dict[str, float] = defaultdict(float)
    for row in report["waste"]["all_jobs"]:
        held[row["job"]] += row["held_gpu_hours"]
    from_csv = {r["job"]: r for r in _csv(out / GOODPUT_CSV)}
    for week in report["goodput"]["jobs"]:
        job = week["job"]
        assert job in held, f"{job}: its goodput's GPU-hours on no GPU the attribution saw"
        total = week["total_gpu_hours"] - week["waiting_for_gpus_gpu_hours"]
        assert total == pytest.approx(held[job], abs=HUNDREDTHS), job
        row = from_csv[job]
        shown = float(row["total_gpu_hours"]) - float(row["waiting_for_gpus_gpu_hours"])
        assert shown == pytest.approx(held[job], abs=HUNDREDTHS), job
    workloads: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for w in report["funnel"]["workloads"]:
        for stage in ("allocated", "active"):
            workloads[w["workload"]][stage] += w[stage]["gpu_hours"]
    for f in _findings(out):
        if f["kind"] == "training_low_goodput" and (
            f["evidence"]["largest_badput"] == "held_no_steps"
        ):
            mine = workloads[f["resource"].removeprefix("job/")]
            assert mine["active"] < mine["allocated"] / 2, f["summary"]


def _goodput(report: dict[str, Any], out: Path) -> None:
    """Each training job's goodput is one figure: the goodput section's and goodput.csv's
    share of what it held is the funnel's productive share of its allocated GPU-hours (the
    attribution's), as is each badput's that names time steps ran in, unless the nesting cut
    the job's productive hours to its active ones (reported under ``clamped``)."""
    funnel = report["funnel"]
    weeks = {r["job"]: r for r in report["goodput"]["jobs"]}
    from_csv = {r["job"]: r for r in _csv(out / GOODPUT_CSV)}
    stages: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for w in funnel["workloads"]:
        if w["productive_source"] != GOODPUT_SOURCE:
            continue
        mine = stages[w["workload"]]
        for stage in ("allocated", "active", "productive"):
            mine[stage] += w[stage]["gpu_hours"]
        for category, v in w["badput"].items():
            mine[category] += v["gpu_hours"]
    assert stages, "no workload's productive stage came from its job's goodput"
    for job, mine in stages.items():
        week = weeks[job]
        held = week["total_gpu_hours"] - week["waiting_for_gpus_gpu_hours"]
        assert float(from_csv[job]["productive_gpu_hours"]) == pytest.approx(
            week["productive_gpu_hours"], abs=HUNDREDTHS
        )
        share = week["productive_gpu_hours"] / held
        if mine["productive"] < mine["active"] - HUNDREDTHS:  # not cut to its active hours
            assert mine["productive"] == pytest.approx(share * mine["allocated"], abs=CENTS), job
            for category in ("data_loading", "checkpoint_save", "evaluation", "progress_lost"):
                expected = week[f"{category}_gpu_hours"] / held * mine["allocated"]
                if mine["active"] >= mine["allocated"] - HUNDREDTHS:  # nothing held idle
                    assert mine[category] == pytest.approx(expected, abs=HUNDREDTHS), job
        assert mine["productive"] <= mine["active"] + HUNDREDTHS, job


def _priced(report: dict[str, Any], out: Path, jobs: dict[str, dict[str, Any]]) -> None:
    funnel, price = report["funnel"], report["waste"]["gpu_hour_usd"]
    # Each priced training finding's week: the job row's, the action's, the funnel's badput of
    # that category, the namespace's waiting in the showback CSV.
    actions = {a["finding"]: a for a in report["actions"] if a.get("finding")}
    weeks = {r["job"]: r for r in report["goodput"]["jobs"]}
    badput: dict[tuple[str, str], float] = defaultdict(float)
    fed = {w["workload"] for w in funnel["workloads"] if w["productive_source"] == GOODPUT_SOURCE}
    for w in funnel["workloads"]:
        for category, v in w["badput"].items():
            badput[(w["workload"], category)] += v["gpu_hours"]
    waiting: dict[str, float] = defaultdict(float)
    weeks = {r["job"]: r for r in report["goodput"]["jobs"]}
    for job, row in jobs.items():
        if row["goodput_held_gpu_hours"] is not None:
            # A job the attribution lacks is priced on its goodput, never past what it held.
            week = weeks[job]
            held = week["total_gpu_hours"] - week["waiting_for_gpus_gpu_hours"]
            assert row["goodput_held_gpu_hours"] == pytest.approx(held, abs=HUNDREDTHS), job
            assert row["waste_usd"] <= held * price + CENTS, job
        for priced in row["priced_findings"]:
            measured = weeks.get(job, {}).get(f"{BADPUT_OF_FINDING.get(priced['kind'])}_gpu_hours")
            if priced["basis"] == "goodput" and measured is not None:
                assert priced["gpu_hours"] <= measured + HUNDREDTHS, (job, priced)
            if priced["basis"] != "week":
                continue
            name = f"{priced['kind']} {priced['resource']}"
            if name in actions:
                assert actions[name]["usd"] == priced["usd"], name
                assert actions[name]["gpu_hours"] == priced["gpu_hours"], name
            category = BADPUT_OF_FINDING[priced["kind"]]
            if job in fed:  # its goodput names its badput (``_goodput``): the same figure
                measured = weeks[job][f"{category}_gpu_hours"]
                assert priced["gpu_hours"] == pytest.approx(measured, abs=HUNDREDTHS), name
                continue
            assert badput[(job, category)] == pytest.approx(priced["gpu_hours"], abs=HUNDREDTHS)
            assert priced["usd"] == pytest.approx(priced["gpu_hours"] * price, abs=CENTS * 7)
        for namespace in row["namespaces"]:
            waiting[namespace] += row["waiting_usd"] / len(row["namespaces"])
    for row in _csv(out / "report.csv"):
        shown = float(row["waiting_while_stepping_usd"])
        assert shown == pytest.approx(waiting.get(row["namespace"], 0.0), abs=CENTS)


def _daily(report: dict[str, Any], out: Path, jobs: dict[str, dict[str, Any]]) -> None:
    price = report["waste"]["gpu_hour_usd"]
    # Each daily training finding: a whole day of data (its lookback a whole number of UTC
    # days), its GPU-hours its GPUs times its stepping hours, its month the day's pace; a job's
    # daily findings of one kind over whole days of steps say the same GPU-hours.
    daily: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for f in _findings(out):
        evidence = f.get("evidence") or {}
        if f["analyzer"] != "training" or "waste_in_lookback_usd" not in evidence:
            continue
        assert f["detected_at"].endswith("T00:00:00+00:00"), f["summary"]
        if "lookback" in f["summary"]:
            assert f"its {lookback_words(24)} lookback (" in f["summary"], f["summary"]
        assert evidence["gpu_hours"] == evidence["gpus"] * evidence["active_hours"]
        monthly = evidence["waste_in_lookback_usd"] * 730 / 24
        assert f["estimated_monthly_waste_usd"] == pytest.approx(monthly, abs=0.01 * 730 / 24)
        daily[(f["kind"], f["resource"])].append(evidence)
    for (kind, resource), days in daily.items():
        whole = [d for d in days if d["active_hours"] == 24]
        assert len({d["gpu_hours"] for d in whole}) <= 1, (kind, resource)
        job = resource.removeprefix("job/")
        row = jobs.get(job)
        priced = [p for p in (row or {}).get("priced_findings", []) if p["kind"] == kind]
        if whole and priced and priced[0]["basis"] == "week":
            # The week's GPU-hours of the kind over its stepping GPU-hours is the daily share.
            share = whole[-1]["waste_in_lookback_usd"] / (whole[-1]["gpu_hours"] * price)
            assert priced[0]["share"] == pytest.approx(share, abs=0.001), (kind, resource)


def _failed_runs(report: dict[str, Any], out: Path) -> None:
    """Each failed run's GPU-hours are what its job's pods held (the attribution's): no job's
    failed runs held more than the job did, failures.csv and the section give one figure, and
    a job's findings that say what it held that day say no less than its runs that day held."""
    price = report["waste"]["gpu_hour_usd"]
    held: dict[str, float] = defaultdict(float)
    for row in report["waste"]["all_jobs"]:
        held[row["job"]] += row["held_gpu_hours"]
    section = report["failures"]
    by_job: dict[str, float] = defaultdict(float)
    by_day: dict[tuple[str, str], float] = defaultdict(float)
    for run in section["runs"]:
        by_job[run["job"]] += run["gpu_hours"]
        by_day[(run["job"], run["failed_hour"][:10])] += run["gpu_hours"]
        assert run["usd"] == pytest.approx(run["gpu_hours"] * price, abs=CENTS), run["job"]
    for job, hours in by_job.items():
        assert job in held, f"{job}: a failed run on no GPU the attribution saw"
        assert hours <= held[job] + HUNDREDTHS, job
    from_csv: dict[str, float] = defaultdict(float)
    for row in _csv(out / "failures.csv"):
        from_csv[row["job"]] += float(row["gpu_hours"])
    assert from_csv == pytest.approx(dict(by_job), abs=HUNDREDTHS)
    said = 0
    for f in _findings(out):
        held_that_day = (f.get("evidence") or {}).get("held_gpu_hours")
        if held_that_day is None or not f["kind"].startswith("training_"):
            continue
        job = f["resource"].removeprefix("job/")
        assert held_that_day <= held[job] + HUNDREDTHS, f["summary"]
        day = (datetime.fromisoformat(f["detected_at"]) - timedelta(days=1)).date().isoformat()
        assert by_day.get((job, day), 0.0) <= held_that_day + HUNDREDTHS, f["summary"]
        said += 1
    assert said, "no training finding said what its job held"
