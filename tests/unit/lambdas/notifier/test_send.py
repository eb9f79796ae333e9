"""The handler's send loop against a real webhook channel on localhost and the sent ledger in
moto: whatever a channel does, a page it did not deliver is not left claimed, so the retry
sends it (a held claim would keep it for the ledger's 7-day TTL)."""

import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from lambdas.notifier import budget
from lambdas.notifier import handler as notifier
from lambdas.notifier.channels import Channel, Delivery
from lambdas.notifier.notification import Incident
from lambdas.notifier.sent_ledger import LATE_POSTS, SentLedger
from lambdas.notifier.sns_channel import SnsChannel
from lambdas.notifier.webhook import DEADLINE_S, WebhookChannel
from tests.unit.lambdas.notifier.webhook_server import FAULTS, webhook_server

TABLE = "gpu-insights-train-sent"
NOW_S = 1_772_460_000.0


def _incident(n: int) -> Incident:
    return Incident(
        key=f"xid/train/node-a/{n}/79/1772460000000",
        severity="critical",
        kind="gpu-xid-fatal",
        title=f"XID 79 on node-a GPU {n}",
        what=f"GPU {n} on node-a reported XID 79: GPU has fallen off the bus.",
        cluster="train",
        node="node-a",
        gpu=str(n),
        action="Cordon and drain the node.",
    )


@pytest.fixture
def ledger() -> Iterator[tuple[SentLedger, Any]]:
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
        yield SentLedger(dynamodb, TABLE), dynamodb


def _claims(dynamodb: Any) -> list[str]:
    return sorted(i["incident"]["S"] for i in dynamodb.scan(TableName=TABLE)["Items"])


def _late(dynamodb: Any) -> list[str]:
    """The claims marked late: a post sent whole whose answer did not come in time."""
    items = dynamodb.scan(TableName=TABLE)["Items"]
    return sorted(i["incident"]["S"] for i in items if LATE_POSTS in i)


@pytest.mark.parametrize("fault", FAULTS)
def test_a_webhook_fault_releases_its_claim_and_the_retry_sends_the_page(
    fault: str, ledger: tuple[SentLedger, Any]
) -> None:
    sent, dynamodb = ledger
    with webhook_server() as hook:
        hook.faults, hook.drip_s = [fault], 0.2
        channel = WebhookChannel(lambda: hook.url, deadline_s=0.5)
        with pytest.raises(notifier.PublishError, match=r"to webhook http://127\.0\.0\.1"):
            notifier.send([channel], sent, [_incident(0)], NOW_S)
        # Released: nothing held for 7 days; a post sent whole and answered late (the drip)
        # is kept, marked for its one re-send.
        assert _claims(dynamodb) == _late(dynamodb)
        assert len(_late(dynamodb)) == (fault == "drip")
        assert notifier.send([channel], sent, [_incident(0)], NOW_S) == 1
    assert _claims(dynamodb) == ["xid/train/node-a/0/79/1772460000000#webhook"]
    assert len(hook.posts) == 2
    assert hook.gets == []


class _Broken:
    """A channel with a fault in its own code (not a refusal it names as ChannelError)."""

    def __init__(self) -> None:
        self.routes: dict[str, str] = {}

    @property
    def name(self) -> str:
        return "broken"

    def deliver(self, incident: Incident, *, deadline_s: float | None = None) -> Delivery:
        return Delivery(self.name, self.routes["no such key"])


def test_a_fault_in_a_channels_code_is_released_logged_and_raised_after_the_others_deliver(
    ledger: tuple[SentLedger, Any], caplog: pytest.LogCaptureFixture
) -> None:
    sent, dynamodb = ledger
    with webhook_server() as hook:
        channels: list[Channel] = [_Broken(), WebhookChannel(lambda: hook.url)]
        with pytest.raises(notifier.PublishError, match="a fault in broken: KeyError") as e:
            notifier.send(channels, sent, [_incident(0), _incident(1)], NOW_S)
    assert isinstance(e.value.__cause__, KeyError)  # the programming error stays visible
    assert "Traceback" in caplog.text
    assert "KeyError: 'no such key'" in caplog.text
    assert len(hook.posts) == 2  # the webhook delivered both pages anyway
    assert _claims(dynamodb) == [f"xid/train/node-a/{n}/79/1772460000000#webhook" for n in (0, 1)]


