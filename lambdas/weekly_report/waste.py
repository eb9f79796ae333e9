"""The week's GPU-hours by class and who held GPUs without work: pure, from the GPU analyzer's
daily tables (``gpu-hours.json``), with the change from last week's report, and the
per-namespace showback table as CSV."""

from collections.abc import Iterable, Mapping
from typing import Any

from lambdas.training_analyzer.gpu_hours.attribution import HourClass
from lambdas.weekly_report.spreadsheet import csv_table

#: The classes every GPU-hour falls in, in the order the report shows them.
CLASSES = (HourClass.NOT_HELD, HourClass.WORKING, HourClass.NOT_WORKING, HourClass.FAULTED)
NUMBERS = (
    "held_gpu_hours",
    "working_gpu_hours",
    "not_working_gpu_hours",
    "faulted_gpu_hours",
    #: The cost of the not-working hours (the day tables' ``waste_usd``, the metric of that
    #: name): one of the two parts of a namespace's waste, never called waste alone.
    "held_not_working_usd",
    #: Held GPU-hours in which the job's emitter reported steps: held and working, priced (if
    #: at all) by its training findings, never as held without work.
    "stepping_gpu_hours",
)
#: How far the daily tables' GPU-hours rest on less than a measured, placed hold: held with no
#: power reading, held by a pod Container Insights did not see, holds placed on no GPU-hour.
COVERAGE = (
    "unmeasured_gpu_hours",
    "stepping_under_threshold_gpu_hours",
    "no_container_insights_gpu_hours",
    "unattributed_gpu_hours",
)
#: A namespace's waste is its two parts, each priced once (lambdas/weekly_report/figures.py
#: adds the second from its jobs' training findings): held without work, and the share of its
#: stepping hours its jobs' training findings say was lost waiting; ``waste_usd`` is their sum.
WASTE_PARTS = ("held_not_working_usd", "waiting_while_stepping_usd")
CSV_COLUMNS = (
    "cluster",
    "week",
    "namespace",
    *NUMBERS,
    "waiting_while_stepping_usd",
    "waste_usd",
    "held_usd",
    "efficiency",
    "not_working_change_gpu_hours",
)


def _sum_rows(rows: Iterable[Mapping[str, Any]], key: tuple[str, ...]) -> list[dict[str, Any]]:
    totals: dict[tuple[str, ...], dict[str, Any]] = {}
    for row in rows:
        name = tuple(str(row.get(k, "")) for k in key)
        total = totals.setdefault(
            name, {**dict(zip(key, name, strict=True)), **dict.fromkeys(NUMBERS, 0.0)}
        )
        for field in NUMBERS:
            # The day tables call the not-working hours' cost ``waste_usd``.
            source = "waste_usd" if field == "held_not_working_usd" else field
            total[field] += float(row.get(source) or 0.0)
        for flag in ("inferred", "time_sliced"):
            total[flag] = bool(total.get(flag) or row.get(flag))
        if row.get("kind"):
            # The workload's kind (a Deployment's idle replicas are named as the Deployment).
            total.setdefault("kind", str(row["kind"]))
    for total in totals.values():
        held = total["held_gpu_hours"]
        total["efficiency"] = round(total["working_gpu_hours"] / held, 4) if held else None
        for field in NUMBERS:
            total[field] = round(total[field], 2)
    return list(totals.values())


def _change(
    rows: list[dict[str, Any]], before: Iterable[Mapping[str, Any]], key: tuple[str, ...]
) -> None:
    last = {tuple(str(r.get(k, "")) for k in key): r for r in before}
    for row in rows:
        previous = last.get(tuple(str(row[k]) for k in key))
        row["not_working_change_gpu_hours"] = (
            None
            if previous is None
            else round(
                row["not_working_gpu_hours"] - float(previous.get("not_working_gpu_hours") or 0), 2
            )
        )


def _classes(table: Mapping[str, Any]) -> dict[str, float]:
    """A table's GPU-hours of every class (0 for a class it lacks)."""
    found = table.get("classes") or {}
    return {str(c): float(found.get(str(c)) or 0.0) for c in CLASSES}


def _node_sums(days: Iterable[Mapping[str, Any]], name: str) -> dict[str, float]:
    """A per-node figure of the day tables (``held_by_node``), summed over the days."""
    sums: dict[str, float] = {}
    for table in days:
        for node, hours in (table.get(name) or {}).items():
            sums[str(node)] = sums.get(str(node), 0.0) + float(hours or 0.0)
    return {node: round(hours, 2) for node, hours in sorted(sums.items())}


