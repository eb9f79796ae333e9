"""Every dashboard body against AWS's documented Dashboard Body Structure (the schema in
tests/data/cloudwatch-dashboard-body.schema.json, sources in tests/data/README.md)."""

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from dashboards.bodies import all_dashboards

SCHEMA = json.loads(
    (Path(__file__).parents[2] / "data" / "cloudwatch-dashboard-body.schema.json").read_text()
)
VALIDATOR = jsonschema.Draft7Validator(SCHEMA)
DASHBOARDS = all_dashboards(
    "train",
    ["train-data"],
    ["arn:aws:cloudwatch:us-east-1:123456789012:alarm:gpu-insights-train-x"],
    "us-east-1",
)


def _errors(body: dict[str, Any]) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in VALIDATOR.iter_errors(body)]


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_every_body_has_aws_documented_structure(name: str) -> None:
    assert _errors(DASHBOARDS[name]) == []


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
    for broken in (too_many, bad_id, no_pattern, wide, bad_view):
        assert _errors(broken), broken
