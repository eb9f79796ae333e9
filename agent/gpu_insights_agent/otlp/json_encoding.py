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
``start_ns``); a ``HistogramPoint`` is a cumulative explicit-bucket histogram (the serving
quality proxy's, ``quality.recorder``). Points are grouped into one resource per distinct
resource attributes and one metric per name and kind within it, in the order first seen.

A histogram datapoint follows ``HistogramDataPoint`` (opentelemetry-proto
opentelemetry/proto/metrics/v1/metrics.proto): ``count`` and each of ``bucket_counts`` are
``fixed64`` (decimal strings in JSON), "The sum of the bucket_counts must equal the value in
the count field", "The number of elements in bucket_counts array must be by one greater than
the number of elements in explicit_bounds array", bucket ``i`` is ``(explicit_bounds[i-1],
explicit_bounds[i]]`` ("inclusive of their upper boundary"), the bounds "strictly increasing";
``sum``, ``min`` and ``max`` are optional, and "Negative events *can* be recorded, but sum
should not be filled out when doing so" (so a histogram whose ``min`` is negative goes without
one).
"""

import json
import math
from typing import Dict, Iterable, List, NamedTuple, Optional, Tuple, Union

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


class HistogramPoint(NamedTuple):
    """One cumulative explicit-bucket histogram datapoint: the counts since ``start_ns``."""

    resource: Attributes
    name: str
    unit: str
    attributes: Attributes
    start_ns: int
    time_ns: int
    #: Strictly increasing, finite; ``len(bucket_counts) == len(bounds) + 1``.
    bounds: Tuple[float, ...]
    bucket_counts: Tuple[int, ...]
    #: The values' sum, least and most (None: left out of the datapoint).
    sum: Optional[float] = None
    min: Optional[float] = None
    max: Optional[float] = None


def _attributes(pairs: Attributes) -> List[Dict[str, object]]:
    return [{"key": key, "value": {"stringValue": value}} for key, value in pairs]


def _datapoint(point: Point) -> Dict[str, object]:
    datapoint: Dict[str, object] = {"attributes": _attributes(point.attributes)}
    if point.start_ns is not None:
        datapoint["startTimeUnixNano"] = str(point.start_ns)
    datapoint["timeUnixNano"] = str(point.time_ns)
    datapoint["asDouble"] = point.value
    return datapoint


def _histogram_datapoint(point: HistogramPoint) -> Dict[str, object]:
    datapoint: Dict[str, object] = {
        "attributes": _attributes(point.attributes),
        "startTimeUnixNano": str(point.start_ns),
        "timeUnixNano": str(point.time_ns),
        "count": str(sum(point.bucket_counts)),
    }
    negative = point.min is not None and point.min < 0
    if point.sum is not None and not negative and math.isfinite(point.sum):
        datapoint["sum"] = point.sum
    datapoint["bucketCounts"] = [str(count) for count in point.bucket_counts]
    datapoint["explicitBounds"] = list(point.bounds)
    for field, value in (("min", point.min), ("max", point.max)):
        if value is not None and math.isfinite(value):
            datapoint[field] = value
    return datapoint


def _histogram_valid(point: HistogramPoint) -> bool:
    """The point keeps ``HistogramDataPoint``'s rules: a count per bucket, finite strictly
    increasing bounds, no negative count."""
    bounds = point.bounds
    return (
        len(point.bucket_counts) == len(bounds) + 1
        and all(math.isfinite(b) for b in bounds)
        and all(a < b for a, b in zip(bounds, bounds[1:]))
        and all(count >= 0 for count in point.bucket_counts)
    )


#: Each kind's member of ``Metric`` (its ``data`` oneof) and the fields beside its datapoints.
_KINDS: Dict[str, Dict[str, object]] = {
    "gauge": {},
    "sum": {"aggregationTemporality": CUMULATIVE, "isMonotonic": True},
    "histogram": {"aggregationTemporality": CUMULATIVE},
}
Datapoints = List[Dict[str, object]]
#: Per resource, per (name, kind): the metric's JSON object and its datapoint list inside it.
Metrics = Dict[Attributes, Dict[Tuple[str, str], Tuple[Dict[str, object], Datapoints]]]


def _datapoints(
    resources: Metrics, resource: Attributes, name: str, unit: str, kind: str
) -> Datapoints:
    """The datapoint list of the metric ``name`` of ``kind`` in ``resource``, made on first use."""
    metrics = resources.setdefault(resource, {})
    found = metrics.get((name, kind))
    if found is None:
        datapoints: Datapoints = []
        metric: Dict[str, object] = {
            "name": name,
            "unit": unit,
            kind: {"dataPoints": datapoints, **_KINDS[kind]},
        }
        found = metrics[(name, kind)] = (metric, datapoints)
    return found[1]


def request(points: Iterable[Union[Point, HistogramPoint]], *, scope: str) -> Dict[str, object]:
    """The ``ExportMetricsServiceRequest`` of these points, as the JSON object to send. A
    non-finite value is left out (ProtoJSON would need it as a string, and CloudWatch takes
    none), and so is a histogram that breaks ``HistogramDataPoint``'s rules."""
    resources: Metrics = {}
    for point in points:
        if isinstance(point, HistogramPoint):
            if _histogram_valid(point):
                _datapoints(resources, point.resource, point.name, point.unit, "histogram").append(
                    _histogram_datapoint(point)
                )
        elif math.isfinite(point.value):
            kind = "sum" if point.monotonic else "gauge"
            _datapoints(resources, point.resource, point.name, point.unit, kind).append(
                _datapoint(point)
            )
    return {
        "resourceMetrics": [
            {
                "resource": {"attributes": _attributes(resource)},
                "scopeMetrics": [
                    {"scope": {"name": scope}, "metrics": [m for m, _ in metrics.values()]}
                ],
            }
            for resource, metrics in resources.items()
        ]
    }


def encode(points: Iterable[Union[Point, HistogramPoint]], *, scope: str) -> bytes:
    """The request body: compact JSON, UTF-8 (every byte is billed on the way in)."""
    body = request(points, scope=scope)
    if not body["resourceMetrics"]:
        return b""
    return json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
