import socket
import time
import traceback
from collections.abc import Iterator
from typing import Any

import pytest

from lambdas.notifier.channels import ChannelError
from lambdas.notifier.config import FUNCTION_TIMEOUT_S
from lambdas.notifier.notification import Incident, render_text
from lambdas.notifier.webhook import DEADLINE_S, WEBHOOK, WebhookChannel
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
            WebhookChannel(lambda: hook.url, deadline_s=0.2).deliver(INCIDENT)


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


# --- faults of the server or the path to it (issue: a page lost, a claim held, a token leaked)


def _leaks(err: BaseException, *logs: str) -> list[str]:
    """The token's pieces found in the error, its whole traceback (causes and contexts
    included) or the log: a traceback printed by Lambda must not carry the URL's path."""
    text = "".join(traceback.format_exception(err)) + "".join(logs)
    return [s for s in ("secret-token", "/services/", "T000/B000") if s in text]


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ("garbage", r"BadStatusLine"),
        ("redirect", r"HTTP 302, a redirect: refused, not followed"),
        ("reset", r"Connection(Reset|Aborted)Error|RemoteDisconnected"),
    ],
)
def test_a_server_fault_is_a_channel_error_that_names_no_token(
    fault: str, says: str, caplog: pytest.LogCaptureFixture
) -> None:
    with webhook_server() as hook:
        hook.faults = [fault]
        with pytest.raises(ChannelError, match=rf"^webhook http://127\.0\.0\.1:\d+: .*{says}") as e:
            WebhookChannel(lambda: hook.url, deadline_s=2.0).deliver(INCIDENT)
    assert _leaks(e.value, caplog.text) == []
    assert hook.gets == []  # the redirect was not followed as a GET


