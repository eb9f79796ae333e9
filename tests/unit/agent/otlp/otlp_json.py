"""What an OTLP/HTTP JSON body says, read as the OTLP specification defines it: the ProtoJSON of
``ExportMetricsServiceRequest`` (opentelemetry-proto's own message, parsed by protobuf's
``json_format``, which refuses an unknown field name or a mistyped value), then flattened to one
row per datapoint for tests to compare."""

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


def rows(request: ExportMetricsServiceRequest) -> list[Row]:
    found = []
    for rm in request.resource_metrics:
        resource = _strings(rm.resource.attributes)
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                kind = metric.WhichOneof("data")
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
