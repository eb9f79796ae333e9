"""The report's GPU-hour funnel: paid, allocated, active, productive for the week, the fleet,
each namespace and each workload, and each drop named (lambdas/training_analyzer/goodput/
funnel.py). Pure: from the week's attribution (``waste``), its jobs' rows (job_waste.py) and
the GPU-hours of the week's serving tables that served tokens.

Productive: a training job's goodput over the GPU-time it held times its held GPU-hours, the
drop from active named by its badput categories (funnel.py ``from_goodput``, from the week's
goodput files: goodput_section.py); a training job whose emitter splits no time (an older
emitter) falls back on its stepping GPU-hours (held GPU-hours in hours its emitter reported
steps) less what its priced training findings say was lost while stepping (waiting for data,
slow checkpoints, GPUs under-used: job_waste.py ``priced_findings``, each GPU-hour priced
once), each loss its badput category; an inference
workload's active GPU-hours, at most the GPU-hours of the days its serving table counted
generated tokens; any other workload has no productivity signal (a notebook, a job that runs no
emitter) and its active GPU-hours are ``no_step_or_token_signal``.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any, Final

from lambdas.shared.serving_table import ServingRow
from lambdas.training_analyzer.goodput.funnel import (
    NOT_HELD_BADPUT,
    STAGES,
    NodeCapacity,
    Workload,
    from_goodput,
    funnel,
)
from lambdas.training_analyzer.goodput.jobs import Badput
from lambdas.weekly_report.goodput_section import goodput_figures
from lambdas.weekly_report.html_table import html_table
from lambdas.weekly_report.job_waste import BADPUT_OF_FINDING
from lambdas.weekly_report.spreadsheet import csv_table
from lambdas.weekly_report.waste import week_waste
from lambdas.weekly_report.waste_section import relation

FUNNEL_CSV: Final = "funnel.csv"
#: ``productive_source`` of a training workload whose productive stage is its job's goodput.
GOODPUT_SOURCE: Final = "job goodput"
CSV_COLUMNS: Final = (
    "cluster",
    "week",
    "namespace",
    "workload",
    *(f"{s}_{unit}" for s in STAGES[1:] for unit in ("gpu_hours", "usd")),
    "held_idle_gpu_hours",
    "held_faulted_gpu_hours",
    "productive_source",
)


def served_gpu_hours(rows: Iterable[ServingRow]) -> dict[tuple[str, str], float]:
    """(namespace, workload) -> GPU-hours of its days (rows) that generated tokens."""
    served: dict[tuple[str, str], float] = defaultdict(float)
    for row in rows:
        if row.generation_tokens > 0:
            served[(row.namespace, row.workload)] += row.gpu_hours
    return dict(served)


def _training(
    row: Mapping[str, Any], job: Mapping[str, Any] | None, stepped_total: float
) -> tuple[float, dict[str, float]]:
    """A training workload's productive GPU-hours in one namespace, and its badput: its
    stepping hours less its job's priced losses, split by the namespace's share of them."""
    stepping = float(row.get("stepping_gpu_hours") or 0.0)
    share = stepping / stepped_total if stepped_total else 0.0
    badput: dict[str, float] = defaultdict(float)
    for priced in (job or {}).get("priced_findings", []):
        category = BADPUT_OF_FINDING.get(str(priced.get("kind")), str(priced.get("kind")))
        badput[category] += float(priced.get("gpu_hours") or 0.0) * share
    return max(0.0, stepping - sum(badput.values())), dict(badput)


def goodput_splits(goodput: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """Each job's week of goodput (goodput_section.goodput_figures' rows) as the GPU-hours
    ``from_goodput`` splits: ``productive`` and each badput."""
    splits = {}
    for row in goodput.get("jobs", []):
        split = {"productive": float(row["productive_gpu_hours"])}
        split |= {str(b): float(row[f"{b}_gpu_hours"]) for b in Badput}
        splits[str(row["job"])] = split
    return splits


def week_funnel(
    waste: Mapping[str, Any],
    jobs: Iterable[Mapping[str, Any]],
    served: Mapping[tuple[str, str], float] | None = None,
    goodput: Mapping[str, Mapping[str, float]] | None = None,
) -> dict[str, Any]:
    """The week's funnel. ``goodput`` (job -> its week's ``goodput_splits``), where it has the
    job, gives a training workload's productive stage and its badput (``from_goodput``); a job
    without it falls back on its stepping hours less its priced findings."""
    price = float(waste.get("gpu_hour_usd") or 0.0)
    by_job = {str(j["job"]): j for j in jobs if not j.get("inferred")}
    rows = list(waste.get("all_jobs", []))
    stepped: dict[str, float] = defaultdict(float)
    for row in rows:
        stepped[str(row["job"])] += float(row.get("stepping_gpu_hours") or 0.0)
    workloads = []
    for row in rows:
        key = (str(row["namespace"]), str(row["job"]))
        held = float(row.get("held_gpu_hours") or 0.0)
        active = float(row.get("working_gpu_hours") or 0.0)
        value: float | None = None
        badput: dict[str, float] = {}
        source = ""
        # A job's goodput by its emitter's job name: its pods' rows, named by the emitter or
        # inferred from their controller's name.
        split = (goodput or {}).get(key[1])
        if split and held > 0 and any(v > 0 for k, v in split.items() if k != NOT_HELD_BADPUT):
            value, badput = from_goodput(held, active, split)
            source = GOODPUT_SOURCE
        elif float(row.get("stepping_gpu_hours") or 0.0) > 0 and not row.get("inferred"):
            value, badput = _training(row, by_job.get(key[1]), stepped[key[1]])
            source = "training steps"
        elif served and key in served:
            # Its active hours, at most those of the days it generated tokens.
            value, source = min(served[key], active), "served tokens"
        workloads.append(
            Workload(
                namespace=key[0],
                workload=key[1],
                allocated=held,
                active=active,
                faulted=float(row.get("faulted_gpu_hours") or 0.0),
                productive=value,
                badput=badput,
                productive_source=source,
            )
        )
    capacity = [
        NodeCapacity(
            node=str(c["node"]),
            gpu_hours=float(c.get("gpu_hours") or 0.0),
            node_group=str(c.get("group") or ""),
        )
        for c in waste.get("capacity", [])
    ]
    document = funnel(
        capacity, workloads, gpu_hour_usd=price, held_by_node=waste.get("held_by_node")
    )
    document["capacity_sources"] = list(waste.get("capacity_sources", []))
    return document


def day_funnel(
    table: Mapping[str, Any], goodput: Iterable[Mapping[str, Any]], *, gpu_hour_usd: float
) -> dict[str, Any]:
    """One day's funnel, as ``gpu-insights analyze training`` shows it: from the day's GPU-hour
    attribution ``table`` and the jobs' goodput over that day (``JobGoodput.to_json()``, the
    daily goodput file's entries), as the weekly report joins a week of them."""
    waste = week_waste({"day": table}, gpu_hour_usd=gpu_hour_usd)
    week = goodput_figures([{"jobs": list(goodput)}])
    return week_funnel(waste, [], goodput=goodput_splits(week))


