"""XID errors: what each code means, how bad it is, and how to read one from the kernel log.

Codes, meanings and actions follow NVIDIA's "XID Errors" catalogue
(https://docs.nvidia.com/deploy/xid-errors/, r570 edition) and the GPU debug guidelines
(https://docs.nvidia.com/deploy/gpu-debug-guidelines/). "Fatal" means the catalogue's action
is a GPU reset, a node reboot or a hardware check: the GPU cannot be trusted with work until
someone acts. Everything else is informational: usually an application fault (a bad kernel,
an illegal address) that the driver contained.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final


class XidSeverity(StrEnum):
    FATAL = "fatal"
    INFO = "info"


@dataclass(frozen=True)
class XidCode:
    code: int
    meaning: str
    severity: XidSeverity


def _table(*rows: tuple[int, str, XidSeverity]) -> dict[int, XidCode]:
    return {code: XidCode(code, meaning, severity) for code, meaning, severity in rows}


_F, _I = XidSeverity.FATAL, XidSeverity.INFO

XID_CODES: Final[dict[int, XidCode]] = _table(
    (8, "GPU stopped processing: engine timed out", _I),
    (13, "Graphics engine exception (application fault, such as an out-of-range access)", _I),
    (31, "GPU memory page fault (application made an illegal memory access)", _I),
    (32, "Invalid or corrupted push buffer stream", _I),
    (38, "Driver firmware error", _I),
    (43, "GPU stopped processing: a channel hit an error (application fault)", _I),
    (45, "Preemptive cleanup after earlier errors (a process was killed)", _I),
    (48, "Double-bit ECC error: uncorrectable memory error", _F),
    (61, "Internal micro-controller breakpoint or warning", _I),
    (62, "Internal micro-controller halt", _F),
    (63, "ECC page retirement or row remapping recorded: reset the GPU to apply it", _F),
    (64, "ECC page retirement or row remapping failed", _F),
    (68, "Video processor exception", _I),
    (69, "Graphics engine class error", _I),
    (74, "NVLink error", _F),
    (79, "GPU has fallen off the bus", _F),
    (92, "High single-bit ECC error rate", _I),
    (94, "Contained uncorrectable ECC error: reset the GPU", _F),
    (95, "Uncontained uncorrectable ECC error: reset the GPU and drain the node", _F),
    (109, "Context switch timeout", _I),
    (119, "GSP RPC timeout: firmware stopped responding", _F),
    (120, "GSP error: firmware fault", _F),
    (121, "C2C link error", _F),
    (140, "Unrecovered ECC error", _F),
    (154, "GPU recovery action changed: see the recovery action the driver requests", _F),
)

#: The codes an alarm must treat as needing action now.
FATAL_XID_CODES: Final[frozenset[int]] = frozenset(
    code for code, row in XID_CODES.items() if row.severity is XidSeverity.FATAL
)


def describe_xid(code: int) -> XidCode:
    """The table's row, or an informational row for a code the table does not know."""
    return XID_CODES.get(code, XidCode(code, f"XID {code} (not in the catalogue here)", _I))


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
