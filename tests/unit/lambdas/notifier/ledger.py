"""The sent ledger in moto's DynamoDB, its table as the notifier's construct makes it (one
string partition key, ``sent_ledger.KEY``), for the send loop's tests."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from moto import mock_aws

from lambdas.notifier.sent_ledger import KEY, SentLedger

TABLE = "gpu-insights-train-sent"


@contextmanager
def moto_ledger() -> Iterator[tuple[SentLedger, Any]]:
    """The ledger, and the DynamoDB client under it (to read the claims)."""
    with mock_aws():
        dynamodb = boto3.client(
            "dynamodb", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        dynamodb.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": KEY, "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": KEY, "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield SentLedger(dynamodb, TABLE), dynamodb
