"""The fields of an XID log event, each checked before it is used: a document that fails one
is refused with a ``DocumentError`` naming the field, counted, and never stops the others of
its batch. Pure logic, no AWS.

Why each check exists: an exporter's log group can hold anything a pod wrote to the agent's EMF
listener (docs/paging.md, "Who can write an XID"), so a field is read as the exporter writes it
or not at all. ``XidCode`` 1e400 is infinity to ``json``; a ``NodeName`` over 2,048 bytes makes
a ledger key DynamoDB refuses ("The maximum length of a partition key value is 2048 bytes",
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Constraints.html#limits-partition-sort-keys);
bounding every part keeps each key far below that.
"""

import re
from typing import Any, Final

from gpu_insights_agent.contract.resource_names import EKS_CLUSTER
from gpu_insights_agent.contract.xid import MAX_XID_CODE
from lambdas.shared.events import EARLIEST_EPOCH, LATEST_EPOCH

#: Kubernetes object names of the DNS subdomain kind (a node's, a pod's): "no more than 253
#: characters; contain only lowercase alphanumeric characters, '-' or '.'; start and end with an
#: alphanumeric character"; a namespace is a DNS label ("at most 63 characters", no '.')
#: (https://kubernetes.io/docs/concepts/overview/working-with-objects/names/).
K8S_SUBDOMAIN: Final = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
K8S_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
#: A GPU's index as the exporter writes it (``-1`` where NVML could not say which GPU).
_GPU_INDEX: Final = re.compile(r"-1|[0-9]{1,4}")
#: A pod UID as the exporter reads it from a cgroup path (pod_attribution.py): hex and dashes.
_POD_UID: Final = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,63}")
#: A PCI bus id as NVML (``00000000:53:00.0``) and the kernel (``0000:53:00``) print it.
PCI_BUS_ID: Final = re.compile(
    r"(?P<domain>[0-9A-Fa-f]{4,8}):(?P<bus>[0-9A-Fa-f]{2}):(?P<device>[0-9A-Fa-f]{2})(?:\.[0-7])?"
)
#: How the exporter says it learnt of the XID (``nvml``, ``lost``): a short word.
_SOURCE: Final = re.compile(r"[a-z][a-z_-]{0,31}")
#: More pods than a node runs (kubelet's default maxPods is 110) is no exporter document.
MAX_PODS: Final = 110
#: A host name from a kernel log record or its stream: a DNS name's length at most.
MAX_HOST_BYTES: Final = 253
#: Epoch milliseconds the notifier accepts as an event's time (years 2000 to 2199).
EARLIEST_MS: Final = int(EARLIEST_EPOCH * 1000)
LATEST_MS: Final = int(LATEST_EPOCH * 1000)


#: How far after its log event's time (and after now) an exporter document may be dated: the
#: exporter stamps it when the GPU reported the XID, before the agent writes the line, on a
#: node whose clock chrony keeps to Amazon Time Sync, so a document dated later was written
#: so on purpose or by a broken clock. One dated ahead would claim the ledger key of a window
#: to come (up to the ledger's 7 days), and the real XID of that window would page no one.
MAX_AHEAD_MS: Final = 60_000


class DocumentError(ValueError):
    """One log event the notifier refuses; the message names the field and why."""


def _short(value: Any) -> str:
    """A value for a refusal's log line: its repr, cut, so a huge field stays one short line."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


def xid_code(value: Any) -> int:
    """``XidCode``: a whole number 1 to MAX_XID_CODE, as a dimension string or a JSON integer."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 4:
        code = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        code = value
    else:
        raise DocumentError(f"XidCode {_short(value)} is not a whole number")
    if not 1 <= code <= MAX_XID_CODE:
        raise DocumentError(f"XidCode {_short(value)} is not an XID code (1 to {MAX_XID_CODE})")
    return code


def cluster_name(value: Any, expected: str) -> str:
    """``ClusterName``: this deployment's cluster (its log group holds no other's documents)."""
    if not isinstance(value, str) or not EKS_CLUSTER.fits(value):
        raise DocumentError(f"ClusterName {_short(value)} is not an EKS cluster name")
    if value != expected:
        raise DocumentError(f"ClusterName {_short(value)} is not this deployment's ({expected})")
    return value


def node_name(value: Any) -> str:
    """``NodeName``: a Kubernetes node name."""
    if not isinstance(value, str) or not K8S_SUBDOMAIN.fullmatch(value):
        raise DocumentError(f"NodeName {_short(value)} is not a Kubernetes node name")
    return value


def gpu_index(value: Any) -> str:
    """``GpuIndex``: the GPU's index as a string (the exporter's dimension value)."""
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(text, str) or not _GPU_INDEX.fullmatch(text):
        raise DocumentError(f"GpuIndex {_short(value)} is not a GPU index")
    return text


def source(value: Any) -> str:
    if not isinstance(value, str) or not _SOURCE.fullmatch(value):
        raise DocumentError(f"XidSource {_short(value)} is not a source name")
    return value


