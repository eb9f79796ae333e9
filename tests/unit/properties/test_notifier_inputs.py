"""The notifier's inputs, generated from their real shapes: EMF documents as the exporter
writes them (agent/gpu_insights_agent/exporter/exporter.py), kernel ``NVRM: Xid`` lines as the
driver prints them (NVIDIA's XID catalogue: "NVRM: Xid (PCI:0000:53:00): 79, ..."), and alarm
and contributor events as the CloudWatch User Guide documents them
(tests/unit/lambdas/notifier/events.py). Each generated batch mixes good items with bad ones:
no bad item raises (only the project's named error may escape an alarm event), and every good
item becomes exactly one incident."""

import copy
import json
import string
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdk.alarms.catalog import AlarmSettings, gpu_alarms
from gpu_insights_agent.contract.xid import XID_CODES
from gpu_insights_agent.emf.sinks import BufferedSender
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from gpu_insights_agent.exporter.xid_watcher import XidEvent
from lambdas.notifier.incidents import (
    AlarmEventError,
    Deployment,
    Skipped,
    from_alarm_event,
    from_xid_group,
)
from lambdas.notifier.messages import group_xids, parse_log_events
from lambdas.notifier.notification import Incident, publish_arguments
from lambdas.notifier.xid_fields import pci_device
from tests.unit.agent.exporter.nvml_trace import Clock, trace_lines
from tests.unit.lambdas.notifier.events import (
    AWS_CONTRIBUTOR_EXAMPLE,
    LOW_POWER_QUERY,
    SINGLE_METRIC,
    alarm_level,
    as_gpu_contributor,
)

QUICK = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
T0 = 1_772_460_000.0  # 2026-03-02 14:00:00 UTC
DEPLOYMENT = Deployment(
    cluster="train",
    region="us-east-1",
    gpu_dashboard="gpu-insights-train-gpu-node",
    alarm_kinds={
        s.kind: (str(s.severity), s.title)  # type: ignore[misc]
        for s in gpu_alarms(AlarmSettings(cluster_name="train"))
    },
)


class _Keep:
    def send(self, documents: Any) -> None: ...


_EXPORTERS: dict[str, Exporter] = {}


def _exporter(node: str) -> Exporter:
    if node not in _EXPORTERS:
        exporter = Exporter(
            NvmlSource(FakeNvml(trace_lines(), clock=Clock(16))),
            BufferedSender(_Keep()),
            ExporterConfig(cluster_name="train", node_name=node),
        )
        exporter.start()
        _EXPORTERS[node] = exporter
    return _EXPORTERS[node]


#: Kubernetes node names as EC2 and EKS name them (ip-10-0-12-34.ec2.internal,
#: i-0abc....us-west-2.compute.internal) and short ones.
nodes = st.sampled_from(
    ["ip-10-0-12-34.ec2.internal", "i-0123456789abcdef0.us-west-2.compute.internal", "gpu-a"]
)
codes = st.sampled_from(sorted(XID_CODES)) | st.integers(1, 9999)
#: Values a broken or hostile writer might put in any field.
hostile = st.sampled_from(
    [None, True, 1e400, -1e400, "", " ", "n" * 3000, [], {}, [79], {"a": 1}, "79.0", "<b>", -7]
) | st.text(max_size=30)


@st.composite
def exporter_xids(draw: st.DrawFn) -> tuple[dict[str, Any], int]:
    """An XID document exactly as the exporter writes it, with its window index."""
    node = draw(nodes)
    window = draw(st.integers(0, 50))
    at = T0 + window * 300 + draw(st.integers(0, 299))
    gpu = draw(st.integers(0, 2))  # the trace's three GPUs
    pods = draw(st.lists(st.uuids().map(str), max_size=3))
    document = _exporter(node).xid_document(
        XidEvent(gpu_index=gpu, code=draw(codes), time=at), pods
    )
    return document, window


