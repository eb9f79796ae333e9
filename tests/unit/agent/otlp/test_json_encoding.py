"""The standard-library OTLP JSON encoding against opentelemetry-proto's own message: every
body it makes parses as an ``ExportMetricsServiceRequest`` under the OTLP JSON rules (gauges,
cumulative sums, and the quality proxy's cumulative histograms)."""

import json
from typing import Any

from gpu_insights_agent.otlp.json_encoding import CUMULATIVE, HistogramPoint, Point, encode
from tests.unit.agent.otlp.otlp_json import histograms, parse, rows

NODE = (("k8s.cluster.name", "train"), ("k8s.node.name", "ip-10-0-1-7.ec2.internal"))
POD = (*NODE, ("k8s.pod.name", "llm-worker-3"))
T = 1_764_000_000_123_000_000


def test_gauges_and_a_counter_parse_as_the_otlp_message_with_their_resources() -> None:
    body = encode(
        [
            Point(NODE, "gpu_healthy", "", (("gpu", "0"),), T, 1.0),
            Point(POD, "step_time_seconds", "s", (("job_name", "llm"), ("rank", "3")), T, 0.75),
            Point(NODE, "gpu_healthy", "", (("gpu", "1"),), T, 0.0),
            Point(NODE, "gpu_xid_errors", "1", (("xid_code", "79"),), T, 2.0, start_ns=T - 10**9),
        ],
        scope="test",
    )
    request = parse(body)
    assert len(request.resource_metrics) == 2  # one per distinct resource, in order first seen
    assert [m.name for m in request.resource_metrics[0].scope_metrics[0].metrics] == [
        "gpu_healthy",
        "gpu_xid_errors",
    ]
    by_name = {(r.name, r.labels.get("gpu")): r for r in rows(request)}
    assert by_name[("gpu_healthy", "1")].value == 0.0
    step = by_name[("step_time_seconds", None)]
    assert (step.kind, step.unit, step.value, step.time_ns) == ("gauge", "s", 0.75, T)
    assert step.resource["k8s.pod.name"] == "llm-worker-3"
    assert step.labels == {"job_name": "llm", "rank": "3"}
    xid = by_name[("gpu_xid_errors", None)]
    assert (xid.kind, xid.monotonic, xid.temporality) == ("sum", True, CUMULATIVE)
    assert (xid.start_ns, xid.value) == (T - 10**9, 2.0)


def test_int64_times_are_strings_and_field_names_lower_camel_case() -> None:
    """ "JSON ... 64-bit integer ... fields ... encoded as a decimal string" and lowerCamelCase
    keys ("JSON Protobuf Encoding", https://opentelemetry.io/docs/specs/otlp/)."""
    body = json.loads(encode([Point(NODE, "m", "", (), T, 1.5, start_ns=T)], scope="s"))
    point = body["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0]["sum"]["dataPoints"][0]
    assert point == {"attributes": [], "startTimeUnixNano": str(T - 0), "timeUnixNano": str(T),
                     "asDouble": 1.5}  # fmt: skip


def test_a_non_finite_value_is_left_out_and_nothing_to_send_is_no_body() -> None:
    assert encode([Point(NODE, "loss", "", (), T, float("nan"))], scope="s") == b""
    body = encode(
        [Point(NODE, "loss", "", (), T, float("inf")), Point(NODE, "lr", "", (), T, 1e-4)],
        scope="s",
    )
    assert [(r.name, r.value) for r in rows(parse(body))] == [("lr", 1e-4)]


def _histogram(**changes: Any) -> HistogramPoint:
    point = HistogramPoint(
        resource=POD,
        name="quality",
        unit="1",
        attributes=(("model_name", "llama"),),
        start_ns=T - 60 * 10**9,
        time_ns=T,
        bounds=(0.25, 0.5, 1.0),
        bucket_counts=(2, 0, 3, 1),
        sum=3.75,
        min=0.1,
        max=1.5,
    )
    return point._replace(**changes)


def test_a_histogram_parses_as_otlps_cumulative_explicit_bucket_histogram() -> None:
    """``HistogramDataPoint`` (opentelemetry-proto metrics.proto): count and bucket counts are
    fixed64, so decimal strings in JSON; bounds are doubles; sum, min and max optional."""
    body = encode([_histogram(), Point(POD, "lr", "", (), T, 1e-4)], scope="s")
    request = parse(body)
    (row,) = histograms(request)
    assert row.resource["k8s.pod.name"] == "llm-worker-3"
    assert (row.name, row.unit, row.labels) == ("quality", "1", {"model_name": "llama"})
    assert (row.start_ns, row.time_ns, row.temporality) == (T - 60 * 10**9, T, CUMULATIVE)
    assert (row.total, row.bucket_counts, row.bounds) == (6, [2, 0, 3, 1], [0.25, 0.5, 1.0])
    assert (row.sum, row.min, row.max) == (3.75, 0.1, 1.5)
    assert [(r.name, r.value) for r in rows(request)] == [("lr", 1e-4)]
    point = json.loads(body)["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0]
    assert point["histogram"]["dataPoints"][0]["bucketCounts"] == ["2", "0", "3", "1"]
    assert point["histogram"]["dataPoints"][0]["count"] == "6"


def test_a_histogram_with_a_negative_value_goes_without_its_sum() -> None:
    """ "Negative events *can* be recorded, but sum should not be filled out when doing so"
    (``HistogramDataPoint.sum``): a log-probability's histogram keeps min and max only."""
    (row,) = histograms(parse(encode([_histogram(min=-2.5, sum=-1.0)], scope="s")))
    assert (row.sum, row.min, row.max) == (None, -2.5, 1.5)


def test_a_histogram_that_breaks_the_message_rules_is_left_out() -> None:
    """One count per bucket and one more than the bounds; bounds strictly increasing."""
    bad = [
        _histogram(bucket_counts=(1, 2, 3)),
        _histogram(bounds=(0.5, 0.25, 1.0)),
        _histogram(bounds=(0.25, float("inf"), 1.0)),
        _histogram(bucket_counts=(1, -1, 0, 0)),
    ]
    assert encode(bad, scope="s") == b""
