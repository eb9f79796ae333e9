"""The report's section on GPU-hours: by class with their cost, the namespaces and jobs that
held the most GPU-hours without work (with the change from last week), and per-namespace
efficiency, each table with the sentence that says how it relates to the others."""

from html import escape
from typing import Any

from lambdas.weekly_report.charts import bar_chart
from lambdas.weekly_report.html_table import html_table
from lambdas.weekly_report.waste import CLASSES

#: What each GPU-hour class is called, in the report's order (CLASSES).
CLASS_NAMES = dict(
    zip(
        map(str, CLASSES),
        ("not held by any pod", "held and working", "held but not working", "lost or faulted"),
        strict=True,
    )
)


def _change(value: float | None) -> str:
    if value is None:
        return "new"
    return f"{value:+,.1f}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def relation(sentence: str) -> str:
    """The one sentence under a heading that says how its table relates to the others."""
    return f'<p class="relates">{escape(sentence)}</p>'


def _coverage(waste: dict[str, Any]) -> str:
    """What the classes rest on beyond a measured, placed hold: said only where it is not 0."""
    said = [
        (
            "stepping_under_threshold_gpu_hours",
            "drew under the thresholds while their job stepped (held and working; the training "
            "findings price what they lost)",
        ),
        ("unmeasured_gpu_hours", "were held with no power reading (counted as working)"),
        (
            "no_container_insights_gpu_hours",
            "were held on nodes without Container Insights data (holder unknown)",
        ),
    ]
    parts = [f"{waste.get(k) or 0.0:,.1f} GPU-hours {what}" for k, what in said if waste.get(k)]
    unplaced = waste.get("unattributed_gpu_hours") or 0.0
    text = f"Of these, {'; '.join(parts)}." if parts else ""
    if unplaced:
        text += (
            f" {unplaced:,.1f} GPU-hours of pods' holds could not be placed on a GPU the exporter "
            "saw and are in none of these figures."
        )
    return f"<p>{escape(text.strip())}</p>" if text else ""


def _table(headers: list[str], rows: list[list[str]]) -> str:
    """The waste tables: the first column names, the others are figures."""
    return html_table(headers, rows, range(1, len(headers)))


def waste_section(waste: dict[str, Any]) -> str:
    if not waste.get("days"):
        return (
            '<h2 id="waste">GPUs held without work</h2><p>No GPU-hour attribution this week '
            "(the GPU analysis runs with the training analyzer, daily).</p>"
        )
    classes, cost = waste["classes"], waste["cost_usd"]
    parts = [
        '<h2 id="waste">GPUs held without work</h2>',
        relation(
            f"The headline's four classes with their cost at "
            f"${float(waste.get('gpu_hour_usd') or 0.0):,.2f} a GPU-hour; the tables below "
            "split the held-but-not-working hours by job (the jobs that had any) and every "
            "held hour by namespace."
        ),
    ]
    rows = [
        [CLASS_NAMES.get(k, k), f"{classes.get(k, 0.0):,.1f}", f"${cost.get(k, 0.0):,.0f}"]
        for k in CLASS_NAMES
    ]
    rows.append(
        [
            "every GPU-hour",
            f"{sum(classes.get(k, 0.0) for k in CLASS_NAMES):,.1f}",
            f"${sum(cost.get(k, 0.0) for k in CLASS_NAMES):,.0f}",
        ]
    )
    parts.append(_table(["GPU-hours", "hours", "cost"], rows))
    parts.append(_coverage(waste))
    idle = [n for n in waste["namespaces"] if n["not_working_gpu_hours"] > 0]
    if idle:
        parts.append(
            bar_chart(
                "GPU-hours held without work by namespace",
                [n["namespace"] for n in idle[:10]],
                [n["not_working_gpu_hours"] for n in idle[:10]],
            )
        )
    parts.append("<h3>Jobs that held the most GPU-hours without work</h3>")
    parts.append(
        relation(
            "The held-but-not-working hours above by job, the jobs that had any (up to ten): "
            "hours its pods held GPUs under the thresholds and, where its emitter reports, "
            "without a training step; the hours it stepped are held and working, and its "
            "training findings price what they lost."
        )
    )
    if waste["jobs"]:
        parts.append(
            _table(
                [
                    "namespace / job",
                    "held",
                    "stepping",
                    "not working",
                    "held without work (cost)",
                    "change on last week",
                ],
                [
                    [
                        f"{j['namespace']} / {j['job']}"
                        + (" (inferred)" if j.get("inferred") else "")
                        + (" (time-sliced, split evenly)" if j.get("time_sliced") else ""),
                        f"{j['held_gpu_hours']:,.1f}",
                        f"{j.get('stepping_gpu_hours') or 0.0:,.1f}",
                        f"{j['not_working_gpu_hours']:,.1f}",
                        f"${j['held_not_working_usd']:,.0f}",
                        _change(j.get("not_working_change_gpu_hours")),
                    ]
                    for j in waste["jobs"]
                ],
            )
        )
    else:
        parts.append("<p>No job held a GPU without work.</p>")
    parts.append("<h3>Waste and efficiency by namespace</h3>")
    parts.append(
        relation(
            "The same held hours by namespace, the rows of the showback CSV: a namespace's held "
            "hours are its working, not-working and faulted ones, and the not-working hours add "
            "up to their class above. Efficiency is working hours over "
            "held hours, and an hour its job stepped in counts as working however long the step "
            "waited; what those hours lost waiting is the waiting-while-stepping column, so a "
            "namespace's waste is held without work plus waiting while stepping, as its jobs' "
            "in 'Jobs that wasted most'."
        )
    )
    parts.append(
        _table(
            [
                "namespace",
                "held",
                "working",
                "not working",
                "faulted",
                "held without work",
                "waiting while stepping",
                "waste",
                "efficiency",
                "change on last week",
            ],
            [
                [
                    n["namespace"],
                    f"{n['held_gpu_hours']:,.1f}",
                    f"{n['working_gpu_hours']:,.1f}",
                    f"{n['not_working_gpu_hours']:,.1f}",
                    f"{n.get('faulted_gpu_hours') or 0.0:,.1f}",
                    f"${n.get('held_not_working_usd') or 0.0:,.0f}",
                    f"${n.get('waiting_while_stepping_usd') or 0.0:,.0f}",
                    f"${n.get('waste_usd') or 0.0:,.0f}",
                    _pct(n.get("efficiency")),
                    _change(n.get("not_working_change_gpu_hours")),
                ]
                for n in waste["namespaces"]
            ],
        )
    )
    return "".join(parts)
