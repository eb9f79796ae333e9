"""XID errors: what each code means, how bad it is, and how to read one from the kernel log.

Each row is sourced code by code from NVIDIA's XID catalogue, "Analyzing Xid Errors with the
Xid Catalog" (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, the r575
catalogue with its "Resolution Bucket (Immediate Action)" column), cross-checked against the
EKS node monitoring agent's ``WellKnownXidCodes`` (aws/eks-node-monitoring-agent, the dcgm
monitor: 46, 48, 54, 62, 63, 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 142, 143, 151, 155,
156, 158), the codes on which it sets ``AcceleratedHardwareReady`` to false so that EKS node
auto repair replaces the node.

"Fatal" means NVIDIA's immediate action is more than restarting the application: a GPU reset
(RESET_GPU, WORKFLOW_XID_48, WORKFLOW_NVLINK_ERR), a power cycle (RESTART_BM, RESTART_VM), a
hardware check (CHECK_MECHANICALS) or support (CONTACT_SUPPORT). RESTART_APP, IGNORE and
XID_154 are informational. Where the two sources disagree the row's ``note`` says which one
the table follows and why; today that is only XID 63 (NVIDIA: IGNORE; the agent and EC2:
replace), and the fatal set equals the agent's list.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final


class XidSeverity(StrEnum):
    FATAL = "fatal"
    INFO = "info"


#: NVIDIA's immediate-action buckets that need someone to act on the GPU or node.
FATAL_ACTIONS: Final = frozenset(
    {
        "RESET_GPU",
        "WORKFLOW_XID_48",
        "WORKFLOW_NVLINK_ERR",
        "RESTART_BM",
        "RESTART_VM",
        "CHECK_MECHANICALS",
        "CONTACT_SUPPORT",
    }
)

#: The EKS node monitoring agent's WellKnownXidCodes (the codes that make node auto repair act).
EKS_NODE_MONITORING_AGENT_XIDS: Final = frozenset(
    {46, 48, 54, 62, 63, 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 142, 143, 151, 155, 156, 158}
)


@dataclass(frozen=True)
class XidCode:
    code: int
    meaning: str
    severity: XidSeverity
    #: NVIDIA's "Resolution Bucket (Immediate Action)" for the code.
    nvidia_action: str = ""
    #: Why the row's severity differs from NVIDIA's bucket or the EKS agent's list, if it does.
    note: str = ""

    @property
    def source(self) -> str:
        """Which catalogue the severity follows."""
        return "EKS node monitoring agent" if self.note else "NVIDIA XID catalogue"


def _table(*rows: tuple[int, str, str, str]) -> dict[int, XidCode]:
    table = {}
    for code, meaning, action, note in rows:
        nvidia_fatal = action in FATAL_ACTIONS
        fatal = nvidia_fatal != bool(note)  # a note records where the table departs from NVIDIA
        table[code] = XidCode(
            code, meaning, XidSeverity.FATAL if fatal else XidSeverity.INFO, action, note
        )
    return table


_XID_63_NOTE = (
    "NVIDIA's bucket is IGNORE (the remap is recorded), but the EKS node monitoring agent "
    "treats it as needing action on EC2's advice: the remap takes effect only after a GPU "
    "reset, and repeated remaps exhaust the spare rows (then XID 64). Followed: the agent."
)

XID_CODES: Final[dict[int, XidCode]] = _table(
    (8, "GPU stopped processing: engine timed out", "RESTART_APP", ""),
    (13, "Graphics engine exception (application fault, such as an out-of-range access)",
     "RESTART_APP", ""),
    (31, "GPU memory page fault (application made an illegal memory access)", "RESTART_APP", ""),
    (32, "Invalid or corrupted push buffer stream", "RESTART_APP", ""),
    (38, "Driver firmware error", "RESTART_APP", ""),
    (43, "GPU stopped processing: a channel hit an error (application fault)", "RESTART_APP", ""),
    (45, "Preemptive cleanup after earlier errors (a process was killed)", "IGNORE", ""),
    (46, "GPU stopped processing", "RESET_GPU", ""),
    (48, "Double-bit ECC error: uncorrectable memory error", "WORKFLOW_XID_48", ""),
    (54, "Auxiliary power is not connected to the GPU board", "CHECK_MECHANICALS", ""),
    (61, "Internal micro-controller breakpoint or warning", "IGNORE", ""),
    (62, "Internal micro-controller halt", "RESET_GPU", ""),
    (63, "ECC page retirement or row remapping recorded: reset the GPU to apply it", "IGNORE",
     _XID_63_NOTE),
    (64, "ECC page retirement or row remapping failed", "RESET_GPU", ""),
    (68, "Video processor exception", "RESTART_APP", ""),
    (69, "Graphics engine class error", "RESTART_APP", ""),
    (74, "NVLink error", "WORKFLOW_NVLINK_ERR", ""),
    (79, "GPU has fallen off the bus", "RESTART_BM", ""),
    (92, "High single-bit ECC error rate", "IGNORE", ""),
    (94, "Contained ECC error: restart the application; reset the GPU when convenient",
     "RESTART_APP", ""),
    (95, "Uncontained ECC error: reset the GPU before applications restart", "RESET_GPU", ""),
    (109, "Context switch timeout", "RESET_GPU", ""),
    (110, "Security fault error", "RESET_GPU", ""),
    (119, "GSP RPC timeout: firmware stopped responding", "RESET_GPU", ""),
    (120, "GSP error: firmware fault", "RESET_GPU", ""),
    (121, "C2C link corrected errors (no operational impact; reset at a service window)",
     "IGNORE", ""),
    (136, "NVLink link training failed", "RESET_GPU", ""),
    (140, "Unrecovered ECC error", "RESET_GPU", ""),
    (142, "NVENC3 error", "CONTACT_SUPPORT", ""),
    (143, "GPU initialization error", "RESET_GPU", ""),
    (151, "Key rotation error (confidential computing)", "RESTART_VM", ""),
    (154, "GPU recovery action changed: summarizes the action another XID needs", "XID_154", ""),
    (155, "NVLink software-defined error (link down)", "RESET_GPU", ""),
    (156, "Resource retirement event", "RESET_GPU", ""),
    (158, "GPU fatal timeout", "RESET_GPU", ""),
)  # fmt: skip

#: The largest code read as an XID: the driver prints the code in decimal, and the kernel line's
#: pattern below reads at most 4 digits (NVIDIA's catalogue runs to the 100s today).
MAX_XID_CODE: Final = 9999

#: The codes an alarm must treat as needing action now.
FATAL_XID_CODES: Final[frozenset[int]] = frozenset(
    code for code, row in XID_CODES.items() if row.severity is XidSeverity.FATAL
)


def describe_xid(code: int) -> XidCode:
    """The table's row, or an informational row for a code the table does not know."""
    return XID_CODES.get(
        code, XidCode(code, f"XID {code} (not in the catalogue here)", XidSeverity.INFO)
    )


