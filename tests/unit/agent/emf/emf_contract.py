"""Every EMF line held to the specification: its JSON schema (tests/data/cloudwatch-emf.schema.json)
and the limits its prose states that the schema does not encode.

Source: CloudWatch User Guide, "Specification: Embedded metric format"
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html,
awsdocs/amazon-cloudwatch-user-guide doc_source/CloudWatch_Embedded_Metric_Format_Specification.md):
- "Metrics ... MUST NOT contain more than 100 MetricDefinition objects";
- the values of a DimensionSet "MUST also be members on the root-node"; "A dimension target
  MUST have a string value";
- "A metric target MUST be a numeric value or an array of numeric values. Numeric array metric
  targets MUST NOT have more than 100 members";
- documents "are limited to a maximum size of 256 KB" (a CloudWatch Logs event).

Lines sent to the CloudWatch agent's listener "must contain a LogGroupName key that tells the
agent which log group to use" (the User Guide's "Using the CloudWatch agent to send embedded
metric format logs", doc_source/CloudWatch_Embedded_Metric_Format_Generation_CloudWatch_Agent.md).
"""

import json
from functools import cache
from typing import Any

import jsonschema

from tests.unit.reference_data import emf_schema

SPEC_MAX_METRICS_PER_DIRECTIVE = 100
SPEC_MAX_VALUES_PER_METRIC = 100
SPEC_MAX_EVENT_BYTES = 256 * 1024


@cache
def _validator() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(emf_schema())


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def emf_problems(line: str) -> list[str]:
    """What makes one line invalid EMF; empty when it is valid."""
    if len(line.encode()) > SPEC_MAX_EVENT_BYTES:
        return [f"{len(line.encode())} bytes; a log event holds {SPEC_MAX_EVENT_BYTES}"]
    document = json.loads(line)
    problems = [f"schema: {error.message}" for error in _validator().iter_errors(document)]
    if problems:
        return problems
    for directive in document["_aws"]["CloudWatchMetrics"]:
        names = [metric["Name"] for metric in directive["Metrics"]]
        if len(names) > SPEC_MAX_METRICS_PER_DIRECTIVE:
            problems.append(f"{len(names)} metrics in a directive")
        if len(set(names)) != len(names):
            problems.append(f"a metric named twice in {names}")
        dimensions = {name for dimension_set in directive["Dimensions"] for name in dimension_set}
        problems += [f"{name!r} is a metric and a dimension" for name in dimensions & set(names)]
        for name in sorted(dimensions):
            if not isinstance(document.get(name), str):
                problems.append(f"dimension {name!r} has no string value")
        for name in names:
            value = document.get(name)
            values = value if isinstance(value, list) else [value]
            if not all(_is_number(v) for v in values) or not values:
                problems.append(f"metric {name!r} has no numeric value")
            elif len(values) > SPEC_MAX_VALUES_PER_METRIC:
                problems.append(f"metric {name!r} has {len(values)} values")
    return problems


def valid_emf(line: str, *, via_agent: bool = True) -> dict[str, Any]:
    """The document of a line that must be valid EMF (and name its log group, for the agent);
    an AssertionError names the problems."""
    problems = emf_problems(line)
    if via_agent and not problems and not json.loads(line)["_aws"].get("LogGroupName"):
        problems.append("no _aws.LogGroupName: the agent would not know where to write it")
    if problems:
        raise AssertionError(f"invalid EMF: {problems}")
    document: dict[str, Any] = json.loads(line)
    return document
