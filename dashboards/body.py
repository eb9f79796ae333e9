"""A dashboard's body and its typed variables: what every dashboard module (bodies, serving,
cluster) lays its rows out with."""

from collections.abc import Sequence
from typing import Any

from dashboards.widgets import CHART_WIDGET, Widget, layout


def body(
    rows: Sequence[Sequence[Widget]], region: str, variables: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    widgets = layout(rows)
    for widget in widgets:
        if widget["type"] in {"metric", "alarm", CHART_WIDGET}:
            widget["properties"]["region"] = region
    body: dict[str, Any] = {"start": "-PT24H", "periodOverride": "inherit", "widgets": widgets}
    if variables:
        body["variables"] = variables
    return body


def typed_input(variable_id: str, label: str, pattern: str) -> dict[str, Any]:
    """A text box rewriting ``pattern`` wherever the body has it: where the exporter or the
    emitter sends OTLP there is no metric for a variable's search to list the nodes or jobs
    from (a search reads CloudWatch metrics, not the OTLP store), so the node or job is typed,
    or set by a link (console_links: ``node_dashboard_url``, the job's ``var-job``).
    "INPUT: Freeform text input box" (aws-cdk-lib aws_cloudwatch VariableInputType,
    https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.aws_cloudwatch.VariableInputType.html)."""
    return {
        "type": "pattern",
        "pattern": pattern,
        "inputType": "input",
        "id": variable_id,
        "label": label,
        "visible": True,
    }