@dataclass(frozen=True)
class KernelXid:
    """One XID reported by the kernel driver as ``NVRM: Xid (PCI:<bus id>): <code>, ...``."""

    pci_bus_id: str
    code: int
    detail: str


# dmesg and journald prefix the driver's line with a timestamp or host; only the NVRM part
# is matched. Example: "NVRM: Xid (PCI:0000:53:00): 79, pid=1234, GPU has fallen off the bus."
_KERNEL_XID = re.compile(
    r"NVRM: Xid \(PCI:(?P<pci>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\):"
    r" (?P<code>\d{1,4})(?:, (?P<detail>.*))?$"
)
#: CloudWatch Logs filter pattern that finds the same lines in Container Insights' host logs.
KERNEL_XID_FILTER_PATTERN: Final = '"NVRM: Xid"'


class XidLineError(ValueError):
    """A kernel line that names an XID but does not follow the driver's format."""


def parse_kernel_xid_line(line: str) -> KernelXid | None:
    """The XID in a kernel log line; None for lines about something else.

    Raises XidLineError for a line that says ``NVRM: Xid`` but is malformed, so that callers
    can count it instead of guessing.
    """
    if "NVRM: Xid" not in line:
        return None
    match = _KERNEL_XID.search(line.rstrip("\r\n"))
    if match is None:
        raise XidLineError(f"malformed NVRM Xid line: {line.strip()[:200]!r}")
    if int(match["code"]) == 0:  # NVIDIA's catalogue numbers XIDs from 1 (as MAX_XID_CODE
        # bounds them above); the notifier refuses an exporter's document with code 0 too
        raise XidLineError(f"NVRM Xid line with code 0, no XID: {line.strip()[:200]!r}")
    return KernelXid(
        pci_bus_id=match["pci"].lower(),
        code=int(match["code"]),
        detail=(match["detail"] or "").strip(),
    )


@dataclass(frozen=True)
class KernelLogScan:
    xids: list[KernelXid]
    #: Lines that named an XID but could not be read; counted, never raised.
    malformed: int


def scan_kernel_log(lines: Iterable[str]) -> KernelLogScan:
    """Every XID in a kernel log (dmesg, journald, Container Insights' host log)."""
    xids: list[KernelXid] = []
    malformed = 0
    for line in lines:
        try:
            parsed = parse_kernel_xid_line(line)
        except XidLineError:
            malformed += 1
            continue
        if parsed is not None:
            xids.append(parsed)
    return KernelLogScan(xids=xids, malformed=malformed)
