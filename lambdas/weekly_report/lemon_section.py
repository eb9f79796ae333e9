"""The report's lemon nodes: over the 30 days that end with the report's week, each node's
GPUs' share of the fleet's failed runs, fail-slows and XID errors over their share of the
fleet's GPU-hours (lambdas/training_analyzer/goodput/lemon.py), the worst listed with what to
do. Pure: from the days' GPU-hour tables (each node's GPU-hours its GPUs were seen:
``seen_by_node``), the failed runs read from the days' failure files (each run counts once on
each node its deciding lines or its pods came from: failures_section.py ``week_runs``) and
the XIDs per node the exporter's series say (aws.py ``xid_counts``) and the fail-slow pages
that named each node their culprit (the notifier's record: aws.py ``fail_slow_counts``)."""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from html import escape
from typing import Any

from lambdas.training_analyzer.goodput.lemon import (
    AUTO_REPAIR_CONDITION,
    LEMON_SCORE,
    MIN_EVENTS,
    WINDOW_DAYS,
    NodeRecord,
    lemon_scores,
)
from lambdas.weekly_report.html_table import html_table
from lambdas.weekly_report.waste_section import relation


def _seen(table: Mapping[str, Any]) -> Mapping[Any, Any]:
    """A day's GPU-hours by node: those its GPUs were seen, else held."""
    return table.get("seen_by_node") or table.get("held_by_node") or {}


def seen_nodes(tables: Iterable[Mapping[str, Any]]) -> list[str]:
    """The nodes the days' GPU-hour tables saw, each once, sorted."""
    return sorted({str(node) for table in tables for node in _seen(table)})


def node_records(
    tables: Iterable[Mapping[str, Any]],
    failed_runs: Iterable[Mapping[str, Any]],
    xids: Iterable[tuple[str, str, float]],
    fail_slows: Mapping[str, int] | None = None,
) -> list[NodeRecord]:
    """Each node's record over the window: its GPUs' GPU-hours from the days' tables, the
    failed runs on it, its XIDs, the fail-slow pages that named it. A node with events and no
    GPU-hours is kept (the score refuses it, by name)."""
    hours: dict[str, float] = defaultdict(float)
    for table in tables:
        for node, value in _seen(table).items():
            hours[str(node)] += float(value)
    failures: dict[str, int] = defaultdict(int)
    for run in failed_runs:
        for node in set(run.get("nodes") or ()):
            failures[str(node)] += 1
    counted: dict[str, float] = defaultdict(float)
    for node, _, count in xids:
        counted[node] += count
    slows = fail_slows or {}
    nodes = sorted(set(hours) | set(failures) | set(counted) | set(slows))
    return [
        NodeRecord(
            node=node,
            gpu_hours=round(hours.get(node, 0.0), 4),
            failures=failures.get(node, 0),
            fail_slows=slows.get(node, 0),
            xids=round(counted.get(node, 0.0)),
        )
        for node in nodes
    ]


def lemon_figures(records: Iterable[NodeRecord]) -> dict[str, Any]:
    """The report's lemon nodes (report.json ``lemons``): the worst, each with its numbers and
    what to do, and the records that could not be scored."""
    listed = list(records)
    scored = lemon_scores(listed)
    return {
        "window_days": WINDOW_DAYS,
        "nodes_scored": len(listed) - len(scored.refused),
        "lemons": [asdict(lemon) for lemon in scored.lemons],
        "refused": list(scored.refused),
    }


def lemon_section(doc: Mapping[str, Any]) -> str:
    """The training section's lemon nodes; empty where none is a lemon. The nodes that could
    not be scored (events on a node whose GPUs no table saw) are counted and named."""
    lemons = doc.get("lemons") if doc else None
    if not lemons:
        return ""
    refused = list(doc.get("refused") or ())
    unscored = (
        f"<p>{len(refused)} nodes with events could not be scored: "
        f"{escape('; '.join(refused))}.</p>"
        if refused
        else ""
    )
    return "".join(
        [
            '<h3 id="lemon-nodes">Lemon nodes</h3>',
            relation(
                f"Over the last {doc['window_days']} days, each node's GPUs' share of the "
                "fleet's failed runs, fail-slows and XID errors over their share of the "
                "fleet's GPU-hours "
                f"(1 is the fleet's mean); a node at {LEMON_SCORE:g} or more with at least "
                f"{MIN_EVENTS} events is listed, worst first. EKS node auto repair acts only on "
                f"a node whose {AUTO_REPAIR_CONDITION} condition the node monitoring agent sets."
            ),
            html_table(
                ["Node", "Score", "Failed runs", "Fail-slows", "XIDs", "GPU-hours", "What to do"],
                [
                    [
                        lemon["node"],
                        f"{lemon['score']:.2f}",
                        lemon["failures"],
                        lemon.get("fail_slows", 0),
                        lemon["xids"],
                        f"{lemon['gpu_hours']:,.1f}",
                        lemon["action"],
                    ]
                    for lemon in lemons
                ],
                {1, 2, 3, 4, 5},
            ),
            unscored,
        ]
    )