def _cells(row: Mapping[str, Any]) -> list[str]:
    return [
        f"{row[s]['gpu_hours']:,.1f} (${row[s]['usd']:,.2f})" if s in row else "—" for s in STAGES
    ]


def funnel_section(document: Mapping[str, Any]) -> str:
    """The report's section: the fleet's stages, each drop named, and each workload's."""
    if not document or not document.get("fleet"):
        return ""
    drops = document["drops"]
    parts = ['<h2 id="funnel">Where every GPU-hour went</h2>']
    parts.append(
        relation(
            "Paid is the GPU nodes' GPUs x the hours they ran; allocated, what pods held (the "
            "GPU-hours table's held hours); active, held and working (its held and working "
            "class); productive, kept training steps and the hours that served tokens."
        )
    )
    parts.append(html_table(["", *STAGES], [["fleet", *_cells(document["fleet"])]], range(1, 5)))
    rows = [
        ["capacity no pod asked for", group, f"{v['gpu_hours']:,.1f}", f"${v['usd']:,.2f}"]
        for group, v in drops["not_allocated"]["by_group"].items()
    ]
    rows += [
        [
            "held and idle",
            f"{w['namespace']} / {w['workload']}",
            f"{w['held_idle']['gpu_hours'] + w['held_faulted']['gpu_hours']:,.1f}",
            f"${w['held_idle']['usd'] + w['held_faulted']['usd']:,.2f}",
        ]
        for w in drops["held_not_active"]["by_workload"]
    ]
    rows += [
        ["active but not productive", category, f"{v['gpu_hours']:,.1f}", f"${v['usd']:,.2f}"]
        for category, v in drops["active_not_productive"]["by_category"].items()
    ]
    parts.append(
        relation(
            "Each drop between two stages, named: capacity no pod asked for by node group, held "
            "and idle by workload (the GPU-hours table's held without work and lost), active but "
            "not productive by badput category (the training jobs' goodput, else their priced "
            "findings)."
        )
    )
    parts.append(html_table(["drop", "where", "GPU-hours", "cost"], rows, (2, 3)))
    parts.append(
        relation(
            "Each workload's stages below paid; its held GPU-hours are the job tables' and the "
            "showback CSV's."
        )
    )
    parts.append(
        html_table(
            ["namespace / workload", *STAGES],
            (
                [f"{w['namespace']} / {w['workload']}", *_cells(w)]
                for w in document.get("workloads", [])
            ),
            range(1, 5),
        )
    )
    if document.get("clamped"):
        cut = ", ".join(f"{k} {v:,.1f}" for k, v in document["clamped"].items())
        parts.append(f"<p>Cut to keep the stages nested (GPU-hours): {cut}.</p>")
    return "\n".join(parts)


def funnel_csv(document: Mapping[str, Any], *, cluster: str, week: str) -> str:
    """One row per workload: its stages in GPU-hours and dollars."""

    def row(w: Mapping[str, Any]) -> dict[str, Any]:
        flat: dict[str, Any] = {"cluster": cluster, "week": week}
        flat |= {k: w[k] for k in ("namespace", "workload", "productive_source")}
        for stage in STAGES[1:]:
            flat[f"{stage}_gpu_hours"] = w[stage]["gpu_hours"]
            flat[f"{stage}_usd"] = w[stage]["usd"]
        flat["held_idle_gpu_hours"] = w["held_idle"]["gpu_hours"]
        flat["held_faulted_gpu_hours"] = w["held_faulted"]["gpu_hours"]
        return flat

    return csv_table(CSV_COLUMNS, (row(w) for w in document.get("workloads", [])))