def test_nothing_is_claimed_with_under_one_deliverys_time_left(
    ledger: tuple[SentLedger, Any],
) -> None:
    sent, dynamodb = ledger
    with webhook_server() as hook:
        channel = WebhookChannel(lambda: hook.url)
        with pytest.raises(notifier.PublishError, match="2 deliveries not tried"):
            notifier.send(
                [channel],
                sent,
                [_incident(0), _incident(1)],
                NOW_S,
                time_left_s=lambda: budget.RESERVE_S - 0.1,
            )
    assert (_claims(dynamodb), hook.posts) == ([], [])


def test_the_invocations_time_left_comes_from_lambdas_context() -> None:
    class Context:
        def get_remaining_time_in_millis(self) -> int:
            return 4_200

    clock = notifier._Clock()
    assert clock.left_s() == float("inf")  # outside Lambda: no bound
    clock.context = Context()
    assert clock.left_s() == 4.2


def test_a_channel_that_refuses_one_page_still_delivers_the_batchs_others(
    ledger: tuple[SentLedger, Any],
) -> None:
    """A of A, B, C is refused: B and C are delivered in this invocation, A alone is raised
    for the retry (a channel is not skipped for the batch after one refusal)."""
    sent, dynamodb = ledger
    with webhook_server() as hook:
        hook.statuses = [500]
        channel = WebhookChannel(lambda: hook.url)
        batch = [_incident(0), _incident(1), _incident(2)]
        with pytest.raises(notifier.PublishError, match=r"publishing xid/train/node-a/0/.*500"):
            notifier.send([channel], sent, batch, NOW_S)
        assert len(hook.posts) == 3
        assert _claims(dynamodb) == [
            f"xid/train/node-a/{n}/79/1772460000000#webhook" for n in (1, 2)
        ]
        assert notifier.send([channel], sent, batch, NOW_S) == 1
        assert notifier.send([channel], sent, batch, NOW_S) == 0
    assert [post["text"].splitlines()[0] for post in hook.shown] == [
        "[CRITICAL] XID 79 on node-a GPU 1",
        "[CRITICAL] XID 79 on node-a GPU 2",
        "[CRITICAL] XID 79 on node-a GPU 0",
    ]


def test_the_handlers_aws_clients_are_bounded_inside_the_reserve(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each client the handler makes carries the notifier's config, whose worst call (every
    attempt connecting and reading to its timeout, and the backoff) fits in RESERVE_S."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    # A fresh cache with the module's own config: nothing made here stays for other tests.
    monkeypatch.setattr(notifier, "_clients", type(notifier._clients)(notifier._clients.config))
    for service in ("sns", "dynamodb", "ssm", "logs"):
        config = notifier._clients(service).meta.config
        assert config.retries == {"mode": "standard", "total_max_attempts": 2}
        assert (config.connect_timeout, config.read_timeout) == (1, 2)
    own: Any = budget.CLIENT_CONFIG  # botocore's Config sets its options at run time
    worst = own.retries["total_max_attempts"] * (own.connect_timeout + own.read_timeout) + 1
    assert worst == budget.CLIENT_CALL_S == 7
    # A delivery at its worst: the claim (DynamoDB slow), the publish (SNS slow, or the
    # webhook's deadline), the release: each at its bound.
    assert budget.RESERVE_S == 2 * worst + max(worst, DEADLINE_S) == 21


@pytest.fixture
def topics(ledger: tuple[SentLedger, Any]) -> tuple[SnsChannel, Any, str]:
    """SNS topics on moto (inside the ledger's mock), an SQS queue subscribed to the critical
    one standing in for the people it pages."""
    sns = boto3.client(
        "sns", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
    )
    sqs = boto3.client(
        "sqs", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
    )
    critical = sns.create_topic(Name="critical")["TopicArn"]
    warning = sns.create_topic(Name="warning")["TopicArn"]
    queue = sqs.create_queue(QueueName="people")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]
    sns.subscribe(TopicArn=critical, Protocol="sqs", Endpoint=arn["QueueArn"])
    return SnsChannel(sns, critical_topic_arn=critical, warning_topic_arn=warning), sqs, queue