@st.composite
def broken(draw: st.DrawFn) -> str:
    """An exporter document with one field replaced by a hostile value, as one log line."""
    document, _ = draw(exporter_xids())
    field = draw(
        st.sampled_from(["XidCode", "NodeName", "ClusterName", "GpuIndex", "PodUids", "PciBusId"])
    )
    value = draw(hostile)
    document[field] = value
    line = json.dumps(document)
    if value == 1e400:  # json.dumps writes Infinity; the agent forwards 1e400 as written
        line = line.replace("Infinity", "1e400")
    return line


def _device(document: dict[str, Any]) -> str:
    bus = document.get("PciBusId")
    return pci_device(bus) if bus else str(document["GpuIndex"])


@QUICK
@given(st.lists(exporter_xids(), max_size=12), st.lists(broken(), max_size=4), st.randoms())
def test_every_good_exporter_document_is_one_incident_and_each_bad_one_refused(
    good: list[tuple[dict[str, Any], int]], bad: list[str], rnd: Any
) -> None:
    lines = [json.dumps(d) for d, _ in good] + bad
    rnd.shuffle(lines)
    # The agent writes each document's log event when it receives it, at or after the XID: the
    # events are dated after the last window (a document dated more than a minute after its
    # event is refused as future-dated, lambdas/notifier/xid_fields.py ``not_ahead``).
    written = int((T0 + 51 * 300) * 1000)
    payload = {
        "logStream": "node",
        "logEvents": [
            {"id": str(i), "timestamp": written, "message": m} for i, m in enumerate(lines)
        ],
    }
    parsed = parse_log_events(payload, cluster="train")
    refused_ids = {r.event_id for r in parsed.refused}
    # A hostile value can still be a valid one ("" for no PciBusId is not; [] for PodUids is).
    assert len(parsed.notices) + len(parsed.refused) == len(lines)
    assert all(r.reason for r in parsed.refused)
    assert all(lines[int(i)] in bad for i in refused_ids)
    incidents = [from_xid_group(g, DEPLOYMENT) for g in group_xids(parsed.notices)]
    # The key names a GPU by its PCI bus id, in the kernel's form, where the document has one.
    expected = {(d["NodeName"], _device(d), int(d["XidCode"]), w) for d, w in good}
    keys = {i.key for i in incidents}
    assert len(keys) == len(incidents)  # one incident per key: each pages once per channel
    good_keys = {
        f"xid/train/{node}/{gpu}/{code}/{int(T0 * 1000) + w * 300_000}"
        for node, gpu, code, w in expected
    }
    assert good_keys <= keys
    for incident in incidents:
        publish_arguments(incident, "arn:aws:sns:us-east-1:123456789012:t")  # renders


#: The kernel's line: "NVRM: Xid (PCI:<domain:bus:device>): <code>, <detail>" (NVIDIA's XID
#: catalogue), shipped by Fluent Bit as JSON under "log", with dmesg's timestamp before it.
bus_ids = st.tuples(st.integers(0, 0xFFFF), st.integers(0, 0xFF), st.integers(0, 0x1F)).map(
    lambda t: f"{t[0]:04x}:{t[1]:02x}:{t[2]:02x}"
)
details = st.text(alphabet=string.ascii_letters + string.digits + " ,.=_-", max_size=60)


@QUICK
@given(
    st.lists(st.tuples(bus_ids, codes, details), max_size=10),
    st.lists(st.text(alphabet=string.printable, max_size=80), max_size=4),
)
def test_every_kernel_xid_line_is_one_notice_and_a_garbled_one_refused(
    good: list[tuple[str, int, str]], tails: list[str]
) -> None:
    lines = [f"[ 81.{i}] NVRM: Xid (PCI:{b}): {c}, {d}" for i, (b, c, d) in enumerate(good)]
    garbled = [f"NVRM: Xid {tail}" for tail in tails if "(PCI:" not in tail]
    events = [json.dumps({"log": line, "hostname": "ip-10-0-0-9.ec2.internal"}) for line in lines]
    events += [json.dumps({"log": line}) for line in garbled]
    payload = {
        "logStream": "ip-10-0-0-9.ec2.internal.host.dmesg",
        "logEvents": [
            {"id": str(i), "timestamp": int(T0 * 1000) + i, "message": m}
            for i, m in enumerate(events)
        ],
    }
    parsed = parse_log_events(payload, cluster="train")
    assert [(n.gpu, n.code) for n in parsed.notices] == [(f"PCI {b}", c) for b, c, _ in good]
    assert len(parsed.refused) == len(garbled)