def test_a_server_dripping_its_answer_is_given_up_at_the_deadline_not_per_read() -> None:
    """A whole 200 answer at one byte every 0.1 s takes 6 s; each read is quick, so a timeout
    per read never fires (a server dripping a byte every 2 s held a delivery 74 s)."""
    with webhook_server() as hook:
        hook.faults, hook.drip_s = ["drip"], 0.1
        started = time.monotonic()
        with pytest.raises(ChannelError, match=r"timed out: no answer within 0\.5 s") as e:
            WebhookChannel(lambda: hook.url, deadline_s=0.5).deliver(INCIDENT)
        took = time.monotonic() - started
    assert 0.5 <= took < 1.5, took
    assert _leaks(e.value) == []


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.slack.com/services/T000/B000/secret-token x",  # a space: InvalidURL
        "https://hooks.slack.com/services/T000/B000/secret-token\x7f",  # a control character
        "https://hooks.slack.com:99999/services/T000/B000/secret-token",  # port out of range
        "https://hooks.slack.com/services/T000/B000/secret-tokén",  # not ASCII
    ],
)
def test_a_url_http_client_will_not_send_is_a_channel_error_that_names_no_token(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Each is refused before a connection is opened (no request leaves the machine)."""
    with pytest.raises(ChannelError, match=r"^webhook https://hooks\.slack\.com(:99999)?: ") as e:
        WebhookChannel(lambda: url, deadline_s=1.0).deliver(INCIDENT)
    assert _leaks(e.value, caplog.text) == []
    assert e.value.__cause__ is None
    assert e.value.__suppress_context__


def test_the_deadline_is_well_inside_the_functions_timeout() -> None:
    # A page on SNS and the webhook, and the ledger around them, fit in the 30 s with room.
    assert DEADLINE_S * 3 <= FUNCTION_TIMEOUT_S


def test_a_url_with_userinfo_is_named_by_scheme_host_and_port_alone() -> None:
    with webhook_server() as hook:
        hook.statuses = [403]
        url = hook.url.replace("http://", "http://hookuser:userinfo-token@", 1)
        with pytest.raises(ChannelError, match=r"^webhook http://127\.0\.0\.1:\d+: HTTP 403") as e:
            WebhookChannel(lambda: url).deliver(INCIDENT)
    assert "userinfo-token" not in str(e.value)
    assert "hookuser" not in str(e.value)


@pytest.fixture
def never_accepting() -> Iterator[tuple[str, int]]:
    """A listener whose backlog is full: a connect to it is never answered (the SYN dropped),
    as an unreachable address would be."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    address = listener.getsockname()
    held: list[socket.socket] = []
    try:
        while True:
            client = socket.socket()
            client.settimeout(0.2)
            try:
                client.connect(address)
            except OSError:
                client.close()
                break
            held.append(client)
        yield address
    finally:
        for client in held:
            client.close()
        listener.close()


def test_a_host_of_many_unreachable_addresses_is_given_up_at_the_deadline(
    never_accepting: tuple[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: http.client's create_connection gave each of the three addresses the whole
    timeout (0.5 s each: 2 s for a 0.5 s deadline), and the deadline's timer had no socket
    to shut while it connected."""
    host, port = never_accepting
    addresses = [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (host, port))] * 4
    asked: list[str] = []

    def getaddrinfo(name: str, *args: Any, **kwargs: Any) -> list[Any]:
        asked.append(name)
        return addresses

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    channel = WebhookChannel(lambda: "https://hooks.example.com/services/T/B/token", deadline_s=0.5)
    start = time.monotonic()
    with pytest.raises(ChannelError, match=r"^webhook https://hooks\.example\.com: timed out"):
        channel.deliver(INCIDENT)
    assert time.monotonic() - start < 1.2
    assert asked == ["hooks.example.com"]


def test_a_name_lookup_that_hangs_is_given_up_at_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def getaddrinfo(*args: Any, **kwargs: Any) -> list[Any]:
        time.sleep(3.0)
        return []

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    channel = WebhookChannel(lambda: "https://hooks.example.com/services/T/B/token", deadline_s=0.5)
    start = time.monotonic()
    with pytest.raises(ChannelError, match="timed out"):
        channel.deliver(INCIDENT)
    assert time.monotonic() - start < 1.2


def test_a_host_of_refusing_addresses_says_connection_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with webhook_server() as hook:
        port = int(hook.url.split(":")[2].split("/")[0])
    addresses = [
        (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (f"127.0.0.{n}", port))
        for n in (1, 2, 3)
    ]
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: addresses)
    with pytest.raises(ChannelError, match="Connection refused"):
        WebhookChannel(lambda: f"http://hooks.example.com:{port}/x", deadline_s=0.5).deliver(
            INCIDENT
        )


def test_a_urls_user_and_password_are_sent_as_basic_authentication() -> None:
    """Before: ``http.client`` connected to the host and port alone, and the URL's
    ``user:password@`` was dropped without a word. RFC 7617, section 2: the user-id and the
    password joined by a colon, Base64-encoded."""
    with webhook_server() as hook:
        url = hook.url.replace("http://", "http://hook%20user:p%40ss@", 1)
        WebhookChannel(lambda: url).deliver(INCIDENT)
        WebhookChannel(lambda: hook.url).deliver(INCIDENT)
    assert hook.headers[0]["Authorization"] == "Basic aG9vayB1c2VyOnBAc3M="  # "hook user:p@ss"
    assert "Authorization" not in hook.headers[1]


def test_a_short_secret_echoed_in_the_reason_phrase_is_scrubbed() -> None:
    """Before: pieces of the URL under 4 characters were left in (a 3-character token
    echoed by the server reached the log and the dead-letter queue)."""
    with webhook_server() as hook:
        hook.statuses, hook.reason = [403], "Forbidden: token k9z of user ab revoked"
        url = hook.url.replace("secret-token", "k9z").replace("http://", "http://ab:cd@", 1)
        with pytest.raises(ChannelError) as e:
            WebhookChannel(lambda: url).deliver(INCIDENT)
    assert str(e.value).endswith("HTTP 403 Forbidden: token ... of user ... revoked")
