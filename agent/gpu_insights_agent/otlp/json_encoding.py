"""OTLP metrics as JSON, standard library only: the request body of OTLP/HTTP with the JSON
encoding, for senders that cannot take the OpenTelemetry SDK (the training emitter runs in
training images: Python 3.9, no dependencies).

The encoding is the OTLP specification's ("JSON Protobuf Encoding",
https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding): the ProtoJSON mapping of
``ExportMetricsServiceRequest`` (open-telemetry/opentelemetry-proto
opentelemetry/proto/collector/metrics/v1/metrics_service.proto), with lowerCamelCase field names,
enum values as integers, and 64-bit integers (the ``*UnixNano`` times, ``intValue``) as decimal
strings. The collector's OTLP receiver, which the add-on's CloudWatch agent runs on port 4318,
takes it on ``/v1/metrics`` with ``Content-Type: application/json``
(open-telemetry/opentelemetry-collector receiver/otlpreceiver/otlphttp.go: ``handleMetrics``
picks the decoder by content type; encoder.go: ``jsonContentType``,
``jsonEncoder.unmarshalMetricsRequest``).

A point is a gauge, or with ``monotonic`` a cumulative monotonic sum (a counter since
``start_ns``). Points are grouped into one resource per distinct resource attributes and one
metric per name within it, in the order first seen.
"""

import json
import math
from typing import Dict, Iterable, List, NamedTuple, Optional, Tuple

#: ``AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE`` (metrics.proto): JSON carries
#: the enum's integer, as the OTLP specification requires.
CUMULATIVE = 2
#: The media type of OTLP/HTTP's JSON encoding ("OTLP/HTTP Request",
#: https://opentelemetry.io/docs/specs/otlp/#otlphttp-request).
CONTENT_TYPE = "application/json"

Attributes = Tuple[Tuple[str, str], ...]


class Point(NamedTuple):
    """One datapoint with everything that places it: its resource and its metric."""

    resource: Attributes
    name: str
    unit: str
    attributes: Attributes
    time_ns: int
    value: float
    #: A cumulative monotonic sum's start (when its count began); None for a gauge.
    start_ns: Optional[int] = None

    @property
    def monotonic(self) -> bool:
        return self.start_ns is not None


def _attributes(pairs: Attributes) -> List[Dict[str, object]]:
    return [{"key": key, "value": {"stringValue": value}} for key, value in pairs]


def _datapoint(point: Point) -> Dict[str, object]:
    datapoint: Dict[str, object] = {"attributes": _attributes(point.attributes)}
    if point.start_ns is not None:
        datapoint["startTimeUnixNano"] = str(point.start_ns)
    datapoint["timeUnixNano"] = str(point.time_ns)
    datapoint["asDouble"] = point.value
    return datapoint


def request(points: Iterable[Point], *, scope: str) -> Dict[str, object]:
    """The ``ExportMetricsServiceRequest`` of these points, as the JSON object to send. A
    non-finite value is left out (ProtoJSON would need it as a string, and CloudWatch takes
    none)."""
    resources: Dict[Attributes, Dict[Tuple[str, bool], Dict[str, object]]] = {}
    for point in points:
        if not math.isfinite(point.value):
            continue
        metrics = resources.setdefault(point.resource, {})
        key = (point.name, point.monotonic)
        metric = metrics.get(key)
        if metric is None:
            metric = metrics[key] = {"name": point.name, "unit": point.unit}
            if point.monotonic:
                metric["sum"] = {
                    "dataPoints": [],
                    "aggregationTemporality": CUMULATIVE,
                    "isMonotonic": True,
                }
            else:
                metric["gauge"] = {"dataPoints": []}
        data = metric["sum"] if point.monotonic else metric["gauge"]
        data["dataPoints"].append(_datapoint(point))  # type: ignore[index]
    return {
        "resourceMetrics": [
            {
                "resource": {"attributes": _attributes(resource)},
                "scopeMetrics": [{"scope": {"name": scope}, "metrics": list(metrics.values())}],
            }
            for resource, metrics in resources.items()
        ]
    }


def encode(points: Iterable[Point], *, scope: str) -> bytes:
    """The request body: compact JSON, UTF-8 (every byte is billed on the way in)."""
    body = request(points, scope=scope)
    if not body["resourceMetrics"]:
        return b""
    return json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
