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
"""

from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

KEY: Final = "incident"
EXPIRES: Final = "expires_at"
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


class LedgerError(Exception):
    """The ledger could not be read or written: raised so that Lambda retries."""


class SentLedger:
    def __init__(self, dynamodb: Any, table: str) -> None:
        self.dynamodb = dynamodb
        self.table = table

    def claim(self, key: str, now_s: float) -> bool:
        """True if this call is the first to claim the incident."""
        size = len(key.encode())
        if size > MAX_KEY_BYTES:
            raise LedgerError(
                f"claiming {key[:80]}...: the key is {size} bytes; DynamoDB takes {MAX_KEY_BYTES}"
            )
        try:
            self.dynamodb.put_item(
                TableName=self.table,
                Item={KEY: {"S": key}, EXPIRES: {"N": str(int(now_s) + KEEP_S)}},
                ConditionExpression="attribute_not_exists(#k)",
                ExpressionAttributeNames={"#k": KEY},
            )
        except ClientError as err:
            if err.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise LedgerError(f"claiming {key} in {self.table}: {err}") from err
        except BotoCoreError as err:
            raise LedgerError(f"claiming {key} in {self.table}: {err}") from err
        return True

    def release(self, key: str) -> None:
        """Forget a claim whose message was not sent, so that the retry sends it."""
        try:
            self.dynamodb.delete_item(TableName=self.table, Key={KEY: {"S": key}})
        except (ClientError, BotoCoreError) as err:
            raise LedgerError(f"releasing {key} in {self.table}: {err}") from err
