"""The chat webhook under faults: the handler's own send loop (``handler.send``, the sent
ledger in DynamoDB, moto in process) delivering pages through the real ``WebhookChannel`` to
servers on 127.0.0.1 that answer garbage, a redirect, a slow drip of bytes, or reset the
connection. Each invocation is given the function's timeout and retried as Lambda retries an
asynchronous invocation (twice: https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html).
A page is lost if no attempt delivers it; a claim is left held if the ledger says a page was
sent that the webhook never took (it would not be sent again for the ledger's 7 days).

Printed: per fault, the pages, the faults injected, the invocations, the pages delivered, the
claims left held, the longest single delivery; then "pages lost N, claims left held N".
"""

import logging
import time
from dataclasses import dataclass
from typing import Final

import boto3
from moto import mock_aws

from lambdas.notifier import handler as notifier
from lambdas.notifier.channels import Delivery
from lambdas.notifier.config import FUNCTION_TIMEOUT_S
from lambdas.notifier.notification import Incident
from lambdas.notifier.sent_ledger import SentLedger
from lambdas.notifier.webhook import DEADLINE_S, WEBHOOK, WebhookChannel
from tests.unit.lambdas.notifier.webhook_server import FAULTS, webhook_server

PAGES: Final = 10
#: The first posts of a run that meet the fault: two, so the page is delivered on Lambda's
#: last attempt (the failed channel is skipped for the rest of its invocation).
FAULTY_POSTS: Final = 2
ATTEMPTS: Final = 3
#: A byte every second: each read is quick, the whole answer (56 bytes) would take a minute.
DRIP_S: Final = 1.0
TABLE: Final = "bench-sent"


@dataclass(frozen=True)
class FaultRun:
    fault: str
    pages: int
    injected: int
    invocations: int
    delivered: int
    claims_held: int
    longest_delivery_s: float
    #: Pages the chat showed more than once.
    resent: int

    @property
    def lost(self) -> int:
        return self.pages - self.delivered


def xid_79(node: str, gpu: int, cluster: str = "bench") -> Incident:
    """The page of an XID 79 on one GPU of ``node``."""
    return Incident(
        key=f"xid/{cluster}/{node}/{gpu}/79/1772460000000",
        severity="critical",
        kind="gpu-xid-fatal",
        title=f"XID 79 on {node} GPU {gpu}",
        what=f"GPU {gpu} on {node} reported XID 79: GPU has fallen off the bus.",
        cluster=cluster,
        node=node,
        gpu=str(gpu),
        action="Cordon and drain the node.",
    )


class _Timed(WebhookChannel):
    """The real channel, timing each delivery."""

    longest_s = 0.0

    def deliver(self, incident: Incident, *, deadline_s: float | None = None) -> Delivery:
        started = time.monotonic()
        try:
            return super().deliver(incident, deadline_s=deadline_s)
        finally:
            self.longest_s = max(self.longest_s, time.monotonic() - started)


def run(fault: str) -> FaultRun:
    with mock_aws():
        dynamodb = boto3.client(
            "dynamodb", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        dynamodb.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "incident", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "incident", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        ledger = SentLedger(dynamodb, TABLE)
        incidents = [xid_79(f"node-{n}", 0) for n in range(PAGES)]
        with webhook_server() as hook:
            hook.faults, hook.drip_s = [fault] * FAULTY_POSTS, DRIP_S
            invocations = 0
            longest = 0.0
            for _ in range(ATTEMPTS):
                invocations += 1
                channel = _Timed(lambda: hook.url)
                started = time.monotonic()

                def left(started: float = started) -> float:
                    return FUNCTION_TIMEOUT_S - (time.monotonic() - started)

                try:
                    notifier.send([channel], ledger, incidents, time.time(), time_left_s=left)
                except Exception:  # any error fails the invocation: Lambda retries it
                    continue
                finally:
                    longest = max(longest, channel.longest_s)
                break
            shown = [p["text"].splitlines()[0] for p in hook.shown]
            injected = FAULTY_POSTS - len(hook.faults)
        claims = {i["incident"]["S"] for i in dynamodb.scan(TableName=TABLE)["Items"]}
        titles = {f"{i.key}#{WEBHOOK}": f"[CRITICAL] {i.title}" for i in incidents}
        # A claim is held wrongly when the chat never showed its page.
        held = sum(1 for key in claims if titles.get(key) not in shown)
        return FaultRun(
            fault=fault,
            pages=PAGES,
            injected=injected,
            invocations=invocations,
            delivered=len(set(shown) & set(titles.values())),
            resent=len(shown) - len(set(shown)),
            claims_held=held,
            longest_delivery_s=longest,
        )


def main() -> list[FaultRun]:
    return [run(fault) for fault in FAULTS]


def line(r: FaultRun) -> str:
    """One fault's figures as printed (docs/paging.md quotes them)."""
    return (
        f"{r.fault:<9} pages {r.pages}, faults injected {r.injected}, invocations "
        f"{r.invocations}, delivered {r.delivered}/{r.pages}, re-sent {r.resent}, claims "
        f"left held {r.claims_held}, longest delivery {r.longest_delivery_s:.1f} s "
        f"(deadline {DEADLINE_S:g} s, function timeout {FUNCTION_TIMEOUT_S} s)"
    )


if __name__ == "__main__":
    logging.disable(logging.ERROR)  # each refused delivery is logged: the counts say it
    runs = main()
    for r in runs:
        print(line(r))
    print(
        f"pages lost {sum(r.lost for r in runs)}, "
        f"claims left held {sum(r.claims_held for r in runs)}"
    )
