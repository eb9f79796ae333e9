"""The report's failures: the week's failed training runs as the training analyzer read them
from their pods' and nodes' logs (its daily ``training-failures.json``,
lambdas/shared/report_keys.py), their causes counted per job and per node, and the recurring
signatures grouped across jobs, nodes and days (failure_causes.group_signatures) with what
they point at and what their failed runs cost. Pure: figures, their HTML section and CSV.

A failed run's GPU-hours are what its pods held since the job's previous failure as the
GPU-hour attribution of the day measured them (lambdas/training_analyzer/failure_placement.py:
the funnel's, the goodput's and the job tables' figure), or, for a run that began the day
before, its GPUs x its stepping hours in that time (failure_run.py), priced at the
deployment's GPU-hour price: what the run held until it failed, of which a checkpoint saves
some."""

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from html import escape
from typing import Any, Final

from lambdas.training_analyzer.failure_causes.signature import Occurrence, group_signatures
from lambdas.weekly_report.html_table import html_table
from lambdas.weekly_report.spreadsheet import csv_table

#: The section's CSV, beside report.csv under the week's prefix: one row per failed run.
FAILURES_CSV: Final = "failures.csv"
#: Recurring signatures the section names, the most frequent first.
TOP_SIGNATURES: Final = 10
COLUMNS: Final = (
    "cluster",
    "week",
    "job",
    "failed_hour",
    "cause",
    "nodes",
    "signature",
    "gpu_hours",
    "usd",
)


def _run(entry: Any) -> dict[str, Any] | None:
    """One failed run as the analyzer wrote it, or None where it is not one."""
    if not isinstance(entry, Mapping):
        return None
    try:
        return {
            "job": str(entry["job"]),
            "at": float(entry["at"]),
            "cause": str(entry["cause"]),
            "signature": str(entry["signature"]),
            "nodes": [str(n) for n in entry["nodes"]],
            "gpu_hours": float(entry["gpu_hours"]),
            "held": entry.get("held") is True,
        }
    except (KeyError, TypeError, ValueError):
        return None


def week_runs(documents: Iterable[Any], *, start: float, end: float) -> list[dict[str, Any]]:
    """The failed runs in ``[start, end)`` from the week's daily files (``{"failures":
    [...]}``), each (job, failed hour) once: the daily runs' lookbacks overlap, and the copy
    priced at what its pods held (the run whose attributed day it failed in) is kept, else
    the one that saw most of the run (the most GPU-hours)."""
    kept: dict[tuple[str, float], dict[str, Any]] = {}
    for document in documents:
        entries = document.get("failures") if isinstance(document, Mapping) else None
        for entry in entries if isinstance(entries, list) else []:
            run = _run(entry)
            if run is None or not start <= run["at"] < end:
                continue
            key = (run["job"], run["at"])
            if key not in kept or _rank(run) > _rank(kept[key]):
                kept[key] = run
    return sorted(kept.values(), key=lambda r: (r["at"], r["job"]))


def _rank(run: Mapping[str, Any]) -> tuple[bool, float]:
    return run["held"], run["gpu_hours"]


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M")


def failure_figures(runs: list[dict[str, Any]], *, gpu_hour_usd: float) -> dict[str, Any]:
    """Totals, causes per job and per node, and the top recurring signatures, priced."""
    by_job: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    by_node: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        by_job[(run["job"], run["cause"])].append(run)
        for node in run["nodes"]:
            by_node[(node, run["cause"])].append(run)
    jobs = [
        {
            "job": job,
            "cause": cause,
            "failures": len(seen),
            "gpu_hours": round(sum(r["gpu_hours"] for r in seen), 2),
            "usd": round(sum(r["gpu_hours"] for r in seen) * gpu_hour_usd, 2),
        }
        for (job, cause), seen in by_job.items()
    ]
    nodes = [
        {
            "node": node,
            "cause": cause,
            "failures": len(seen),
            "jobs": sorted({r["job"] for r in seen}),
        }
        for (node, cause), seen in by_node.items()
    ]
    # A run on one node is that node's; a run whose lines name several (or none) is no one
    # node's, so it cannot make a signature look like it follows a node or spans nodes. A run
    # whose cause is unknown has no signature: nothing to recur.
    signed = [r for r in runs if r["signature"]]
    occurrences = [
        Occurrence(
            signature=r["signature"],
            cause=r["cause"],
            job=r["job"],
            node=r["nodes"][0] if len(r["nodes"]) == 1 else "",
            at=datetime.fromtimestamp(r["at"], UTC),
        )
        for r in signed
    ]
    hours: Counter[tuple[str, str]] = Counter()
    for o, r in zip(occurrences, signed, strict=True):
        hours[(o.signature, o.cause)] += r["gpu_hours"]
    signatures = [
        {
            "signature": g.signature,
            "cause": g.cause,
            "failures": g.count,
            "jobs": list(g.jobs),
            "nodes": list(g.nodes),
            "first_seen": g.first_seen.strftime("%Y-%m-%d %H:%M"),
            "last_seen": g.last_seen.strftime("%Y-%m-%d %H:%M"),
            "suspect": str(g.suspect),
            "gpu_hours": round(hours[(g.signature, g.cause)], 2),
            "usd": round(hours[(g.signature, g.cause)] * gpu_hour_usd, 2),
        }
        for g in group_signatures(occurrences)
    ]
    total = sum(r["gpu_hours"] for r in runs)
    return {
        "failures": len(runs),
        "gpu_hours": round(total, 2),
        "usd": round(total * gpu_hour_usd, 2),
        "gpu_hour_usd": gpu_hour_usd,
        "by_job": sorted(jobs, key=lambda j: (-j["failures"], -j["gpu_hours"], j["job"])),
        "by_node": sorted(nodes, key=lambda n: (-n["failures"], n["node"], n["cause"])),
        "signatures": signatures[:TOP_SIGNATURES],
        "runs": [
            {**r, "failed_hour": _iso(r["at"]), "usd": round(r["gpu_hours"] * gpu_hour_usd, 2)}
            for r in runs
        ],
    }


