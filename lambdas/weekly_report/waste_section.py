"""The report's lead section: GPU-hours by class with their cost, the namespaces and jobs that
held the most GPU-hours without work (with the change from last week), and per-namespace
efficiency."""

from html import escape
from typing import Any

from lambdas.weekly_report.charts import bar_chart
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


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{escape(c)}</td>" if i == 0 else f'<td class="num">{escape(c)}</td>'
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def waste_section(waste: dict[str, Any]) -> str:
    if not waste.get("days"):
        return (
            '<h2 id="waste">GPUs held without work</h2><p>No GPU-hour attribution this week '
            "(the GPU analysis runs with the training analyzer, daily).</p>"
        )
    classes, cost = waste["classes"], waste["cost_usd"]
    parts = ['<h2 id="waste">GPUs held without work</h2>']
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
    parts.append(
        f"<p>Of these, {waste.get('unmeasured_gpu_hours', 0.0):,.1f} GPU-hours were held with "
        "no power reading (counted as working) and "
        f"{waste.get('no_container_insights_gpu_hours', 0.0):,.1f} held on nodes without "
        "Container Insights data (holder unknown); "
        f"{waste.get('unattributed_gpu_hours', 0.0):,.1f} GPU-hours of pods' holds could not "
        "be placed on a GPU the exporter saw and are in none of these figures.</p>"
    )
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
    if waste["jobs"]:
        parts.append(
            _table(
                ["namespace / job", "held", "not working", "cost", "change on last week"],
                [
                    [
                        f"{j['namespace']} / {j['job']}"
                        + (" (inferred)" if j.get("inferred") else "")
                        + (" (time-sliced, split evenly)" if j.get("time_sliced") else ""),
                        f"{j['held_gpu_hours']:,.1f}",
                        f"{j['not_working_gpu_hours']:,.1f}",
                        f"${j['waste_usd']:,.0f}",
                        _change(j.get("not_working_change_gpu_hours")),
                    ]
                    for j in waste["jobs"]
                ],
            )
        )
    else:
        parts.append("<p>No job held a GPU without work.</p>")
    parts.append("<h3>Efficiency by namespace (working hours over held hours)</h3>")
    parts.append(
        _table(
            [
                "namespace",
                "held",
                "working",
                "not working",
                "cost of not working",
                "efficiency",
                "change on last week",
            ],
            [
                [
                    n["namespace"],
                    f"{n['held_gpu_hours']:,.1f}",
                    f"{n['working_gpu_hours']:,.1f}",
                    f"{n['not_working_gpu_hours']:,.1f}",
                    f"${n['waste_usd']:,.0f}",
                    _pct(n.get("efficiency")),
                    _change(n.get("not_working_change_gpu_hours")),
                ]
                for n in waste["namespaces"]
            ],
        )
    )
    return "".join(parts)
