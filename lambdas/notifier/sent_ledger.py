"""Which incidents were sent: a DynamoDB conditional write per incident, so a retried
invocation (Lambda retries an asynchronous invocation twice after an error) or a later batch
of the same XID window sends nothing twice.

Why DynamoDB: a ``PutItem`` with ``attribute_not_exists`` on the key succeeds for exactly one
writer and fails with ``ConditionalCheckFailedException`` for every other
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ConditionExpressions.html#Expressions.ConditionExpressions.PreventingOverwrites);
on demand it costs one write request per incident, and TTL deletes old keys for nothing
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/TTL.html). SNS FIFO
deduplication cannot serve: a FIFO topic delivers to SQS queues, not to email or HTTPS, which
is how people and Amazon Q Developer subscribe
(https://docs.aws.amazon.com/sns/latest/dg/fifo-message-delivery.html), and its deduplication
window is five minutes.

Each channel claims its own key per incident (``claim_key``), so a second channel is neither
a second page on the first nor silenced by it, and a retry re-sends on the failed channel only.

The claim comes before the publish and is released when the publish fails, so a retry sends
what failed. A function killed between the two loses that one message (at most once); the
alarm on the same metric still changes state.

An XID's key names a fixed 5-minute window, and one XID can straddle two: the exporter's
document 2 s before a window ends, the kernel's line 3 s after. So an XID's claim (``Near``)
is one ``TransactWriteItems``: its own key put with ``attribute_not_exists``, and a
``ConditionCheck`` on each neighbouring window's key that passes only where that key is
absent or was claimed at least a window's span away ("The actions are completed atomically so
that either all of them succeed, or all of them fail", TransactWriteItems,
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html).
The claim stores its time (``AT``) for the checks beside it. A retry finds its own key; a
concurrent claim of the same or a neighbouring key cancels one of the two transactions
(``TransactionConflict``: a ``LedgerError``, so its invocation is retried and then finds the
claim): one page either way. A neighbour claimed before ``AT`` was stored (by an older
version) counts as near, so nothing pages twice across the upgrade.
"""

from dataclasses import replace
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from lambdas.notifier.notification import Near

KEY: Final = "incident"
EXPIRES: Final = "expires_at"
#: When the claimed incident happened (epoch milliseconds), for a neighbour's ``Near`` check.
AT: Final = "at_ms"
#: "The maximum length of a partition key value is 2048 bytes" (Constraints in Amazon DynamoDB,
#: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Constraints.html#limits-partition-sort-keys).
MAX_KEY_BYTES: Final = 2048
#: Keys outlive every retry and every XID window by far; TTL then removes them.
KEEP_S: Final = 7 * 24 * 3600


def claim_key(incident_key: str, channel: str, *, first: str) -> str:
    """The ledger key of one incident on one channel. The ``first`` channel's is the incident
    key itself: the keys in the table from before there were channels stay valid, so a
    deployment's upgrade re-sends nothing."""
    return incident_key if channel == first else f"{incident_key}#{channel}"


def claim_near(near: Near | None, channel: str, *, first: str) -> Near | None:
    """``near`` with its neighbours' keys on ``channel`` (``claim_key``)."""
    if near is None:
        return None
    return replace(
        near,
        before=claim_key(near.before, channel, first=first),
        after=claim_key(near.after, channel, first=first),
    )


class LedgerError(Exception):
    """The ledger could not be read or written: raised so that Lambda retries."""


class SentLedger:
    def __init__(self, dynamodb: Any, table: str) -> None:
        self.dynamodb = dynamodb
        self.table = table

    def claim(self, key: str, now_s: float, near: Near | None = None) -> bool:
        """True if this call is the first to claim the incident: its key, and with ``near``,
        no neighbouring window's key claimed within ``near.span_ms`` of ``near.at_ms``."""
        for each in (key,) if near is None else (key, near.before, near.after):
            size = len(each.encode())
            if size > MAX_KEY_BYTES:
                raise LedgerError(
                    f"claiming {each[:80]}...: the key is {size} bytes; DynamoDB takes "
                    f"{MAX_KEY_BYTES}"
                )
        item = {KEY: {"S": key}, EXPIRES: {"N": str(int(now_s) + KEEP_S)}}
        try:
            if near is None:
                self.dynamodb.put_item(
                    TableName=self.table,
                    Item=item,
                    ConditionExpression="attribute_not_exists(#k)",
                    ExpressionAttributeNames={"#k": KEY},
                )
            else:
                self.dynamodb.transact_write_items(TransactItems=self._near_claim(item, near))
        except ClientError as err:
            code = err.response["Error"]["Code"]
            reasons = err.response.get("CancellationReasons") or []
            if code == "ConditionalCheckFailedException" or any(
                r.get("Code") == "ConditionalCheckFailed" for r in reasons
            ):
                return False
            raise LedgerError(f"claiming {key} in {self.table}: {err}") from err
        except BotoCoreError as err:
            raise LedgerError(f"claiming {key} in {self.table}: {err}") from err
        return True

    def _near_claim(self, item: dict[str, Any], near: Near) -> list[dict[str, Any]]:
        """The transaction of a claim with neighbours: each neighbour's key absent or claimed
        at least ``span_ms`` away (at or before ``at_ms - span_ms`` in the window before, at
        or after ``at_ms + span_ms`` in the window after), and the key itself put."""
        names = {"#k": KEY, "#at": AT}

        def check(neighbour: str, comparison: str, bound: int) -> dict[str, Any]:
            return {
                "ConditionCheck": {
                    "TableName": self.table,
                    "Key": {KEY: {"S": neighbour}},
                    "ConditionExpression": f"attribute_not_exists(#k) OR #at {comparison} :at",
                    "ExpressionAttributeNames": names,
                    "ExpressionAttributeValues": {":at": {"N": str(bound)}},
                }
            }

        return [
            check(near.before, "<=", near.at_ms - near.span_ms),
            check(near.after, ">=", near.at_ms + near.span_ms),
            {
                "Put": {
                    "TableName": self.table,
                    "Item": {**item, AT: {"N": str(near.at_ms)}},
                    "ConditionExpression": "attribute_not_exists(#k)",
                    "ExpressionAttributeNames": {"#k": KEY},
                }
            },
        ]

    def release(self, key: str) -> None:
        """Forget a claim whose message was not sent, so that the retry sends it."""
        try:
            self.dynamodb.delete_item(TableName=self.table, Key={KEY: {"S": key}})
        except (ClientError, BotoCoreError) as err:
            raise LedgerError(f"releasing {key} in {self.table}: {err}") from err
