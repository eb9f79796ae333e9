"""From log events to XID notices, and notices to incidents: pure logic, no AWS.

Two kinds of log events carry XIDs: the exporter's EMF documents (cluster, node, GPU, code,
meaning, pods) and kernel ``NVRM: Xid`` lines in Container Insights' host logs (the fallback
for nodes without the exporter; the node comes from the log stream, the code from the line).

A GPU that hits an XID often repeats it hundreds of times a second (an XID 13 storm): notices
are grouped per cluster, node, GPU and code within a fixed window, and each group is one
incident with a count.

An exporter document is dated by its own ``_aws.Timestamp``, when the GPU reported the XID, not
by its log event's timestamp, which is when the line reached CloudWatch Logs (a batch the agent
retries, or a subscription that replays it, arrives later). The EMF specification: "Timestamp
— A number representing the time stamp used for metrics extracted from the event. Values MUST
be expressed as the number of milliseconds after Jan 1, 1970 00:00:00 UTC"
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html;
its JSON schema, ``_aws.Timestamp``: an integer). A kernel line has no such field: its event's
timestamp stands.
"""

import json
import math
from dataclasses import dataclass, field
from typing import Any

from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_NODE,
    DIM_XID_CODE,
    PROP_PCI_BUS_ID,
    PROP_POD_UIDS,
    PROP_PODS,
    PROP_PODS_LAST_SEEN_MS,
    PROP_XID_SOURCE,
)
from gpu_insights_agent.contract.xid import (
    XidLineError,
    XidSeverity,
    describe_xid,
    parse_kernel_xid_line,
)
from lambdas.notifier import xid_fields as fields


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
    #: When the exporter last read ``pods`` (milliseconds since the epoch), where it could not
    #: ask the GPU at the XID (fallen off the bus) and named those it had last seen; None:
    #: read at the XID.
    pods_seen_ms: int | None = None
    #: When the GPU reported it (milliseconds since the epoch): the exporter document's
    #: ``_aws.Timestamp``, else the log event's timestamp.
    time_ms: int = 0
    #: The GPU's PCI bus id where the exporter wrote it (the kernel log names the GPU by it).
    pci_bus_id: str | None = None
    #: True for the exporter's documents (which the kernel log can confirm), False for a
    #: kernel line (which is the kernel log).
    from_exporter: bool = False


@dataclass(frozen=True)
class Refusal:
    """A log event the notifier would not read, and why (logged, counted, never raised)."""

    event_id: str
    reason: str


@dataclass
class Parsed:
    notices: list[XidNotice]
    #: Events that named an XID but were refused, each with its reason.
    refused: list[Refusal] = field(default_factory=list)

    @property
    def unreadable(self) -> int:
        return len(self.refused)


def _stamp_ms(document: Any) -> int | None:
    """An EMF document's ``_aws.Timestamp`` (epoch milliseconds), or None where it has none, or
    one that is not a whole number of milliseconds in the years the notifier reads (2000 to
    2199; so never NaN or infinite)."""
    meta = document.get("_aws") if isinstance(document, dict) else None
    stamp = meta.get("Timestamp") if isinstance(meta, dict) else None
    if isinstance(stamp, bool) or not isinstance(stamp, int | float):
        return None
    if not math.isfinite(stamp) or not fields.EARLIEST_MS <= stamp < fields.LATEST_MS:
        return None
    return int(stamp)


def document_time_ms(document: Any, event_ms: int) -> int:
    """An EMF document's ``_aws.Timestamp`` (epoch milliseconds); ``event_ms`` (the log event's
    timestamp) where the document has none, one that is not a whole number of milliseconds
    in the years the notifier reads, or one dated more than ``xid_fields.MAX_AHEAD_MS`` after
    ``event_ms`` (a newest-first read is not led by a document dated ahead)."""
    stamp = _stamp_ms(document)
    if stamp is None or stamp > event_ms + fields.MAX_AHEAD_MS:
        return event_ms
    return stamp


