import pytest

from lambdas.notifier.channels import ChannelError
from lambdas.notifier.notification import Incident, render_text
from lambdas.notifier.webhook import WEBHOOK, WebhookChannel
from tests.unit.lambdas.notifier.webhook_server import webhook_server

INCIDENT = Incident(
    key="xid/train/node-a/0/79/1767261600",
    severity="critical",
    kind="gpu-xid-fatal",
    title="XID 79 on node-a GPU 0",
    what="GPU 0 on node-a reported XID 79: GPU has fallen off the bus.",
    cluster="train",
    node="node-a",
    gpu="0",
    action="Cordon and drain the node.",
)


def test_an_incident_is_one_json_post_that_slack_teams_and_chime_each_read() -> None:
    with webhook_server() as hook:
        delivery = WebhookChannel(lambda: hook.url).deliver(INCIDENT)
    assert (delivery.channel, delivery.reference) == (WEBHOOK, "200")
    (post,) = hook.posts
    # Slack and Teams show "text"; Chime shows "Content" (lambdas/notifier/webhook.py).
    assert post == {"text": render_text(INCIDENT), "Content": render_text(INCIDENT)}
    assert post["text"].startswith("[CRITICAL] XID 79 on node-a GPU 0\n")
    assert hook.headers[0]["Content-Type"] == "application/json"


def test_a_refused_post_is_a_channel_error_that_keeps_the_token_out() -> None:
    with webhook_server() as hook:
        hook.statuses = [403]
        with pytest.raises(ChannelError, match=r"^webhook http://127\.0\.0\.1:\d+: HTTP 403") as e:
            WebhookChannel(lambda: hook.url).deliver(INCIDENT)
    assert "secret-token" not in str(e.value)


def test_a_webhook_that_hangs_is_given_up_after_the_timeout() -> None:
    with webhook_server() as hook:
        hook.delay_s = 5.0
        with pytest.raises(ChannelError, match="timed out"):
            WebhookChannel(lambda: hook.url, timeout_s=0.2).deliver(INCIDENT)


def test_nothing_listening_is_a_channel_error() -> None:
    with webhook_server() as hook:
        url = hook.url
    with pytest.raises(ChannelError, match="Connection refused"):
        WebhookChannel(lambda: url).deliver(INCIDENT)


def test_the_url_is_read_once_per_channel() -> None:
    reads: list[str] = []
    with webhook_server() as hook:

        def url() -> str:
            reads.append(hook.url)
            return hook.url

        channel = WebhookChannel(url)
        channel.deliver(INCIDENT)
        channel.deliver(INCIDENT)
    assert (len(reads), len(hook.posts)) == (1, 2)
