"""The report's GPU memory right-sizing: per job the training analyzer judged, its peak and
P95 of GPU memory used against its GPUs' capacity, the verdict, the MIG profile it fits and
what that saves a month; from the week's latest ``training_gpu_memory_*`` finding per job.
Pure: rows, their HTML section and their CSV."""

from collections.abc import Iterable, Mapping
from html import escape
from typing import Any, Final

from lambdas.weekly_report.html_table import html_table
from lambdas.weekly_report.spreadsheet import csv_table

#: The findings this section is made of (lambdas/shared/findings.py Kind).
MEMORY_KINDS: Final = frozenset(
    {"training_gpu_memory_near_capacity", "training_gpu_memory_oversized"}
)
#: The section's CSV, beside report.csv under the week's prefix.
MEMORY_CSV: Final = "gpu-memory.csv"
COLUMNS: Final = (
    "cluster",
    "week",
    "namespace",
    "job",
    "gpus",
    "peak_gib",
    "p95_gib",
    "capacity_gib",
    "verdict",
    "gpu_model",
    "profile",
    "monthly_saving_usd",
)


def memory_rows(findings: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per job (the findings are the week's latest per kind and resource; a job
    judged both ways in the week keeps its latest verdict): jobs near capacity first, then the
    largest saving."""
    latest: dict[str, Mapping[str, Any]] = {}
    for f in sorted(findings, key=lambda f: str(f.get("detected_at", ""))):
        if str(f.get("kind")) in MEMORY_KINDS:
            latest[str(f.get("resource", ""))] = f
    rows = []
    for resource, f in latest.items():
        evidence = f.get("evidence") or {}
        rows.append(
            {
                "namespace": evidence.get("namespace"),
                "job": resource.removeprefix("job/"),
                "gpus": evidence.get("gpus"),
                "peak_gib": evidence.get("peak_gib"),
                "p95_gib": evidence.get("p95_gib"),
                "capacity_gib": evidence.get("capacity_gib"),
                "verdict": evidence.get("verdict"),
                "gpu_model": evidence.get("gpu_model"),
                "profile": evidence.get("profile"),
                "monthly_saving_usd": f.get("estimated_monthly_waste_usd"),
                "near_capacity_percent": evidence.get("near_capacity_percent"),
            }
        )
    return sorted(
        rows,
        key=lambda r: (
            r["verdict"] != "near capacity",
            -(r["monthly_saving_usd"] or 0.0),
            str(r["job"]),
        ),
    )


def _num(value: Any, spec: str = ",.1f") -> str:
    return "" if value is None else format(value, spec)


def memory_section(rows: list[dict[str, Any]]) -> str:
    head = '<h2 id="gpu-memory">GPU memory right-sizing</h2>'
    if not rows:
        return (
            f"{head}<p>No job's GPU memory was near its GPUs' capacity or small enough for a "
            "MIG profile this week.</p>"
        )
    saving = sum(r["monthly_saving_usd"] or 0.0 for r in rows)
    near = [r for r in rows if r["verdict"] == "near capacity"]
    line = max((r["near_capacity_percent"] or 0.0 for r in near), default=None)
    said = f"{line:g}% or more of " if line else ""
    intro = (
        f"{len(near)} job(s) used {said}their GPUs' memory in their P95 hour (at risk of "
        "running out); the others would fit the MIG profile named, freeing the rest of each "
        f"GPU: ${saving:,.0f} a month at the deployment's GPU-hour price. Peaks and P95 are "
        "of each GPU's hourly peak (GiB) over the analyzer's lookback."
    )
    headers = ["Namespace", "Job", "GPUs", "Peak GiB", "P95 GiB", "Capacity GiB", "Verdict",
               "MIG profile", "Saving a month"]  # fmt: skip
    body = [
        [
            r["namespace"] or "",
            r["job"],
            _num(r["gpus"], "d"),
            _num(r["peak_gib"]),
            _num(r["p95_gib"]),
            _num(r["capacity_gib"]),
            r["verdict"] or "",
            r["profile"] or "",
            _usd(r["monthly_saving_usd"]),
        ]
        for r in rows
    ]
    return f'{head}<p class="relates">{escape(intro)}</p>' + html_table(
        headers, body, {2, 3, 4, 5, 8}
    )


def _usd(value: float | None) -> str:
    return "" if value is None else f"${value:,.0f}"


def memory_csv(rows: Iterable[Mapping[str, Any]], *, cluster: str, week: str) -> str:
    return csv_table(COLUMNS, ({**row, "cluster": cluster, "week": week} for row in rows))