#: Alarm event fields, and what a malformed event may carry there instead.
_FIELDS = [
    ("resources",),
    ("detail", "state", "reasonData"),
    ("detail", "state", "reason"),
    ("detail", "state", "timestamp"),
    ("detail", "state", "value"),
    ("detail", "muteDetail", "muteWindowStart"),
    ("detail", "muteDetail", "muteWindowEnd"),
    ("detail", "alarmContributor", "attributes"),
    ("detail", "alarmContributor"),
    ("detail", "configuration"),
    ("detail", "alarmName"),
]
event_values = hostile | st.sampled_from(
    [
        "[1, 2]",
        '{"threshold": 1e400, "recentDatapoints": [1e400]}',
        "2026-01-01T10:00:00",
        "100+ time series evaluated to ALARM",
        "ALARM",
        ["arn:aws:cloudwatch:us-east-1:123456789012:alarm:x"],
    ]
)


def _contributor(node: str, gpu: str) -> dict[str, Any]:
    return as_gpu_contributor(
        AWS_CONTRIBUTOR_EXAMPLE,
        "gpu-insights-train-gpu-low-power-shard-3",
        {"ClusterName": "train", "NodeName": node, "GpuIndex": gpu},
        LOW_POWER_QUERY,
    )


@QUICK
@given(
    st.sampled_from(["contributor", "alarm", "single"]),
    st.lists(st.tuples(st.sampled_from(_FIELDS), event_values), min_size=1, max_size=3),
)
def test_a_malformed_alarm_event_is_read_skipped_or_the_named_error(
    shape: str, changes: list[tuple[tuple[str, ...], Any]]
) -> None:
    base = {
        "contributor": _contributor("ip-10-0-12-34.ec2.internal", "5"),
        "alarm": alarm_level(_contributor("ip-10-0-12-34.ec2.internal", "5")),
        "single": copy.deepcopy(SINGLE_METRIC),
    }[shape]
    event = copy.deepcopy(base)
    for path, value in changes:
        target: Any = event
        for key in path[:-1]:
            target = target.get(key) if isinstance(target, dict) else None
        if isinstance(target, dict):
            target[path[-1]] = value
    try:
        result = from_alarm_event(event, DEPLOYMENT)
    except AlarmEventError as err:
        assert "\n" not in str(err)
        return
    assert isinstance(result, Incident | Skipped)
    if isinstance(result, Incident):
        publish_arguments(result, "arn:aws:sns:us-east-1:123456789012:t")


@QUICK
@given(st.lists(st.tuples(nodes, st.integers(0, 7)), max_size=8, unique=True))
def test_every_gpu_contributor_in_alarm_is_one_incident(gpus: list[tuple[str, int]]) -> None:
    events = []
    for i, (node, gpu) in enumerate(gpus):
        event = _contributor(node, str(gpu))
        del event["detail"]["muteDetail"]
        event["detail"]["alarmContributor"]["id"] = f"{i:016x}"  # at most 16 characters
        events.append(event)
    incidents = [from_alarm_event(e, DEPLOYMENT) for e in events]
    assert all(isinstance(i, Incident) for i in incidents)
    assert len({i.key for i in incidents if isinstance(i, Incident)}) == len(gpus)
    assert sorted((i.node, i.gpu) for i in incidents if isinstance(i, Incident)) == sorted(
        (n, str(g)) for n, g in gpus
    )
