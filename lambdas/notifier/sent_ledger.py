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
so the function's role needs nothing more for it.

An XID's key names a fixed 5-minute window, and one XID can straddle two: the exporter's
document 2 s before a window ends, the kernel's line 3 s after. So an XID's claim (``Near``)
is two conditional writes. First its window's key, as any claim: a retry, a replay or a later
batch of the same window finds it. Then the GPU and code's own item (``Near.key``), which
holds the time of its last page (``AT``): updated to this incident's time only where it is
absent or at least the span away ("attribute_not_exists(#k) OR #at <= :lo OR #at >= :hi",
``UpdateItem``). One conditional write to one item succeeds for exactly one writer, so of two
invocations claiming the two sides of a boundary at once, one pages and the other finds the
time; where the update is refused, the window's key stays claimed (it is the same incident,
``Claim.HELD``) and nothing is sent. A delivery that fails releases both: the window's key is
deleted and the GPU's time put back as it was (the claim kept the old value), so the retry
sends it.
"""

from dataclasses import replace
from enum import Enum
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from lambdas.notifier.notification import Near

KEY: Final = "incident"
EXPIRES: Final = "expires_at"
#: "The maximum length of a partition key value is 2048 bytes" (Constraints in Amazon DynamoDB,
#: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Constraints.html#limits-partition-sort-keys).
MAX_KEY_BYTES: Final = 2048
#: Keys outlive every retry and every XID window by far; TTL then removes them.
KEEP_S: Final = 7 * 24 * 3600
#: On a GPU and code's item: when its last page's incident happened (epoch milliseconds).
AT: Final = "at_ms"
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


def claim_near(near: Near | None, channel: str, *, first: str) -> Near | None:
    """``near`` with its GPU and code's key on ``channel`` (``claim_key``)."""
    if near is None:
        return None
    return replace(near, key=claim_key(near.key, channel, first=first))


class LedgerError(Exception):
    """The ledger could not be read or written: raised so that Lambda retries."""


class SentLedger:
    def __init__(self, dynamodb: Any, table: str) -> None:
        self.dynamodb = dynamodb
        self.table = table
        #: Each claimed key's GPU and code item as it was before the claim (its ``Near``, old
        #: time and expiry), to put back if the delivery fails.
        self._before: dict[str, tuple[Near, Any, Any]] = {}

    def claim(self, key: str, now_s: float, near: Near | None = None) -> Claim:
        """``Claim.NEW`` if this call is the first to claim the incident (with ``near``: and
        no page of the same GPU and code is within ``near.span_ms`` of ``near.at_ms``), else
        what the claim it found says."""
        for each in (key,) if near is None else (key, near.key):
            size = len(each.encode())
            if size > MAX_KEY_BYTES:
                raise LedgerError(
                    f"claiming {each[:80]}...: the key is {size} bytes; DynamoDB takes "
                    f"{MAX_KEY_BYTES}"
                )
        found = self._claim(key, now_s)
        if found is not Claim.NEW or near is None:
            return found
        try:
            return Claim.NEW if self._claim_near(key, now_s, near) else Claim.HELD
        except LedgerError:
            self.release(key)
            raise

    def _claim(self, key: str, now_s: float) -> Claim:
        """The window's key: ``Claim.NEW``, or what the claim found there says."""
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

    def _claim_near(self, key: str, now_s: float, near: Near) -> bool:
        """Set the GPU and code's last page time to ``near.at_ms`` where it is at least the
        span away; False (the window's key kept: the same incident) where it is not."""
        try:
            answer = self.dynamodb.update_item(
                TableName=self.table,
                Key={KEY: {"S": near.key}},
                UpdateExpression="SET #at = :at, #e = :e",
                ConditionExpression="attribute_not_exists(#k) OR #at <= :lo OR #at >= :hi",
                ExpressionAttributeNames={"#k": KEY, "#at": AT, "#e": EXPIRES},
                ExpressionAttributeValues={
                    ":at": {"N": str(near.at_ms)},
                    ":e": {"N": str(int(now_s) + KEEP_S)},
                    ":lo": {"N": str(near.at_ms - near.span_ms)},
                    ":hi": {"N": str(near.at_ms + near.span_ms)},
                },
                ReturnValues="UPDATED_OLD",
            )
        except ClientError as err:
            if err.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise LedgerError(f"claiming {near.key} in {self.table}: {err}") from err
        except BotoCoreError as err:
            raise LedgerError(f"claiming {near.key} in {self.table}: {err}") from err
        old = answer.get("Attributes", {})
        self._before[key] = (near, old.get(AT), old.get(EXPIRES))
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
        """Forget a claim whose message was not sent, so that the retry sends it: its key, and
        where the claim set its GPU and code's last page time, that time as it was."""
        try:
            self.dynamodb.delete_item(TableName=self.table, Key={KEY: {"S": key}})
            if key in self._before:
                self._restore(*self._before.pop(key))
        except (ClientError, BotoCoreError) as err:
            raise LedgerError(f"releasing {key} in {self.table}: {err}") from err

    def _restore(self, near: Near, at: Any, expires: Any) -> None:
        """The GPU and code's item as it was before ``near``'s claim, if the claim's time is
        still the one it holds (a later page's time is left alone)."""
        mine = {":mine": {"N": str(near.at_ms)}}
        if at is None:
            self.dynamodb.delete_item(
                TableName=self.table,
                Key={KEY: {"S": near.key}},
                ConditionExpression="#at = :mine",
                ExpressionAttributeNames={"#at": AT},
                ExpressionAttributeValues=mine,
            )
            return
        self.dynamodb.update_item(
            TableName=self.table,
            Key={KEY: {"S": near.key}},
            UpdateExpression="SET #at = :at, #e = :e",
            ConditionExpression="#at = :mine",
            ExpressionAttributeNames={"#at": AT, "#e": EXPIRES},
            ExpressionAttributeValues={":at": at, ":e": expires, **mine},
        )
