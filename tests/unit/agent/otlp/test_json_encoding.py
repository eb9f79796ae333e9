"""The standard-library OTLP JSON encoding against opentelemetry-proto's own message: every
body it makes parses as an ``ExportMetricsServiceRequest`` under the OTLP JSON rules."""

import json

from gpu_insights_agent.otlp.json_encoding import CUMULATIVE, Point, encode
from tests.unit.agent.otlp.otlp_json import parse, rows

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
