"""Widget builders and the grid: widgets are laid out in rows on CloudWatch's 24-column grid."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

GRID_COLUMNS: Final = 24
#: Metrics Insights functions whose value is in the metric's own unit (a SUM counts samples).
LEVELS: Final = frozenset({"AVG", "MIN", "MAX"})


@dataclass(frozen=True)
class AlarmLine:
    """An alarm's threshold, drawn as a horizontal annotation on each widget that shows the
    metric the alarm reads, as cdk-monitoring-constructs draws its alarms (the alarm's
    ``toAnnotation()``: its threshold and a label, shaded on the alarming side, "above" for a
    greater-than alarm and "below" for a less-than one: cdklabs/cdk-monitoring-constructs
    lib/common/alarm/IAlarmAnnotationStrategy.ts). Built by the caller from the alarm catalog
    (cdk/alarms/annotations.py): dashboards/ knows no alarm."""

    #: The metric the alarm reads, in its Metrics Insights function over ``period_s``.
    metric: str
    function: str
    period_s: int
    threshold: float
    #: Names the alarm.
    label: str
    #: "above" or "below": the side of the line where the alarm breaches.
    fill: str

    def annotation(self, function: str, period_s: int, interval_s: int) -> dict[str, Any] | None:
        """The line on a widget that reads the metric with ``function`` over ``period_s``, in
        the widget's unit, or None where the widget's values and the threshold do not compare:
        a level (AVG, MIN, MAX) against a level, or a widget's SUM of samples against an
        alarm's AVG over the same period (the share times the samples a period holds, one
        per exporter interval). A horizontal annotation is ``{value, label, color, fill,
        yAxis, visible}`` ("Dashboard Widget Object: Annotation Properties",
        https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/CloudWatch-Dashboard-Body-Structure.html#CloudWatch-Dashboard-Properties-Annotation-Format)."""
        if function in LEVELS and self.function in LEVELS:
            value = self.threshold
        elif function == "SUM" and self.function == "AVG" and period_s == self.period_s:
            samples = period_s / interval_s
            value = self.threshold * samples
            return {
                "value": value,
                "label": f"{self.label} ({value:g} of {samples:g} samples)",
                "fill": self.fill,
            }
        else:
            return None
        return {"value": value, "label": self.label, "fill": self.fill}


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


#: A PromQL query on a dashboard is a chart widget, not a row of a metric widget's ``metrics``
#: array: ``"type": "chart"``, its queries in ``properties.data.queries``, each
#: ``{"id", "type": "cloudwatch-metrics", "language": "PromQL", "query", "label"}``, with the
#: widget's ``title``, ``region`` and ``view`` ("line"). CloudWatch refuses ``data.queries`` on a
#: metric widget ("Should have required property 'metrics'", "The metric widget should have
#: specified a region and a data source or an alarm annotation": PutDashboard's validation
#: errors in aws-solutions-library-samples/guidance-for-claude-code-with-amazon-bedrock issue
#: #759, https://github.com/aws-solutions-library-samples/guidance-for-claude-code-with-amazon-bedrock/issues/759,
#: fixed by typing its PromQL widgets "chart" in pull request #760 as its sibling dashboard,
#: which deployed, types them); "Dashboard Body Structure and Syntax" lists "Properties of a
#: Chart Widget Object" beside the metric widget's (CloudWatch-Dashboard-Body-Structure.md,
#: User Guide, docs.amazonaws.cn). Query Studio's "Add to dashboard" saves such a widget ("The
#: widget continues to run the PromQL query at the dashboard's refresh interval",
#: CloudWatch-PromQL-QueryStudio.html).
CHART_WIDGET: Final = "chart"
PROMQL_QUERY: Final = {"type": "cloudwatch-metrics", "language": "PromQL"}


def promql_widget(
    title: str, query: str, *, id: str = "q", label: str = "", width: int = 8, height: int = 6
) -> Widget:
    """A chart widget of one PromQL query, one line drawn per series the query returns."""
    item: dict[str, Any] = {"id": id, **PROMQL_QUERY, "query": query}
    if label:
        item["label"] = label
    return Widget(
        CHART_WIDGET, width, height, {"title": title, "view": "line", "data": {"queries": [item]}}
    )


def chart_queries(widget: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The queries of a chart widget (none for any other widget)."""
    if widget.get("type") != CHART_WIDGET:
        return []
    queries: list[dict[str, Any]] = widget.get("properties", {}).get("data", {}).get("queries", [])
    return queries


def is_promql(query: Mapping[str, Any]) -> bool:
    """Whether a chart widget's query is PromQL over CloudWatch's metrics."""
    return all(query.get(k) == v for k, v in PROMQL_QUERY.items())


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
    annotations: Sequence[dict[str, Any]] = (),
) -> Widget:
    """A metric widget over explicit rows: metrics, SQL queries and math expressions; with
    ``annotations``, horizontal lines (``AlarmLine.annotation``)."""
    properties: dict[str, Any] = {
        "title": title,
        "view": view,
        "metrics": [list(row) for row in metrics],
        "period": period,
    }
    if stat is not None:
        properties["stat"] = stat
    if annotations:
        properties["annotations"] = {"horizontal": list(annotations)}
    if view == "timeSeries":
        properties["stacked"] = False
        y_axis: dict[str, Any] = {"left": {"min": 0, "showUnits": False}}
        if y_max is not None:
            y_axis["left"]["max"] = y_max
        properties["yAxis"] = y_axis
    else:
        properties["setPeriodToTimeRange"] = view != "singleValue"
    return Widget("metric", width, height, properties)


def promql_chart(
    title: str, queries: Sequence[tuple[str, str]], *, width: int = 8, height: int = 6
) -> Widget:
    """A chart widget of several PromQL queries (``(query, label)``), each drawing its series:
    one per inference server that has the signal (a query stays bounded by its own text)."""
    items = [
        {"id": f"q{i}", **PROMQL_QUERY, "query": query, **({"label": label} if label else {})}
        for i, (query, label) in enumerate(queries)
    ]
    return Widget(
        CHART_WIDGET, width, height, {"title": title, "view": "line", "data": {"queries": items}}
    )
