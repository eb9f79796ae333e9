"""CloudWatch Embedded Metric Format: build documents, read them back, turn them into
PutMetricData datums.

EMF is a JSON log line that the CloudWatch agent (or CloudWatch Logs) turns into metrics. It
carries values as top-level keys, so extra keys (the pod, the XID's meaning) ride along as
searchable properties without becoming dimensions that multiply the metric count.
"""

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional

EmfDocument = dict[str, Any]

#: Limits of the EMF specification (CloudWatch User Guide, "Specification: Embedded metric
#: format"): a MetricDirective holds at most 100 MetricDefinitions, a DimensionSet at most 30
#: keys; namespaces, metric and dimension names are 1 to 1024 characters (its JSON schema).
MAX_METRICS_PER_DIRECTIVE = 100
MAX_DIMENSIONS_PER_SET = 30
MAX_NAME_LENGTH = 1024
#: The root member that holds the metadata; no metric, dimension or property may take it.
METADATA_KEY = "_aws"


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
    properties: Optional[Mapping[str, object]] = None,
    log_group: Optional[str] = None,
    own_dimension_sets: Optional[Mapping[str, Sequence[Sequence[str]]]] = None,
) -> EmfDocument:
    """One EMF document. Non-finite values are dropped: CloudWatch rejects NaN and infinity.
    ``log_group`` tells the CloudWatch agent where to write the line (its default otherwise).

    A metric, dimension and property share the document's root, so a name used twice would
    overwrite one with the other: that, and anything else the specification forbids, is an
    ``EmfError`` naming the part. ``own_dimension_sets`` gives some metrics other dimension
    sets than ``dimension_sets``: each distinct group becomes its own directive of the one
    document (the specification's CloudWatchMetrics is an array of directives)."""
    values = {name: float(v) for name, v in metrics.items() if math.isfinite(v)}
    if len(values) > MAX_METRICS_PER_DIRECTIVE:
        raise EmfError(
            f"{len(values)} metrics in one document; EMF allows {MAX_METRICS_PER_DIRECTIVE}"
        )
    _check_name("namespace", namespace)
    for name in (*values, *dimensions):
        _check_name("metric" if name in values else "dimension", name)
    own = own_dimension_sets or {}
    for dimension_set in (*dimension_sets, *(s for sets in own.values() for s in sets)):
        if len(dimension_set) > MAX_DIMENSIONS_PER_SET:
            raise EmfError(
                f"dimension set {list(dimension_set)} has {len(dimension_set)} keys; "
                f"EMF allows {MAX_DIMENSIONS_PER_SET}"
            )
        missing = [d for d in dimension_set if d not in dimensions]
        if missing:
            raise EmfError(f"dimension set {list(dimension_set)} names unset dimensions {missing}")
    props = properties or {}
    if METADATA_KEY in dimensions or METADATA_KEY in props:
        raise EmfError(
            f"{METADATA_KEY!r} is EMF's metadata member; no dimension or property may take it"
        )
    clashes = sorted({METADATA_KEY, *dimensions, *props}.intersection(metrics))
    if clashes:
        raise EmfError(
            f"metric name(s) {clashes} already taken by a dimension, a property or the metadata: "
            "one document's names share its root"
        )
    shared = sorted(set(dimensions).intersection(props))
    if shared:
        raise EmfError(f"name(s) {shared} are both a dimension and a property")
    document: EmfDocument = dict(props)
    document.update(dimensions)
    document.update(values)
    document[METADATA_KEY] = {
        **({"LogGroupName": log_group} if log_group else {}),
        "Timestamp": timestamp_ms,
        "CloudWatchMetrics": _directives(namespace, values, units, dimension_sets, own),
    }
    return document


def _directives(
    namespace: str,
    values: Mapping[str, float],
    units: Mapping[str, str],
    dimension_sets: Sequence[Sequence[str]],
    own: Mapping[str, Sequence[Sequence[str]]],
) -> list[dict[str, Any]]:
    """One directive per distinct dimension sets, metrics in the order given; an empty one
    only where there is no metric at all (as before, a document always has a directive)."""
    groups: dict[tuple[tuple[str, ...], ...], list[str]] = {}
    default = tuple(tuple(s) for s in dimension_sets)
    groups[default] = []
    for name in values:
        sets = tuple(tuple(s) for s in own[name]) if name in own else default
        groups.setdefault(sets, []).append(name)
    return [
        {
            "Namespace": namespace,
            "Dimensions": [list(s) for s in sets],
            "Metrics": [{"Name": name, "Unit": units.get(name, "None")} for name in names],
        }
        for sets, names in groups.items()
        if names or len(groups) == 1
    ]


def metric_chunks(metrics: Mapping[str, float]) -> list[dict[str, float]]:
    """The finite values in groups of at most ``MAX_METRICS_PER_DIRECTIVE``, in the order given:
    one ``emf_document`` each, so that more metrics than a directive holds are split, never
    dropped. No finite value, no group."""
    finite = [(name, value) for name, value in metrics.items() if math.isfinite(value)]
    return [
        dict(finite[start : start + MAX_METRICS_PER_DIRECTIVE])
        for start in range(0, len(finite), MAX_METRICS_PER_DIRECTIVE)
    ]


def _check_name(kind: str, name: str) -> None:
    if not 1 <= len(name) <= MAX_NAME_LENGTH:
        raise EmfError(f"{kind} name of {len(name)} characters; EMF takes 1 to {MAX_NAME_LENGTH}")


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
    if not isinstance(aws, dict) or "Timestamp" not in aws:
        raise EmfError("missing _aws.Timestamp (milliseconds since the epoch)")
    if not isinstance(aws["Timestamp"], int):
        raise EmfError(
            f"_aws.Timestamp {aws['Timestamp']!r} is not an integer of milliseconds since the epoch"
        )
    directives = aws.get("CloudWatchMetrics")
    if not isinstance(directives, list) or not directives:
        raise EmfError("missing _aws.CloudWatchMetrics")
    for directive in directives:
        _check_directive(document, directive)
    return document


def _check_directive(document: EmfDocument, directive: object) -> None:
    if not isinstance(directive, dict) or not isinstance(directive.get("Namespace"), str):
        raise EmfError("a CloudWatchMetrics directive needs a Namespace")
    metrics = directive.get("Metrics", [])
    if not isinstance(metrics, list):
        raise EmfError(f"a directive's Metrics {metrics!r} is not a list")
    if len(metrics) > MAX_METRICS_PER_DIRECTIVE:
        raise EmfError(f"a directive holds at most {MAX_METRICS_PER_DIRECTIVE} metrics")
    for dimension_set in directive.get("Dimensions", []):
        for name in dimension_set:
            if not isinstance(document.get(name), str):
                raise EmfError(f"dimension {name!r} has no string value")
    for metric in metrics:
        name = metric.get("Name") if isinstance(metric, dict) else None
        value = document.get(name) if isinstance(name, str) else None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise EmfError(f"metric {name!r} has no numeric value")


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
