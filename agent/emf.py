"""CloudWatch Embedded Metric Format: build documents, read them back, turn them into
PutMetricData datums.

EMF is a JSON log line that the CloudWatch agent (or CloudWatch Logs) turns into metrics. It
carries values as top-level keys, so extra keys (the pod, the XID's meaning) ride along as
searchable properties without becoming dimensions that multiply the metric count.
"""

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

EmfDocument = dict[str, Any]

#: EMF allows at most 100 metrics per directive and 30 dimensions per set.
MAX_METRICS_PER_DIRECTIVE = 100
MAX_DIMENSIONS_PER_SET = 30


class EmfError(ValueError):
    """A document that is not valid EMF; the message says which part."""


def emf_document(
    *,
    namespace: str,
    timestamp_ms: int,
    dimension_sets: Sequence[Sequence[str]],
    dimensions: Mapping[str, str],
    metrics: Mapping[str, float],
    units: Mapping[str, str],
    properties: Mapping[str, object] | None = None,
    log_group: str | None = None,
) -> EmfDocument:
    """One EMF document. Non-finite values are dropped: CloudWatch rejects NaN and infinity.
    ``log_group`` tells the CloudWatch agent where to write the line (its default otherwise)."""
    values = {name: float(v) for name, v in metrics.items() if math.isfinite(v)}
    if len(values) > MAX_METRICS_PER_DIRECTIVE:
        raise EmfError(f"{len(values)} metrics in one document; EMF allows 100")
    for dimension_set in dimension_sets:
        missing = [d for d in dimension_set if d not in dimensions]
        if missing:
            raise EmfError(f"dimension set {list(dimension_set)} names unset dimensions {missing}")
    document: EmfDocument = dict(properties or {})
    document.update(dimensions)
    document.update(values)
    document["_aws"] = {
        **({"LogGroupName": log_group} if log_group else {}),
        "Timestamp": timestamp_ms,
        "CloudWatchMetrics": [
            {
                "Namespace": namespace,
                "Dimensions": [list(s) for s in dimension_sets],
                "Metrics": [{"Name": name, "Unit": units.get(name, "None")} for name in values],
            }
        ],
    }
    return document


def encode(document: EmfDocument) -> str:
    """One line, as the agent's EMF listener and CloudWatch Logs expect."""
    return json.dumps(document, separators=(",", ":"), allow_nan=False)


def parse_emf_line(line: str) -> EmfDocument:
    """Read one EMF line back, checking the parts CloudWatch needs."""
    try:
        document = json.loads(line)
    except json.JSONDecodeError as err:
        raise EmfError(f"not JSON: {err.msg} at column {err.colno}") from err
    if not isinstance(document, dict):
        raise EmfError("an EMF document must be a JSON object")
    aws = document.get("_aws")
    if not isinstance(aws, dict) or not isinstance(aws.get("Timestamp"), int):
        raise EmfError("missing _aws.Timestamp (milliseconds since the epoch)")
    directives = aws.get("CloudWatchMetrics")
    if not isinstance(directives, list) or not directives:
        raise EmfError("missing _aws.CloudWatchMetrics")
    for directive in directives:
        if not isinstance(directive, dict) or not isinstance(directive.get("Namespace"), str):
            raise EmfError("a CloudWatchMetrics directive needs a Namespace")
        for dimension_set in directive.get("Dimensions", []):
            for name in dimension_set:
                if not isinstance(document.get(name), str):
                    raise EmfError(f"dimension {name!r} has no string value")
        for metric in directive.get("Metrics", []):
            name = metric.get("Name") if isinstance(metric, dict) else None
            value = document.get(name) if isinstance(name, str) else None
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise EmfError(f"metric {name!r} has no numeric value")
    return document


def metric_data(document: EmfDocument) -> Iterable[dict[str, Any]]:
    """The PutMetricData datums a document stands for: one per metric and dimension set."""
    timestamp = document["_aws"]["Timestamp"] / 1000
    for directive in document["_aws"]["CloudWatchMetrics"]:
        for dimension_set in directive["Dimensions"]:
            dimensions = [{"Name": d, "Value": document[d]} for d in dimension_set]
            for metric in directive["Metrics"]:
                yield {
                    "MetricName": metric["Name"],
                    "Dimensions": dimensions,
                    "Timestamp": timestamp,
                    "Value": document[metric["Name"]],
                    "Unit": metric.get("Unit", "None"),
                }


def namespace_of(document: EmfDocument) -> str:
    namespace: str = document["_aws"]["CloudWatchMetrics"][0]["Namespace"]
    return namespace
