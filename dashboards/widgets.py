"""Widget builders and the grid: widgets are laid out in rows on CloudWatch's 24-column grid."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

GRID_COLUMNS: Final = 24


@dataclass(frozen=True)
class Widget:
    type: str
    width: int
    height: int
    properties: dict[str, Any]


def search(
    namespace: str, dimensions: Sequence[str], metric: str, where: str, stat: str, period: int = 300
) -> str:
    """A SEARCH expression: it finds the series that exist now, so new nodes and jobs appear
    on the graph without a redeploy."""
    schema = ",".join((namespace, *dimensions))
    return f"SEARCH('{{{schema}}} MetricName=\"{metric}\" {where}', '{stat}', {period})"


def graph(
    title: str,
    expressions: Sequence[tuple[str, str]],
    *,
    width: int = 12,
    height: int = 6,
    unit_label: str = "",
    y_max: float | None = None,
) -> Widget:
    metrics: list[list[Any]] = [
        [{"expression": expression, "label": label, "id": f"e{i}"}]
        for i, (expression, label) in enumerate(expressions)
    ]
    y_axis: dict[str, Any] = {"left": {"min": 0, "label": unit_label, "showUnits": False}}
    if y_max is not None:
        y_axis["left"]["max"] = y_max
    return Widget(
        "metric",
        width,
        height,
        {
            "title": title,
            "view": "timeSeries",
            "stacked": False,
            "metrics": metrics,
            "yAxis": y_axis,
            "period": 300,
        },
    )


def text(markdown: str, *, width: int = 24, height: int = 2) -> Widget:
    return Widget("text", width, height, {"markdown": markdown})


def alarms(title: str, alarm_arns: Sequence[str], *, width: int = 24, height: int = 4) -> Widget:
    return Widget("alarm", width, height, {"title": title, "alarms": list(alarm_arns)})


def layout(rows: Sequence[Sequence[Widget]]) -> list[dict[str, Any]]:
    """Place rows of widgets top to bottom, left to right; a row wider than the grid is an
    error, not a wrap that would overlap."""
    placed = []
    y = 0
    for row in rows:
        x = 0
        for widget in row:
            if x + widget.width > GRID_COLUMNS:
                raise ValueError(f"row is wider than {GRID_COLUMNS} columns at {widget.properties}")
            placed.append(
                {
                    "type": widget.type,
                    "x": x,
                    "y": y,
                    "width": widget.width,
                    "height": widget.height,
                    "properties": widget.properties,
                }
            )
            x += widget.width
        y += max((w.height for w in row), default=0)
    return placed


def metric_row(
    namespace: str,
    metric: str,
    dimensions: Sequence[tuple[str, str]],
    *,
    stat: str,
    id: str,
    visible: bool = False,
) -> list[Any]:
    """One metric in a widget's ``metrics`` array: namespace, name, dimension pairs, then the
    rendering object (a hidden input to an expression unless ``visible``)."""
    row: list[Any] = [namespace, metric]
    for name, value in dimensions:
        row += [name, value]
    row.append({"stat": stat, "id": id, "visible": visible})
    return row


def expression_row(
    expression: str, *, id: str, label: str = "", period: int | None = None, visible: bool = True
) -> list[Any]:
    item: dict[str, Any] = {"expression": expression, "id": id, "label": label}
    if not visible:
        item["visible"] = False
    if period is not None:
        item["period"] = period
    return [item]


def metric_widget(
    title: str,
    metrics: Sequence[list[Any]],
    *,
    view: str = "timeSeries",
    period: int = 300,
    width: int = 12,
    height: int = 6,
    y_max: float | None = None,
    stat: str | None = None,
) -> Widget:
    """A metric widget over explicit rows: metrics, SQL queries and math expressions."""
    properties: dict[str, Any] = {
        "title": title,
        "view": view,
        "metrics": [list(row) for row in metrics],
        "period": period,
    }
    if stat is not None:
        properties["stat"] = stat
    if view == "timeSeries":
        properties["stacked"] = False
        y_axis: dict[str, Any] = {"left": {"min": 0, "showUnits": False}}
        if y_max is not None:
            y_axis["left"]["max"] = y_max
        properties["yAxis"] = y_axis
    else:
        properties["setPeriodToTimeRange"] = view != "singleValue"
    return Widget("metric", width, height, properties)
