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

A publish whose request was sent whole but whose answer came late (a webhook that answers
after its deadline) may have been shown: its claim is kept and marked (``LATE_POSTS`` 1), so a
later invocation re-sends it once, with a longer deadline, and never again (``Claim``). All of
it is ``PutItem`` (the claim's condition failure returns the item it found,
``ReturnValuesOnConditionCheckFailure``: https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html),
so the function's role needs nothing more.
"""

from enum import Enum
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

KEY: Final = "incident"
EXPIRES: Final = "expires_at"
#: "The maximum length of a partition key value is 2048 bytes" (Constraints in Amazon DynamoDB,
#: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Constraints.html#limits-partition-sort-keys).
MAX_KEY_BYTES: Final = 2048
#: Keys outlive every retry and every XID window by far; TTL then removes them.
KEEP_S: Final = 7 * 24 * 3600
#: Posts of the incident sent whole whose answer came late: 1, the first (one re-send is
#: due); 2, the re-send was taken too. Absent: delivered, or being delivered.
LATE_POSTS: Final = "late_posts"


class Claim(Enum):
    """What a claim found."""

    #: This call is the first: deliver it.
    NEW = "new"
    #: Claimed before: delivered, or being delivered now.
    HELD = "held"
    #: Its one post was sent and answered late: it may be re-sent once (``take_resend``).
    LATE = "late"
    #: Sent twice and answered late both times: not sent again, and not known to be shown.
    UNCONFIRMED = "unconfirmed"


def claim_key(incident_key: str, channel: str, *, first: str) -> str:
    """The ledger key of one incident on one channel. The ``first`` channel's is the incident
    key itself: the keys in the table from before there were channels stay valid, so a
    deployment's upgrade re-sends nothing."""
    return incident_key if channel == first else f"{incident_key}#{channel}"


class LedgerError(Exception):
    """The ledger could not be read or written: raised so that Lambda retries."""


class SentLedger:
    def __init__(self, dynamodb: Any, table: str) -> None:
        self.dynamodb = dynamodb
        self.table = table

    def claim(self, key: str, now_s: float) -> Claim:
        """``Claim.NEW`` if this call is the first to claim the incident, else what the claim
        it found says."""
        size = len(key.encode())
        if size > MAX_KEY_BYTES:
            raise LedgerError(
                f"claiming {key[:80]}...: the key is {size} bytes; DynamoDB takes {MAX_KEY_BYTES}"
            )
        try:
            self.dynamodb.put_item(
                TableName=self.table,
                Item=self._item(key, now_s),
                ConditionExpression="attribute_not_exists(#k)",
                ExpressionAttributeNames={"#k": KEY},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as err:
            if err.response["Error"]["Code"] == "ConditionalCheckFailedException":
                found: Any = err.response.get("Item") or {}
                late = found.get(LATE_POSTS, {}).get("N")
                return {"1": Claim.LATE, "2": Claim.UNCONFIRMED}.get(str(late), Claim.HELD)
            raise LedgerError(f"claiming {key} in {self.table}: {err}") from err
        except BotoCoreError as err:
            raise LedgerError(f"claiming {key} in {self.table}: {err}") from err
        return Claim.NEW

    def _item(self, key: str, now_s: float, late: int | None = None) -> dict[str, Any]:
        item = {KEY: {"S": key}, EXPIRES: {"N": str(int(now_s) + KEEP_S)}}
        if late is not None:
            item[LATE_POSTS] = {"N": str(late)}
        return item

    def _put(self, item: dict[str, Any], what: str, **condition: Any) -> bool:
        """Write the item; False where ``condition`` failed."""
        try:
            self.dynamodb.put_item(TableName=self.table, Item=item, **condition)
        except ClientError as err:
            if condition and err.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise LedgerError(f"{what} {item[KEY]['S']} in {self.table}: {err}") from err
        except BotoCoreError as err:
            raise LedgerError(f"{what} {item[KEY]['S']} in {self.table}: {err}") from err
        return True

    def mark_late(self, key: str, now_s: float, *, posts: int = 1) -> None:
        """Keep the claim of a page whose post was sent whole and answered late: ``posts`` 1,
        its first (one re-send is due); 2, the re-send too (none more)."""
        self._put(self._item(key, now_s, posts), "marking late")

    def take_resend(self, key: str, now_s: float) -> bool:
        """Take the one re-send of a late claim: True for exactly one caller."""
        return self._put(
            self._item(key, now_s, 2),
            "taking the re-send of",
            ConditionExpression="#late = :one",
            ExpressionAttributeNames={"#late": LATE_POSTS},
            ExpressionAttributeValues={":one": {"N": "1"}},
        )

    def confirm(self, key: str, now_s: float) -> None:
        """The re-send was answered: the claim holds as any delivered page's."""
        self._put(self._item(key, now_s), "confirming")

    def release(self, key: str) -> None:
        """Forget a claim whose message was not sent, so that the retry sends it."""
        try:
            self.dynamodb.delete_item(TableName=self.table, Key={KEY: {"S": key}})
        except (ClientError, BotoCoreError) as err:
            raise LedgerError(f"releasing {key} in {self.table}: {err}") from err