def _from_emf(
    document: Any, cluster: str, event_ms: int, now_ms: int | None = None
) -> XidNotice | None:
    """An exporter document's XID, every field checked (``xid_fields``); None for a document
    that is not about an XID (the exporter's cycle documents). One dated more than
    ``xid_fields.MAX_AHEAD_MS`` after its log event (or ``now_ms``) is refused: it would claim
    a window to come."""
    if not isinstance(document, dict):
        raise fields.DocumentError(f"an EMF line that is a JSON {type(document).__name__}")
    if DIM_XID_CODE not in document:
        return None
    code = fields.xid_code(document[DIM_XID_CODE])
    row = describe_xid(code)
    uids = fields.pod_uids(document.get(PROP_POD_UIDS))
    names = fields.pod_names(document.get(PROP_PODS))
    return XidNotice(
        cluster=fields.cluster_name(document.get(DIM_CLUSTER, cluster), cluster),
        node=fields.node_name(document.get(DIM_NODE)),
        gpu=fields.gpu_index(document.get(DIM_GPU_INDEX)),
        code=code,
        severity=row.severity,
        meaning=row.meaning,
        source=f"GPU exporter ({fields.source(document.get(PROP_XID_SOURCE, 'nvml'))})",
        pods=names or tuple(f"{uid} (pod UID)" for uid in uids),
        pods_seen_ms=fields.pods_last_seen_ms(document.get(PROP_PODS_LAST_SEEN_MS)),
        time_ms=fields.not_ahead(
            _stamp_ms(document) or event_ms, min(event_ms, now_ms or event_ms)
        ),
        pci_bus_id=fields.pci_bus_id(document.get(PROP_PCI_BUS_ID)),
        from_exporter=True,
    )


#: What separates the node from the file in a host log stream's name: Container Insights'
#: Fluent Bit writes the host group with ``log_stream_prefix ${HOST_NAME}.`` and tags its
#: inputs ``host.dmesg``, ``host.messages`` and ``host.secure`` (``host-log.conf`` in
#: aws-samples/amazon-cloudwatch-container-insights, k8s-deployment-manifest-templates/
#: deployment-mode/daemonset/container-insights-monitoring/quickstart/
#: cwagent-fluent-bit-quickstart-enhanced.yaml), and ``HOST_NAME`` is the pod's
#: ``spec.nodeName``: so ``<node name>.host.dmesg``, the name the exporter writes as
#: ``NodeName``.
STREAM_INFIX = ".host."


def stream_node(stream: str) -> str | None:
    """The node of a host log stream named ``<node>.host.<file>``, else None."""
    node, infix, kind = stream.rpartition(STREAM_INFIX)
    return node if infix and node and kind else None


def kernel_record(message: str, stream: str) -> tuple[str, Any]:
    """A host log event's kernel line and node. The node is the stream's (``<node>.host.
    <file>``): Fluent Bit's records carry the instance id (``ec2_instance_id``, from the aws
    filter) and, from /var/log/messages, the syslog host, neither the node name the exporter
    writes; only a stream without that suffix leaves the node to the record's ``hostname``,
    else ``ec2_instance_id``, else the stream's whole name. The line is the record's
    "message" (``host.dmesg`` read with ``Key message``, ``host.messages`` by the syslog
    parser) or "log"; a plain line is the line itself."""
    node = stream_node(stream)
    if not message.lstrip().startswith("{"):
        return message, node or stream
    record = json.loads(message)
    if not isinstance(record, dict):
        raise fields.DocumentError(f"a host log line that is a JSON {type(record).__name__}")
    text = str(record.get("message") or record.get("log") or "")
    return text, node or record.get("hostname") or record.get("ec2_instance_id") or stream


def _from_kernel(message: str, stream: str, cluster: str, time_ms: int) -> XidNotice | None:
    text, node = kernel_record(message, stream)
    xid = parse_kernel_xid_line(text)
    if xid is None:
        return None
    row = describe_xid(xid.code)
    return XidNotice(
        cluster=cluster,
        node=fields.host_name(node, "host name"),
        gpu=f"PCI {xid.pci_bus_id}",
        code=xid.code,
        severity=row.severity,
        meaning=row.meaning,
        source="kernel log (Container Insights host logs)",
        time_ms=time_ms,
        pci_bus_id=xid.pci_bus_id,
    )


