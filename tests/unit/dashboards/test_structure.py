"""Every dashboard body against AWS's documented Dashboard Body Structure (the schema in
tests/data/cloudwatch-dashboard-body.schema.json, sources in tests/data/README.md)."""

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from cdk.alarms.annotations import alarm_lines
from cdk.alarms.catalog import AlarmSettings, gpu_alarms
from cli.backtest.dashboards import (
    WidgetEvaluationError,
    WidgetRuleError,
    body_rule_errors,
    evaluate_body,
)
from dashboards.bodies import all_dashboards
from dashboards.widgets import layout, promql_widget
from lambdas.shared.container_insights_mode import ContainerInsightsMode

SCHEMA = json.loads(
    (Path(__file__).parents[2] / "data" / "cloudwatch-dashboard-body.schema.json").read_text()
)
VALIDATOR = jsonschema.Draft7Validator(SCHEMA)
DASHBOARDS = all_dashboards(
    "train",
    ["train-data"],
    ["arn:aws:cloudwatch:us-east-1:123456789012:alarm:gpu-insights-train-x"],
    "us-east-1",
    alarm_lines=alarm_lines(gpu_alarms(AlarmSettings(cluster_name="train", shards=2))),
)
OTEL = all_dashboards(
    "train",
    ["train-data"],
    ["arn:aws:cloudwatch:us-east-1:123456789012:alarm:gpu-insights-train-x"],
    "us-east-1",
    alarm_lines=alarm_lines(gpu_alarms(AlarmSettings(cluster_name="train", shards=2))),
    mode=ContainerInsightsMode.OTEL,
)
BOTH = {
    f"{mode} {name}": body
    for mode, bodies in (("classic", DASHBOARDS), ("otel", OTEL))
    for name, body in bodies.items()
}


def _errors(body: dict[str, Any]) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in VALIDATOR.iter_errors(body)]


@pytest.mark.parametrize("name", sorted(BOTH))
def test_every_body_has_aws_documented_structure(name: str) -> None:
    assert _errors(BOTH[name]) == []


def test_the_schema_refuses_what_cloudwatch_refuses() -> None:
    """The schema can fail: each mutation breaks one documented rule."""
    body = DASHBOARDS["gpu-insights-train-gpu-fleet"]
    too_many = {"widgets": [body["widgets"][0]] * 501}
    bad_id = copy.deepcopy(body)
    bad_id["widgets"][1]["properties"]["metrics"][0][-1]["id"] = "N"
    no_pattern = copy.deepcopy(DASHBOARDS["gpu-insights-train-gpu-node"])
    del no_pattern["variables"][0]["pattern"]
    wide = copy.deepcopy(body)
    wide["widgets"][0]["width"] = 25
    bad_view = copy.deepcopy(body)
    bad_view["widgets"][1]["properties"]["view"] = "number"
    annotated = next(
        i for i, w in enumerate(body["widgets"]) if "annotations" in w.get("properties", {})
    )
    no_value = copy.deepcopy(body)
    del no_value["widgets"][annotated]["properties"]["annotations"]["horizontal"][0]["value"]
    bad_fill = copy.deepcopy(body)
    bad_fill["widgets"][annotated]["properties"]["annotations"]["horizontal"][0]["fill"] = "up"
    with_alarm = copy.deepcopy(body)
    with_alarm["widgets"][annotated]["properties"]["annotations"]["alarms"] = ["arn:a"]
    for broken in (too_many, bad_id, no_pattern, wide, bad_view, no_value, bad_fill, with_alarm):
        assert _errors(broken), broken


def test_the_schema_refuses_a_promql_query_where_cloudwatch_refuses_it() -> None:
    """PromQL's ``data.queries`` on a metric widget is what CloudWatch refused ("Should have
    required property 'metrics'": aws-solutions-library-samples/
    guidance-for-claude-code-with-amazon-bedrock issue #759); on a chart widget, a query
    without its language, or with a metric row's key, is refused too."""
    body = OTEL["gpu-insights-train-gpu-fleet"]
    chart = next(i for i, w in enumerate(body["widgets"]) if w["type"] == "chart")
    as_metric = copy.deepcopy(body)
    as_metric["widgets"][chart]["type"] = "metric"
    no_language = copy.deepcopy(body)
    del no_language["widgets"][chart]["properties"]["data"]["queries"][0]["language"]
    as_row = copy.deepcopy(body)
    query = as_row["widgets"][chart]["properties"]["data"]["queries"][0]
    query["expression"] = query.pop("query")
    for broken in (as_metric, no_language, as_row):
        assert _errors(broken), broken


@pytest.mark.parametrize("name", sorted(BOTH))
def test_every_widget_keeps_cloudwatchs_metrics_insights_rules(name: str) -> None:
    """One Metrics Insights query per metrics array, LIMIT at most 500, at most 500 rows, two
    weeks of range (the rules are quoted in cli/backtest/dashboards.py); a PromQL query in a
    chart widget, selecting by metric name, bounded by its text at 500 series or fewer,
    reaching back 24 hours at most (cli/backtest/promql_widgets.py)."""
    assert body_rule_errors(BOTH[name]) == []


