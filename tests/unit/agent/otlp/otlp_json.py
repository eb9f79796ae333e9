"""What an OTLP/HTTP JSON body says, read as the OTLP specification defines it: the ProtoJSON of
``ExportMetricsServiceRequest`` (opentelemetry-proto's own message, parsed by protobuf's
``json_format``, which refuses an unknown field name or a mistyped value), then flattened to one
row per datapoint for tests to compare (``rows``: gauges and sums; ``histograms``)."""

from typing import Any, NamedTuple

from google.protobuf import json_format  # type: ignore[import-untyped]
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)


class Row(NamedTuple):
    resource: dict[str, str]
    name: str
    unit: str
    kind: str
    labels: dict[str, str]
    value: float
    time_ns: int
    start_ns: int
    monotonic: bool
    temporality: int


def parse(body: bytes) -> ExportMetricsServiceRequest:
    request = ExportMetricsServiceRequest()
    json_format.Parse(body, request, ignore_unknown_fields=False)
    return request


def _strings(attributes: Any) -> dict[str, str]:
    return {a.key: a.value.string_value for a in attributes}


class HistogramRow(NamedTuple):
    resource: dict[str, str]
    scope: str
    name: str
    unit: str
    labels: dict[str, str]
    start_ns: int
    time_ns: int
    total: int
    bucket_counts: list[int]
    bounds: list[float]
    #: None where the datapoint leaves the optional field out.
    sum: "float | None"
    min: "float | None"
    max: "float | None"
    temporality: int


def _optional(point: Any, field: str) -> "float | None":
    return float(getattr(point, field)) if point.HasField(field) else None


def histograms(request: ExportMetricsServiceRequest) -> list[HistogramRow]:
    found = []
    for rm in request.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.WhichOneof("data") != "histogram":
                    continue
                for p in metric.histogram.data_points:
                    found.append(
                        HistogramRow(
                            _strings(rm.resource.attributes),
                            sm.scope.name,
                            metric.name,
                            metric.unit,
                            _strings(p.attributes),
                            p.start_time_unix_nano,
                            p.time_unix_nano,
                            p.count,
                            list(p.bucket_counts),
                            list(p.explicit_bounds),
                            _optional(p, "sum"),
                            _optional(p, "min"),
                            _optional(p, "max"),
                            metric.histogram.aggregation_temporality,
                        )
                    )
    return found


def rows(request: ExportMetricsServiceRequest) -> list[Row]:
    """The gauge and sum datapoints."""
    found = []
    for rm in request.resource_metrics:
        resource = _strings(rm.resource.attributes)
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                kind = metric.WhichOneof("data")
                if kind == "histogram":
                    continue
                data = getattr(metric, kind)
                for p in data.data_points:
                    found.append(
                        Row(
                            resource,
                            metric.name,
                            metric.unit,
                            kind,
                            _strings(p.attributes),
                            p.as_double,
                            p.time_unix_nano,
                            p.start_time_unix_nano,
                            kind == "sum" and data.is_monotonic,
                            data.aggregation_temporality if kind == "sum" else 0,
                        )
                    )
    return found
