"""The kernel-log path: host log records as Container Insights ships them, one key for one
XID whichever source logged it, and a kernel read that one backdated document cannot widen."""

import json
from typing import Any

from lambdas.notifier.incidents import Deployment, from_xid_group
from lambdas.notifier.kernel_log import (
    MAX_AGE_MS,
    WINDOW_MS,
    KernelLines,
    check,
    read_kernel_lines,
    span,
)
from lambdas.notifier.messages import XidNotice, group_xids, parse_log_events
from lambdas.notifier.xid_fields import pci_device

NODE = "ip-10-0-12-34.ec2.internal"
INSTANCE = "i-0abc1234def567890"
#: 2026-03-02 14:01:00 UTC, a minute into a five-minute window.
NOW_MS = 1_772_460_060_000
LINE = "NVRM: Xid (PCI:0000:53:00): 79, pid=4123, GPU has fallen off the bus."
DEPLOYMENT = Deployment(
    cluster="train", region="us-east-1", gpu_dashboard="gpu-insights-train-gpu-node", alarm_kinds={}
)


def _dmesg(line: str = LINE) -> str:
    """/var/log/dmesg as host-log.conf reads it (``Key message``), with the aws filter's
    fields (cli/demo/failures.py models the same records)."""
    return json.dumps({"message": line, "az": "us-east-1a", "ec2_instance_id": INSTANCE})


def _messages(line: str = LINE) -> str:
    """/var/log/messages through the syslog parser: the host is the syslog host, not the
    node name."""
    return json.dumps(
        {
            "host": "ip-10-0-12-34",
            "ident": "kernel",
            "message": f"[ 812.4] {line}",
            "az": "us-east-1a",
            "ec2_instance_id": INSTANCE,
        }
    )


def _payload(stream: str, messages: list[str], at_ms: int = NOW_MS) -> dict[str, Any]:
    events = [{"id": str(i), "timestamp": at_ms + i, "message": m} for i, m in enumerate(messages)]
    return {"logStream": stream, "logEvents": events}


def _document(at_ms: int = NOW_MS, gpu: str = "3", bus: str = "00000000:53:00.0") -> str:
    return json.dumps(
        {
            "_aws": {"Timestamp": at_ms},
            "ClusterName": "train",
            "NodeName": NODE,
            "GpuIndex": gpu,
            "XidCode": "79",
            "PciBusId": bus,
        }
    )


def _notices(payload: dict[str, Any]) -> list[XidNotice]:
    parsed = parse_log_events(payload, cluster="train")
    assert parsed.refused == []
    return parsed.notices


def test_a_host_record_is_its_streams_node_not_its_instance_id() -> None:
    for stream, message in [
        (f"{NODE}.host.dmesg", _dmesg()),
        (f"{NODE}.host.messages", _messages()),
    ]:
        (notice,) = _notices(_payload(stream, [message]))
        assert notice.node == NODE
    # A stream without the suffix leaves the node to the record.
    (notice,) = _notices(_payload("elsewhere", [_dmesg()]))
    assert notice.node == INSTANCE


class _Logs:
    """FilterLogEvents over fixed events; it records each call's arguments."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = events
        self.calls: list[dict[str, Any]] = []

    def filter_log_events(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        start, end = kwargs["startTime"], kwargs["endTime"]
        return {"events": [e for e in self.events if start <= e["timestamp"] <= end]}


def _host_events(at_ms: int) -> list[dict[str, Any]]:
    return [
        {"logStreamName": f"{NODE}.host.dmesg", "timestamp": at_ms, "message": _dmesg()},
        {"logStreamName": f"{NODE}.host.messages", "timestamp": at_ms, "message": _messages()},
    ]


def test_an_exporter_xid_is_confirmed_by_container_insights_host_records() -> None:
    (group,) = group_xids(_notices(_payload("exporter", [_document()])))
    lines = read_kernel_lines(_Logs(_host_events(NOW_MS + 3000)), "host", NOW_MS - 1, NOW_MS + 9000)
    assert set(lines.by_node) == {NODE}
    result = check(group, lines, NOW_MS)
    assert result.confirmed is True
    assert result.text == "confirmed: NVRM: Xid (PCI:0000:53:00): 79"


def test_both_pci_forms_are_one_device() -> None:
    assert pci_device("00000000:53:00.0") == pci_device("0000:53:00") == "0000:53:00"
    assert pci_device("0000:5A:00") == "0000:5a:00"
    assert pci_device("00010000:53:00.0") == "10000:53:00"


def test_the_same_xid_from_the_exporter_and_both_host_streams_is_one_incident() -> None:
    exporter = _notices(_payload("exporter", [_document()]))
    dmesg = _notices(_payload(f"{NODE}.host.dmesg", [_dmesg()], NOW_MS + 2000))
    messages = _notices(_payload(f"{NODE}.host.messages", [_messages()], NOW_MS + 2500))
    # Each source's batch keys the XID the same way (the sent ledger claims it once) ...
    keys = {g.key for batch in (exporter, dmesg, messages) for g in group_xids(batch)}
    assert keys == {f"xid/train/{NODE}/0000:53:00/79/1772460000000"}
    # ... and one batch holding all three is one group, named as the exporter names the GPU.
    (group,) = group_xids(dmesg + exporter + messages)
    assert group.count == 3
    assert group.first.gpu == "3"
    incident = from_xid_group(group, DEPLOYMENT)
    assert incident.gpu == "3"
    assert incident.key == next(iter(keys))


def test_a_backdated_document_is_too_old_and_does_not_widen_the_read() -> None:
    forged = _document(at_ms=NOW_MS - 3 * 3_600_000, gpu="1", bus="00000000:54:00.0")
    groups = group_xids(_notices(_payload("exporter", [forged, _document()])))
    window = span(groups, NOW_MS)
    assert window == (NOW_MS - WINDOW_MS, NOW_MS + WINDOW_MS)
    logs = _Logs(_host_events(NOW_MS + 3000))
    lines = read_kernel_lines(logs, "host", *window)
    assert logs.calls[0]["startTime"] >= NOW_MS - MAX_AGE_MS - WINDOW_MS
    old, real = sorted(groups, key=lambda g: g.first.time_ms)
    assert check(real, lines, NOW_MS).confirmed is True
    too_old = check(old, lines, NOW_MS)
    assert too_old.confirmed is None
    assert too_old.text == (
        "not checked: too old (dated 180 minutes before now; the kernel log is read back 60 "
        "minutes)"
    )
    # Only backdated documents: no read at all, each says it is too old.
    assert span([old], NOW_MS) is None
    assert check(old, KernelLines({}), NOW_MS).text.startswith("not checked: too old")


def _forged(line: str = LINE, **routing: Any) -> str:
    """A line a pod sent to the agent's EMF listener, routed into the host log group (the
    agent takes the group and stream from these fields: lambdas/notifier/messages.py
    ``EMF_ROUTING_FIELDS``), shaped like Fluent Bit's record."""
    return json.dumps({**routing, "message": line, "hostname": NODE})


