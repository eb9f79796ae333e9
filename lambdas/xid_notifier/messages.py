"""From log events to XID notifications: pure logic, no AWS.

Two kinds of log events carry XIDs: the exporter's EMF documents (cluster, node, GPU, code,
meaning, pods) and kernel ``NVRM: Xid`` lines in Container Insights' host logs (the fallback
for nodes without the exporter; the node comes from the log stream, the code from the line).
"""

import json
from dataclasses import dataclass
from typing import Any

from agent.metric_contract import DIM_CLUSTER, DIM_GPU_INDEX, DIM_NODE, DIM_XID_CODE
from agent.xid import XidLineError, XidSeverity, describe_xid, parse_kernel_xid_line


@dataclass(frozen=True)
class XidNotice:
    cluster: str
    node: str
    gpu: str
    code: int
    severity: XidSeverity
    meaning: str
    source: str
    pods: tuple[str, ...] = ()

    @property
    def subject(self) -> str:
        # SNS subjects: at most 100 ASCII characters, no line breaks.
        text = f"[{self.severity.upper()}] XID {self.code} on {self.node} GPU {self.gpu}"
        return text[:100]

    def body(self) -> str:
        lines = [
            f"Cluster:  {self.cluster}",
            f"Node:     {self.node}",
            f"GPU:      {self.gpu}",
            f"XID code: {self.code} ({self.severity})",
            f"Meaning:  {self.meaning}",
        ]
        if self.pods:
            lines.append(f"Pods:     {', '.join(self.pods)} (UIDs)")
        lines.append(f"Source:   {self.source}")
        if self.severity is XidSeverity.FATAL:
            lines.append("")
            lines.append(
                "Action: cordon and drain the node, then reset the GPU or replace the node. "
                "Jobs on this GPU are at risk."
            )
        return "\n".join(lines)


@dataclass
class Parsed:
    notices: list[XidNotice]
    #: Events that named an XID but could not be read (counted, not raised).
    unreadable: int = 0


def _from_emf(document: dict[str, Any], cluster_hint: str) -> XidNotice | None:
    if DIM_XID_CODE not in document:
        return None
    code = int(document[DIM_XID_CODE])
    row = describe_xid(code)
    pods = document.get("PodUids") or []
    return XidNotice(
        cluster=str(document.get(DIM_CLUSTER, cluster_hint)),
        node=str(document.get(DIM_NODE, "unknown node")),
        gpu=str(document.get(DIM_GPU_INDEX, "?")),
        code=code,
        severity=row.severity,
        meaning=row.meaning,
        source=f"GPU exporter ({document.get('XidSource', 'nvml')})",
        pods=tuple(str(p) for p in pods),
    )


def _from_kernel(message: str, stream: str, cluster: str) -> XidNotice | None:
    # Fluent Bit ships host logs as JSON with the line under "message" or "log".
    text = message
    node = stream
    if message.lstrip().startswith("{"):
        record = json.loads(message)
        text = str(record.get("message") or record.get("log") or "")
        node = str(record.get("hostname") or record.get("ec2_instance_id") or stream)
    xid = parse_kernel_xid_line(text)
    if xid is None:
        return None
    row = describe_xid(xid.code)
    return XidNotice(
        cluster=cluster,
        node=node,
        gpu=f"PCI {xid.pci_bus_id}",
        code=xid.code,
        severity=row.severity,
        meaning=row.meaning,
        source="kernel log (Container Insights host logs)",
    )


def parse_log_events(payload: dict[str, Any], *, cluster: str) -> Parsed:
    """The XIDs in a decoded CloudWatch Logs subscription payload."""
    parsed = Parsed(notices=[])
    stream = str(payload.get("logStream", "unknown node"))
    for event in payload.get("logEvents", []):
        message = str(event.get("message", ""))
        try:
            notice: XidNotice | None
            if '"_aws"' in message:
                notice = _from_emf(json.loads(message), cluster)
            else:
                notice = _from_kernel(message, stream, cluster)
        except (ValueError, TypeError, XidLineError):
            parsed.unreadable += 1
            continue
        if notice is not None:
            parsed.notices.append(notice)
    return parsed