def week_capacity(days: Iterable[Iterable[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """The days' ``capacity`` rows summed per node (its group: the last day's)."""
    nodes: dict[str, dict[str, Any]] = {}
    for rows in days:
        for row in rows:
            node = str(row.get("node", ""))
            total = nodes.setdefault(node, {"node": node, "gpu_hours": 0.0})
            total["gpu_hours"] += float(row.get("gpu_hours") or 0.0)
            total["group"] = str(row.get("group") or total.get("group") or "")
    return [{**row, "gpu_hours": round(row["gpu_hours"], 2)} for _, row in sorted(nodes.items())]


def week_waste(
    tables: Mapping[str, Mapping[str, Any]],
    *,
    gpu_hour_usd: float,
    previous: Mapping[str, Any] | None = None,
    top: int = 10,
) -> dict[str, Any]:
    """The week from its daily tables (by ISO day). ``previous`` is last week's ``waste``
    document. ``classes`` is the one source of the report's GPU-hour figures: its headline
    and its days are these sums."""
    days = list(tables.values())
    classes: dict[str, float] = dict.fromkeys(map(str, CLASSES), 0.0)
    by_day = []
    for day, table in sorted(tables.items()):
        hours = _classes(table)
        for name, value in hours.items():
            classes[name] += value
        by_day.append({"day": day, **{k: round(v, 2) for k, v in hours.items()}})
    idle_nodes = _node_sums(days, "not_held_by_node")
    by_node = {name: _node_sums(days, name) for name in ("held_by_node", "seen_by_node")}
    namespaces = _sum_rows((r for t in days for r in t.get("namespaces", [])), ("namespace",))
    jobs = _sum_rows((r for t in days for r in t.get("jobs", [])), ("namespace", "job"))
    before = previous or {}
    _change(namespaces, before.get("namespaces", []), ("namespace",))
    _change(jobs, before.get("all_jobs", []), ("namespace", "job"))
    namespaces.sort(key=lambda r: (-r["not_working_gpu_hours"], r["namespace"]))
    jobs.sort(key=lambda r: (-r["not_working_gpu_hours"], r["namespace"], r["job"]))
    return {
        "days": len(days),
        "gpu_hour_usd": gpu_hour_usd,
        "classes": {k: round(v, 2) for k, v in classes.items()},
        "cost_usd": {k: round(v * gpu_hour_usd, 2) for k, v in classes.items()},
        "gpu_hours": round(sum(classes.values()), 2),
        **{k: round(sum(float(t.get(k) or 0.0) for t in days), 2) for k in COVERAGE},
        "by_day": by_day,
        # The GPU-hours no pod held, by node, the most first: the idle capacity's evidence.
        "not_held_by_node": {
            n: round(h, 2) for n, h in sorted(idle_nodes.items(), key=lambda nh: (-nh[1], nh[0]))
        },
        **by_node,
        # Each GPU node's paid GPU-hours (the funnel's, goodput/capacity.py), and where the
        # days' came from ("container_insights", or "exporter" where it stood in).
        "capacity": week_capacity(t.get("capacity") or [] for t in days),
        "capacity_sources": sorted({str(t.get("capacity_source", "")) for t in days} - {""}),
        "namespaces": namespaces,
        "jobs": [j for j in jobs if j["not_working_gpu_hours"] > 0][:top],
        # The full job list, for next week's change.
        "all_jobs": jobs,
    }


def waste_csv(waste: Mapping[str, Any], *, cluster: str, week: str) -> str:
    """The per-namespace table for showback: one row per namespace, with its cluster and week
    so weeks and clusters can be stacked in one sheet, and the cost of every held GPU-hour
    (what a team is charged back) beside its waste: ``held_not_working_usd`` plus
    ``waiting_while_stepping_usd`` is ``waste_usd``."""
    price = float(waste.get("gpu_hour_usd") or 0.0)
    rows = (
        {
            **row,
            "cluster": cluster,
            "week": week,
            "held_usd": round(float(row.get("held_gpu_hours") or 0.0) * price, 2),
        }
        for row in waste.get("namespaces", [])
    )
    return csv_table(CSV_COLUMNS, rows)