#: What a signature's spread points at (failure_causes.Suspect), in the table.
SUSPECTS: Final = {
    "node": "the node (one node, several jobs)",
    "code_or_data": "the code or data (several nodes)",
    "none": "",
}


def failures_section(figures: Mapping[str, Any]) -> str:
    head = '<h2 id="failures">Training failures</h2>'
    if not figures.get("failures"):
        return (
            f"{head}<p>No failed training run was read from the logs this week (no job's "
            "job_failed count rose, or the analyzer could not read its logs: see its "
            "analysis_error findings).</p>"
        )
    price = figures["gpu_hour_usd"]
    intro = (
        f"{figures['failures']} failed run(s), each cause named from its pods' and nodes' "
        f"Container Insights logs: {figures['gpu_hours']:,.1f} GPU-hours held by the runs "
        f"that failed (what their pods held since the job's failure before, as the GPU-hour "
        f"attribution of the day counts them; for a run begun the day before, their GPUs x "
        f"their stepping hours), "
        f"${figures['usd']:,.0f} at ${price:,.2f} a GPU-hour; a checkpoint saves part of it."
    )
    parts = [head, f'<p class="relates">{escape(intro)}</p>', "<h3>Causes per job</h3>"]
    parts.append(
        html_table(
            ["Job", "Cause", "Failures", "GPU-hours", "Cost"],
            [
                [
                    j["job"],
                    j["cause"],
                    str(j["failures"]),
                    f"{j['gpu_hours']:,.1f}",
                    f"${j['usd']:,.0f}",
                ]
                for j in figures["by_job"]
            ],
            {2, 3, 4},
        )
    )
    parts.append("<h3>Causes per node</h3>")
    parts.append(
        html_table(
            ["Node", "Cause", "Failures", "Jobs"],
            [
                [n["node"], n["cause"], str(n["failures"]), ", ".join(n["jobs"])]
                for n in figures["by_node"]
            ],
            {2},
        )
    )
    parts.append("<h3>Recurring signatures</h3>")
    parts.append(
        '<p class="relates">The deciding line with numbers, addresses, paths and ranks masked: '
        "the same signature on one node across jobs points at the node, across nodes at the "
        "code or data the jobs share.</p>"
    )
    parts.append(
        html_table(
            [
                "Signature",
                "Cause",
                "Failures",
                "First seen",
                "Last seen",
                "Jobs",
                "Nodes",
                "Points at",
                "GPU-hours",
                "Cost",
            ],
            [
                [
                    s["signature"],
                    s["cause"],
                    str(s["failures"]),
                    s["first_seen"],
                    s["last_seen"],
                    ", ".join(s["jobs"]),
                    ", ".join(s["nodes"]),
                    SUSPECTS.get(s["suspect"], s["suspect"]),
                    f"{s['gpu_hours']:,.1f}",
                    f"${s['usd']:,.0f}",
                ]
                for s in figures["signatures"]
            ],
            {2, 8, 9},
            when={3, 4},
        )
    )
    return "".join(parts)


def failures_csv(figures: Mapping[str, Any], *, cluster: str, week: str) -> str:
    rows = (
        {**run, "nodes": " ".join(run["nodes"]), "cluster": cluster, "week": week}
        for run in figures.get("runs", [])
    )
    return csv_table(COLUMNS, rows)