def _read_event(
    event: dict[str, Any], stream: str, cluster: str, now_ms: int | None
) -> XidNotice | None:
    message = event.get("message")
    if not isinstance(message, str):
        raise fields.DocumentError(f"log event message is a {type(message).__name__}")
    time_ms = fields.event_time_ms(event.get("timestamp"))
    if '"_aws"' in message:
        return _from_emf(json.loads(message), cluster, time_ms, now_ms)
    return _from_kernel(message, stream, cluster, time_ms)


def parse_log_events(payload: dict[str, Any], *, cluster: str, now_ms: int | None = None) -> Parsed:
    """The XIDs in a decoded CloudWatch Logs subscription payload. Each event is read on its
    own: one that fails a check is refused with its reason, and the others go on. ``now_ms``:
    the invocation's time, which no document may be dated far past (``xid_fields.not_ahead``)."""
    parsed = Parsed(notices=[])
    stream = str(payload.get("logStream", "unknown node"))
    for event in payload.get("logEvents", []):
        event_id = str(event.get("id", "?"))[:64]
        try:
            notice = _read_event(event, stream, cluster, now_ms)
        except (ValueError, XidLineError) as err:  # DocumentError, JSON, kernel line
            parsed.refused.append(Refusal(event_id, str(err)[:300]))
            continue
        except RecursionError:  # JSON nested deeper than the interpreter's stack
            parsed.refused.append(Refusal(event_id, "JSON nested too deep to read"))
            continue
        if notice is not None:
            parsed.notices.append(notice)
    return parsed


#: XIDs of one GPU and code within this many seconds are one incident. Five minutes: a storm
#: is one page, and a GPU that fails again after the window pages again.
GROUP_WINDOW_S = 300


@dataclass(frozen=True)
class XidGroup:
    """Every notice of one cluster, node, GPU (``device``) and code in one window."""

    first: XidNotice
    count: int
    last_ms: int
    pods: tuple[str, ...]
    #: When the pods were last seen on the GPU, where no notice of the group read them at its
    #: XID (each named those the exporter remembered: the GPU could not be asked); the latest
    #: of those times. None: some notice read them at its XID, or none names a pod.
    pods_seen_ms: int | None = None

    @property
    def window_start_ms(self) -> int:
        return self.first.time_ms - self.first.time_ms % (GROUP_WINDOW_S * 1000)

    @property
    def key(self) -> str:
        """The incident's identity: the same on a retried invocation, in a later batch of the
        same window, and for the exporter's document and the kernel's line of one XID (from
        either host stream); different for another GPU, code or window."""
        n = self.first
        return f"xid/{n.cluster}/{n.node}/{device(n)}/{n.code}/{self.window_start_ms}"


def device(notice: XidNotice) -> str:
    """The GPU an XID names, one way for both sources: its PCI bus id in the kernel's form
    where known (``xid_fields.pci_device``), else the exporter's GPU index."""
    return fields.pci_device(notice.pci_bus_id) if notice.pci_bus_id else notice.gpu


def group_xids(notices: list[XidNotice]) -> list[XidGroup]:
    """Notices grouped per cluster, node, GPU (``device``), code and window, in order of
    first sight. A group's ``first`` is its earliest exporter notice where it has one (which
    names the GPU by index), else its earliest notice."""
    groups: dict[tuple[str, str, str, int, int], list[XidNotice]] = {}
    for notice in notices:
        window = notice.time_ms // (GROUP_WINDOW_S * 1000)
        key = (notice.cluster, notice.node, device(notice), notice.code, window)
        groups.setdefault(key, []).append(notice)
    out = []
    for members in groups.values():
        pods: dict[str, None] = {}
        for member in members:
            pods.update(dict.fromkeys(member.pods))
        seen = [n.pods_seen_ms for n in members if n.pods]
        times = [t for t in seen if t is not None]
        last_seen = max(times) if times and len(times) == len(seen) else None
        exporter = [n for n in members if n.from_exporter]
        out.append(
            XidGroup(
                first=min(exporter or members, key=lambda n: n.time_ms),
                count=len(members),
                last_ms=max(n.time_ms for n in members),
                pods=tuple(pods),
                pods_seen_ms=last_seen,
            )
        )
    return out
