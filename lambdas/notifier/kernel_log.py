"""Whether a node's own kernel log confirms an XID the exporter reported.

The exporter's documents reach its log group through the CloudWatch agent's EMF listener, and
any pod that can reach that listener can write a document naming the same log group: the
agent's logs exporter takes a line's log group from its ``_aws.LogGroupName`` (or top-level
``log_group_name``) where it has one (aws/amazon-cloudwatch-agent,
translator/translate/otel/exporter/awscloudwatchlogs/translator.go sets ``EmfOnly`` and
``RawLog``; amazon-contributing/opentelemetry-collector-contrib,
exporter/awscloudwatchlogsexporter/exporter.go ``logToCWLog``). The kernel's own
``NVRM: Xid (PCI:<bus>): <code>`` line reaches Container Insights' host log group through
Fluent Bit, which a pod cannot write to. So an exporter XID whose node logged the same code on
the same PCI bus within ``WINDOW_MS`` is confirmed; one with no such line is not (or not yet:
Fluent Bit ships host logs every few seconds, so a line can trail the document).

One ``FilterLogEvents`` call (and its pages, at most ``MAX_PAGES``) per batch, over the batch's
time span, whatever its nodes. Host log streams are named ``<node>.host.<file>`` (Container
Insights' Fluent Bit configuration, ``messages.STREAM_INFIX``): the node is the stream's.

A document's time is its own ``_aws.Timestamp``, which whoever wrote it chose: the read never
reaches further back than ``MAX_AGE_MS`` before now, so one backdated document cannot widen
the read for its batch; a group dated before that is "not checked: too old" on its own, and
the others are checked as ever.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from gpu_insights_agent.contract.xid import (
    KERNEL_XID_FILTER_PATTERN,
    KernelXid,
    XidLineError,
    parse_kernel_xid_line,
)
from lambdas.notifier.messages import XidGroup, kernel_record
from lambdas.notifier.xid_fields import same_pci_device

#: A kernel line this close to the exporter's report (either side) confirms it: the driver
#: logs the XID as it raises the event NVML hands the exporter.
WINDOW_MS: Final = 120_000
#: Pages of one batch's read (FilterLogEvents returns up to 10,000 events a page); an XID storm
#: past them is left unread rather than holding the function.
MAX_PAGES: Final = 5
#: How far before now a document may be dated and still be checked: an hour (a subscription
#: delivers within minutes; the agent retries a batch for less).
MAX_AGE_MS: Final = 3_600_000


@dataclass(frozen=True)
class KernelCheck:
    """What the kernel log says of one exporter XID: ``confirmed`` True or False, or None
    where the log could not be read; ``text`` says so for the page."""

    confirmed: bool | None
    text: str


@dataclass(frozen=True)
class KernelLines:
    """The kernel XID lines of a time span, by node; ``unread`` says why none could be read."""

    by_node: dict[str, list[tuple[int, KernelXid]]]
    unread: str | None = None


def read_kernel_lines(
    logs: Any,
    log_group: str,
    start_ms: int,
    end_ms: int,
    *,
    time_left_s: Callable[[], float] | None = None,
    page_s: float = 0.0,
) -> KernelLines:
    """Every kernel XID line of the host log group between the two times. ``time_left_s``: the
    time the read may still use; no page is asked for with less than ``page_s`` (one call at
    its worst) of it left, and what was read so far is kept, ``unread`` saying why no more."""
    by_node: dict[str, list[tuple[int, KernelXid]]] = {}
    token: dict[str, str] = {}
    for read in range(MAX_PAGES):
        if time_left_s is not None and time_left_s() < page_s:
            pages = f"{read} page" + ("" if read == 1 else "s")
            return KernelLines(by_node, unread=f"no time left to read past {pages}")
        try:
            page = logs.filter_log_events(
                logGroupName=log_group,
                startTime=start_ms,
                endTime=end_ms,
                filterPattern=KERNEL_XID_FILTER_PATTERN,
                **token,
            )
        except ClientError as err:
            code = err.response.get("Error", {}).get("Code", "an error")
            return KernelLines(by_node, unread=f"{log_group} could not be read ({code})")
        except BotoCoreError as err:
            return KernelLines(by_node, unread=f"{log_group} could not be read ({err})")
        for event in page.get("events", []):
            _add(by_node, event)
        if not page.get("nextToken"):
            return KernelLines(by_node)
        token = {"nextToken": page["nextToken"]}
    return KernelLines(by_node, unread=f"more than {MAX_PAGES} pages of kernel XID lines")


def _add(by_node: dict[str, list[tuple[int, KernelXid]]], event: dict[str, Any]) -> None:
    stream = str(event.get("logStreamName", ""))
    try:
        text, host = kernel_record(str(event.get("message", "")), stream)
        xid = parse_kernel_xid_line(text)
    except (ValueError, XidLineError, RecursionError):
        return
    if xid is not None and isinstance(event.get("timestamp"), int):
        by_node.setdefault(str(host), []).append((event["timestamp"], xid))


def in_reach(group: XidGroup, now_ms: int) -> bool:
    """Whether the group is dated where the kernel read reaches: no more than ``MAX_AGE_MS``
    before now. (A document dated ahead of now widens the read only into times that have no
    lines yet.)"""
    return now_ms - MAX_AGE_MS <= group.first.time_ms


def check(group: XidGroup, lines: KernelLines, now_ms: int) -> KernelCheck:
    """Whether the group's node logged its code on its GPU's bus near its time."""
    notice = group.first
    if not in_reach(group, now_ms):
        return KernelCheck(None, _too_old(notice.time_ms, now_ms))
    seen = lines.by_node.get(notice.node, [])
    start, end = notice.time_ms - WINDOW_MS, group.last_ms + WINDOW_MS
    for at, xid in seen:
        if xid.code != notice.code or not start <= at <= end:
            continue
        if notice.pci_bus_id is None:
            return KernelCheck(True, f"XID {xid.code} logged by the node (PCI {xid.pci_bus_id})")
        if same_pci_device(notice.pci_bus_id, xid.pci_bus_id):
            return KernelCheck(True, f"confirmed: NVRM: Xid (PCI:{xid.pci_bus_id}): {xid.code}")
    if lines.unread and not seen:
        return KernelCheck(None, f"not checked: {lines.unread}")
    bus = f" on PCI {notice.pci_bus_id}" if notice.pci_bus_id else ""
    return KernelCheck(
        False,
        f"unconfirmed by the kernel log: no NVRM: Xid {notice.code}{bus} from {notice.node} "
        f"within {WINDOW_MS // 60_000} minutes",
    )


def _too_old(time_ms: int, now_ms: int) -> str:
    return (
        f"not checked: too old (dated {(now_ms - time_ms) // 60_000} minutes before now; the "
        f"kernel log is read back {MAX_AGE_MS // 60_000} minutes)"
    )


def span(groups: Iterable[XidGroup], now_ms: int) -> tuple[int, int] | None:
    """The time span the exporter groups in reach (``in_reach``) need read, or None where
    there is none: never more than ``MAX_AGE_MS`` before now, whatever a document says."""
    times = [
        (g.first.time_ms, g.last_ms)
        for g in groups
        if g.first.from_exporter and in_reach(g, now_ms)
    ]
    if not times:
        return None
    return min(t[0] for t in times) - WINDOW_MS, max(t[1] for t in times) + WINDOW_MS
