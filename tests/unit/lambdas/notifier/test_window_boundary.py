"""One XID across a 5-minute boundary is one page: the exporter's document 2 s before a window
ends and the kernel's line 3 s after it share the GPU's PCI bus, and the sent ledger (moto's
DynamoDB) pages an XID only where its GPU and code's last page is at least the span away.
Retried, replayed in either order, or claimed by two invocations, it pages once; a delivery
that fails leaves nothing claimed, so the retry sends it."""

import json
from collections.abc import Iterator
from typing import Any

import pytest

from lambdas.notifier import handler as notifier
from lambdas.notifier.channels import ChannelError, Delivery
from lambdas.notifier.incidents import Deployment, from_xid_group
from lambdas.notifier.messages import GROUP_WINDOW_S, group_xids, parse_log_events
from lambdas.notifier.notification import Incident
from lambdas.notifier.sent_ledger import Claim, SentLedger
from tests.unit.lambdas.notifier.ledger import moto_ledger

NODE = "ip-10-0-12-34.ec2.internal"
#: 2026-03-02 14:05:00 UTC: a window boundary.
BOUNDARY_MS = 1_772_460_300_000
DEPLOYMENT = Deployment(
    cluster="train", region="us-east-1", gpu_dashboard="gpu-insights-train-gpu-node", alarm_kinds={}
)


class Shown:
    """The SNS channel's place in the loop: it records each page it is handed."""

    def __init__(self) -> None:
        self.pages: list[Incident] = []

    @property
    def name(self) -> str:
        return "sns"

    def deliver(self, incident: Incident, *, deadline_s: float | None = None) -> Delivery:
        self.pages.append(incident)
        return Delivery(self.name, str(len(self.pages)))


def _exporter(at_ms: int) -> dict[str, Any]:
    document = {
        "_aws": {"Timestamp": at_ms},
        "ClusterName": "train",
        "NodeName": NODE,
        "GpuIndex": "1",
        "XidCode": "79",
        "PciBusId": "00000000:53:00.0",
    }
    return {"logStream": NODE, "logEvents": [
        {"id": "e", "timestamp": at_ms + 500, "message": json.dumps(document)}
    ]}  # fmt: skip


def _kernel(at_ms: int) -> dict[str, Any]:
    line = json.dumps({"message": "NVRM: Xid (PCI:0000:53:00): 79, pid=1, GPU has fallen off"})
    return {
        "logStream": f"{NODE}.host.dmesg",
        "logEvents": [{"id": "k", "timestamp": at_ms, "message": line}],
    }


def _incidents(payload: dict[str, Any]) -> list[Incident]:
    notices = parse_log_events(payload, cluster="train").notices
    return [from_xid_group(g, DEPLOYMENT) for g in group_xids(notices)]


#: The send loop's ledger, and the client under it.
Ledger = tuple[SentLedger, Any]


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    with moto_ledger() as made:
        yield made


def _pages(ledger: Ledger, *batches: dict[str, Any]) -> list[str]:
    shown = Shown()
    for batch in batches:
        notifier.send([shown], ledger[0], _incidents(batch), BOUNDARY_MS / 1000)
    return [page.title for page in shown.pages]


def test_one_xid_across_a_window_boundary_is_one_page(ledger: Ledger) -> None:
    """Before: two critical pages, "GPU 1" and "GPU PCI 0000:53:00"."""
    before, after = _exporter(BOUNDARY_MS - 2_000), _kernel(BOUNDARY_MS + 3_000)
    assert _pages(ledger, before, after, before, after) == [f"XID 79 on {NODE} GPU 1"]


def test_in_either_order(ledger: Ledger) -> None:
    pages = _pages(ledger, _kernel(BOUNDARY_MS + 3_000), _exporter(BOUNDARY_MS - 2_000))
    assert pages == [f"XID 79 on {NODE} GPU PCI 0000:53:00"]


def test_the_same_gpu_failing_again_a_window_later_pages_again(ledger: Ledger) -> None:
    span = GROUP_WINDOW_S * 1000
    first, again = _exporter(BOUNDARY_MS - 2_000), _exporter(BOUNDARY_MS - 2_000 + span)
    assert len(_pages(ledger, first, again)) == 2
    # Another GPU's XID beside the first is its own page.
    other = _kernel(BOUNDARY_MS + 3_000)
    other["logEvents"][0]["message"] = other["logEvents"][0]["message"].replace(":53:", ":54:")
    assert len(_pages(ledger, other)) == 1


def test_two_invocations_claiming_beside_each_other_page_once(ledger: Ledger) -> None:
    """Both claim the GPU and code's last page time with one conditional write each: the
    first pages, and the second finds the time."""
    (early,) = _incidents(_exporter(BOUNDARY_MS - 2_000))
    (late,) = _incidents(_kernel(BOUNDARY_MS + 3_000))
    assert early.near is not None
    assert late.near is not None
    assert early.near.key == late.near.key
    now_s = BOUNDARY_MS / 1000
    assert [
        ledger[0].claim(late.key, now_s, late.near),
        ledger[0].claim(early.key, now_s, early.near),
    ] == [Claim.NEW, Claim.HELD]


class FailsOnce(Shown):
    """Refuses its first page, as a channel that is down for a moment would."""

    def deliver(self, incident: Incident, *, deadline_s: float | None = None) -> Delivery:
        if not self.pages:
            self.pages.append(incident)
            raise ChannelError("sns: down for a moment")
        return super().deliver(incident, deadline_s=deadline_s)


def test_a_failed_delivery_releases_the_gpus_time_so_the_retry_pages(ledger: Ledger) -> None:
    (incident,) = _incidents(_exporter(BOUNDARY_MS - 2_000))
    channel = FailsOnce()
    with pytest.raises(notifier.PublishError, match="down for a moment"):
        notifier.send([channel], ledger[0], [incident], BOUNDARY_MS / 1000)
    assert ledger[1].scan(TableName="gpu-insights-train-sent")["Items"] == []
    assert notifier.send([channel], ledger[0], [incident], BOUNDARY_MS / 1000) == 1
    # The kernel's line after the boundary is still the same incident.
    (kernel,) = _incidents(_kernel(BOUNDARY_MS + 3_000))
    assert notifier.send([channel], ledger[0], [kernel], BOUNDARY_MS / 1000) == 0