def _received(sqs: Any, queue: str) -> int:
    count = 0
    while batch := sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages"):
        count += len(batch)
        for message in batch:
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
    return count


def test_every_page_goes_out_on_sns_before_any_chat_and_a_hanging_webhook_is_tried_once(
    ledger: tuple[SentLedger, Any], topics: tuple[SnsChannel, Any, str]
) -> None:
    """XID 79 on 8 GPUs of a node while the webhook takes each request and never answers: the
    8 SNS pages go out first, the webhook is tried once and skipped for the rest of the
    invocation (each page would wait out the same deadline), and the PublishError counts the
    7 chat deliveries never tried. (Incident by incident, each page's webhook timeout spent
    the time the next SNS pages needed, and the webhook was posted every page.)"""
    sent, _ = ledger
    sns, sqs, queue = topics
    started = time.monotonic()

    def left() -> float:  # a few seconds more than one delivery's reserve
        return budget.RESERVE_S + 5.0 - (time.monotonic() - started)

    with webhook_server() as hook:
        hook.delay_s = 30.0
        webhook = WebhookChannel(lambda: hook.url, deadline_s=0.6)
        batch = [_incident(n) for n in range(8)]
        with pytest.raises(notifier.PublishError, match="7 deliveries not tried") as e:
            notifier.send([sns, webhook], sent, batch, NOW_S, time_left_s=left)
        assert len(hook.posts) == 1
    assert "timed out" in str(e.value)
    assert _received(sqs, queue) == 8


def test_a_webhook_answering_late_shows_a_page_at_most_twice_and_its_re_send_delivers_it(
    ledger: tuple[SentLedger, Any],
) -> None:
    """A webhook that answers 200 after the deadline: the first post is kept (it may have been
    shown), the retry re-sends it once with the longer deadline and reads the 200: a delivered
    page, no error, and Lambda's last attempt sends nothing. (Released and re-posted each
    time, it was shown three times and the event dead-lettered: notifier-failing paged.)"""
    sent, dynamodb = ledger
    with webhook_server() as hook:
        hook.delay_s = 0.8
        channel = WebhookChannel(lambda: hook.url, deadline_s=0.3)
        with pytest.raises(notifier.PublishError, match=r"the request was sent"):
            notifier.send([channel], sent, [_incident(0)], NOW_S)
        assert _late(dynamodb) == ["xid/train/node-a/0/79/1772460000000#webhook"]
        assert notifier.send([channel], sent, [_incident(0)], NOW_S) == 1
        assert notifier.send([channel], sent, [_incident(0)], NOW_S) == 0
        hook.released.wait(1.0)  # the first post's late answer
    assert len(hook.shown) == 2
    assert (_claims(dynamodb), _late(dynamodb)) == (
        ["xid/train/node-a/0/79/1772460000000#webhook"],
        [],
    )


def test_a_webhook_that_never_answers_is_sent_a_page_twice_then_reported_never_sent_again(
    ledger: tuple[SentLedger, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither post answered: the page is not posted a third time, and each later invocation
    fails on it, so the event is dead-lettered and notifier-failing pages (the page may be
    lost)."""
    sent, _ = ledger
    monkeypatch.setattr(notifier, "LATE_DEADLINE_S", 0.4)
    with webhook_server() as hook:
        hook.delay_s = 30.0
        channel = WebhookChannel(lambda: hook.url, deadline_s=0.2)
        for _ in range(2):
            with pytest.raises(notifier.PublishError, match="timed out"):
                notifier.send([channel], sent, [_incident(0)], NOW_S)
        with pytest.raises(notifier.PublishError, match=r"sent twice.*not sent again"):
            notifier.send([channel], sent, [_incident(0)], NOW_S)
        assert len(hook.posts) == 2