def _sql_row(limit: int = 10, metric: str = "VolumeReadOps") -> list[Any]:
    return [
        {
            "expression": f'SELECT MAX({metric}) FROM SCHEMA("AWS/EBS", VolumeId) '
            f"GROUP BY VolumeId ORDER BY MAX() DESC LIMIT {limit}",
            "id": f"q{limit}{len(metric)}",
        }
    ]


def _with_rows(rows: list[list[Any]], start: str = "-PT24H") -> dict[str, Any]:
    widget = {"type": "metric", "properties": {"title": "w", "metrics": rows}}
    return {"start": start, "widgets": [widget]}


def test_the_rules_refuse_what_cloudwatch_refuses() -> None:
    """Each mutation breaks one documented rule; the unbroken one passes."""
    assert body_rule_errors(_with_rows([_sql_row()])) == []
    assert body_rule_errors(_with_rows([_sql_row(500)], start="-P14D")) == []
    two = _with_rows([_sql_row(), _sql_row(metric="VolumeWriteOps")])
    assert body_rule_errors(two) == [
        "'w': 2 Metrics Insights queries in one metrics array, more than 1"
    ]
    assert "LIMIT 501 above 500" in body_rule_errors(_with_rows([_sql_row(501)]))[0]
    mixed = [[{"expression": "2 * " + _sql_row()[0]["expression"], "id": "e"}]]
    assert "inside a math expression" in body_rule_errors(_with_rows(mixed))[0]
    many = [["AWS/EBS", "VolumeReadOps", "VolumeId", f"vol-{i}"] for i in range(501)]
    assert "501 rows" in body_rule_errors(_with_rows(many))[0]
    assert "two weeks" in body_rule_errors(_with_rows([_sql_row()], start="-P15D"))[0]
    assert "two weeks" in body_rule_errors(_with_rows([_sql_row()], start="-P3W"))[0]


def test_evaluating_a_broken_widget_is_an_error_not_a_picture() -> None:
    broken = _with_rows([_sql_row(), _sql_row(metric="VolumeWriteOps")])
    with pytest.raises(WidgetRuleError, match="2 Metrics Insights queries"):
        evaluate_body(broken, [])


BOUNDED = (
    '(max by (gpu) (max_over_time({__name__="DCGM_FI_DEV_GPU_TEMP"}[5m]))) and on (gpu) '
    'topk(10, max by (gpu) (max_over_time({__name__="DCGM_FI_DEV_GPU_TEMP"}[1h] @ end())))'
)


def _promql(query: str) -> dict[str, Any]:
    return {"start": "-PT24H", "widgets": layout([[promql_widget("w", query)]])}


def test_the_rules_refuse_a_promql_widget_that_breaks_one() -> None:
    """Each mutation breaks one rule; the unbroken one passes."""
    assert body_rule_errors(_promql(BOUNDED)) == []
    two_spellings = BOUNDED.replace(
        '__name__="DCGM_FI_DEV_GPU_TEMP"', '__name__=~"(ray_)?DCGM[:_]FI_DEV_GPU_TEMP"'
    )
    assert body_rule_errors(_promql(two_spellings)) == []
    any_name = BOUNDED.replace('__name__="DCGM_FI_DEV_GPU_TEMP"', '__name__=~"DCGM.+"')
    assert body_rule_errors(_promql(any_name)) == [
        f"'w': a PromQL selector without a metric name in {any_name!r}"
    ]
    by_labels = BOUNDED.replace('__name__="DCGM_FI_DEV_GPU_TEMP"', 'gpu="0"')
    assert body_rule_errors(_promql(by_labels)) == [
        f"'w': a PromQL selector without a metric name in {by_labels!r}"
    ]
    every_step = BOUNDED.replace(" @ end()", "")  # picks ten at every step: more over a range
    assert "does not bound" in body_rule_errors(_promql(every_step))[0]
    grouped = 'max by (gpu) ({__name__="DCGM_FI_DEV_GPU_TEMP"})'  # one series per GPU
    assert "does not bound" in body_rule_errors(_promql(grouped))[0]
    other_keys = BOUNDED.replace("and on (gpu)", 'and on ("@resource.k8s.node.name")')
    assert "does not bound" in body_rule_errors(_promql(other_keys))[0]
    wide = BOUNDED.replace("topk(10,", "topk(501,")
    assert body_rule_errors(_promql(wide)) == [
        "'w': up to 501 series, above the 500 of one response"
    ]
    far = BOUNDED.replace("[1h] @ end()", "[2d] @ end()")
    assert body_rule_errors(_promql(far)) == ["'w': a range of 48 h beyond the 24-hour scan window"]
    as_sql = _promql(BOUNDED)
    as_sql["widgets"][0]["properties"]["data"]["queries"][0]["language"] = "SQL"
    assert "a chart query that is not PromQL" in body_rule_errors(as_sql)[0]
    empty = _promql(BOUNDED)
    empty["widgets"][0]["properties"]["data"]["queries"] = []
    assert body_rule_errors(empty) == ["'w': a chart widget without a query"]


def test_evaluating_a_promql_widget_needs_an_engine() -> None:
    with pytest.raises(WidgetEvaluationError, match="no PromQL engine"):
        evaluate_body(_promql(BOUNDED), [])