def pod_uids(value: Any) -> tuple[str, ...]:
    """``PodUids``: absent, or a list of at most MAX_PODS pod UIDs."""
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_PODS:
        raise DocumentError(f"PodUids {_short(value)} is not a list of at most {MAX_PODS} UIDs")
    for uid in value:
        if not isinstance(uid, str) or not _POD_UID.fullmatch(uid):
            raise DocumentError(f"PodUids has {_short(uid)}, which is not a pod UID")
    return tuple(value)


def pod_names(value: Any) -> tuple[str, ...]:
    """``Pods``: absent, or a list of at most MAX_PODS ``namespace/name`` strings."""
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_PODS:
        raise DocumentError(f"Pods {_short(value)} is not a list of at most {MAX_PODS} pods")
    for pod in value:
        namespace, _, name = pod.partition("/") if isinstance(pod, str) else ("", "", "")
        if not K8S_LABEL.fullmatch(namespace) or not K8S_SUBDOMAIN.fullmatch(name):
            raise DocumentError(f"Pods has {_short(pod)}, which is not namespace/name")
    return tuple(value)


def pci_bus_id(value: Any) -> str | None:
    """``PciBusId``: absent, or NVML's PCI bus id of the GPU."""
    if value is None:
        return None
    if not isinstance(value, str) or not PCI_BUS_ID.fullmatch(value):
        raise DocumentError(f"PciBusId {_short(value)} is not a PCI bus id")
    return value.lower()


def same_pci_device(a: str, b: str) -> bool:
    """Whether two PCI bus ids name one device: NVML pads the domain to 8 digits and adds the
    function (``00000000:53:00.0``), the kernel's XID line prints 4 and none (``0000:53:00``)."""
    ma, mb = PCI_BUS_ID.fullmatch(a), PCI_BUS_ID.fullmatch(b)
    if ma is None or mb is None:
        return False
    return (int(ma["domain"], 16), ma["bus"].lower(), ma["device"].lower()) == (
        int(mb["domain"], 16),
        mb["bus"].lower(),
        mb["device"].lower(),
    )


def pci_device(value: str) -> str:
    """One form for a PCI bus id, whichever printed it, so that the exporter's XID and the
    kernel's line of it key one incident. NVML's ``busId`` is "the tuple
    domain:bus:device.function PCI identifier" (https://docs.nvidia.com/deploy/nvml-api/
    structnvmlPciInfo__t.html; ``00000000:53:00.0``, an 8-digit domain); the driver's line is
    ``NVRM: Xid (PCI:0000:53:00): 79`` (a 4-digit domain, no function; the project's
    contract/xid.py reads it). Both become the kernel's form: the domain as 4 hex digits (more
    where it has more), bus and device in lower case, no function (a GPU is function 0).
    ``value`` must fit ``PCI_BUS_ID``."""
    match = PCI_BUS_ID.fullmatch(value)
    if match is None:
        raise DocumentError(f"PCI bus id {_short(value)} is not a PCI bus id")
    return f"{int(match['domain'], 16):04x}:{match['bus'].lower()}:{match['device'].lower()}"


def _epoch_ms(value: Any, what: str) -> int:
    """Epoch milliseconds in the years 2000 to 2199."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise DocumentError(f"{what} {_short(value)} is not epoch milliseconds")
    if not EARLIEST_MS <= value < LATEST_MS:
        raise DocumentError(f"{what} {_short(value)} is not in 2000 to 2199")
    return value


def not_ahead(stamp_ms: int, latest_ms: int) -> int:
    """A document's time, refused where it is more than ``MAX_AHEAD_MS`` after ``latest_ms``
    (its log event's time, or now where that is earlier)."""
    if stamp_ms > latest_ms + MAX_AHEAD_MS:
        raise DocumentError(
            f"_aws.Timestamp {stamp_ms} is {(stamp_ms - latest_ms) / 1000:.0f} s after its log "
            f"event's time or now (at most {MAX_AHEAD_MS // 1000} s)"
        )
    return stamp_ms


def event_time_ms(value: Any) -> int:
    """A log event's ``timestamp``: epoch milliseconds in the years 2000 to 2199."""
    return _epoch_ms(value, "log event timestamp")


def pods_last_seen_ms(value: Any) -> int | None:
    """``PodsLastSeenMs``: absent (the pods were read at the XID), or when the exporter last
    read the pods it names (the GPU could not be asked at the XID), epoch milliseconds."""
    return None if value is None else _epoch_ms(value, "PodsLastSeenMs")


def host_name(value: Any, what: str) -> str:
    """A host name from a kernel log record or its stream: printable ASCII, a DNS name's
    length at most."""
    if (
        not isinstance(value, str)
        or not value
        or len(value) > MAX_HOST_BYTES
        or not all(" " < c <= "~" for c in value)
    ):
        raise DocumentError(f"{what} {_short(value)} is not a host name")
    return value