FORGERIES = [
    # v1: ``_aws.LogGroupName`` and ``_aws.LogStreamName`` pick the group and the stream.
    _forged(_aws={"LogGroupName": "/aws/containerinsights/train/host",
                  "LogStreamName": f"{NODE}.host.dmesg"}),
    # v0: top-level ``log_group_name`` and ``log_stream_name``, no ``_aws`` at all.
    _forged(log_group_name="/aws/containerinsights/train/host",
            log_stream_name=f"{NODE}.host.dmesg"),
    # Go's JSON decoder matches keys whatever their case: ``_AWS`` routes the line too.
    _forged(_AWS={"logGroupName": "/aws/containerinsights/train/host"}),
]  # fmt: skip


def test_a_line_routed_through_the_emf_listener_confirms_nothing() -> None:
    """Before: a forged host line confirmed a forged document ("confirmed: NVRM: Xid
    (PCI:0000:53:00): 79"), its node taken from the record's own ``hostname``."""
    (group,) = group_xids(_notices(_payload("exporter", [_document()])))
    forged = [
        {"logStreamName": f"{NODE}.host.dmesg", "timestamp": NOW_MS + 1000, "message": m}
        for m in FORGERIES
    ]
    # A Fluent Bit record on a stream that is no host stream: its hostname names no node.
    forged.append({"logStreamName": "elsewhere", "timestamp": NOW_MS, "message": _dmesg()})
    lines = read_kernel_lines(_Logs(forged), "host", NOW_MS - 1, NOW_MS + 9000)
    assert lines.by_node == {}
    result = check(group, lines, NOW_MS)
    assert result.confirmed is False
    assert result.text.startswith("unconfirmed by the kernel log: no NVRM: Xid 79 on PCI")
    # Fluent Bit's own record beside them still confirms.
    real = forged + _host_events(NOW_MS + 3000)
    lines = read_kernel_lines(_Logs(real), "host", NOW_MS - 1, NOW_MS + 9000)
    assert [len(seen) for seen in lines.by_node.values()] == [2]
    assert check(group, lines, NOW_MS).confirmed is True


def test_a_line_routed_through_the_emf_listener_is_refused_as_a_kernel_line() -> None:
    for message in FORGERIES[1:]:  # the first holds "_aws": read as an exporter document
        parsed = parse_log_events(_payload(f"{NODE}.host.dmesg", [message]), cluster="train")
        assert parsed.notices == []
        (refusal,) = parsed.refused
        assert "written through the agent's EMF listener, not by Fluent Bit" in refusal.reason


def test_a_kernel_line_with_xid_code_0_pages_nothing() -> None:
    """The exporter's documents with ``XidCode`` 0 are refused (xid_fields.xid_code: 1 to
    9,999); before, the kernel's line with code 0 paged "XID 0"."""
    line = "NVRM: Xid (PCI:0000:53:00): 0, pid=1, nothing"
    parsed = parse_log_events(_payload(f"{NODE}.host.dmesg", [_dmesg(line)]), cluster="train")
    assert parsed.notices == []
    (refusal,) = parsed.refused
    assert "code 0, no XID" in refusal.reason
