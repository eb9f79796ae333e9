"""The webhook channel: each incident POSTed as JSON to a chat webhook (Slack, Amazon Chime,
Microsoft Teams), for a team that reads its pages in chat without Amazon Q Developer.

The body is the one the URL's service takes (``webhook_formats.py``: Slack's ``text``, a Teams
Workflows Adaptive Card, Chime's ``Content``), within its documented size (``limits.py``).

One POST, and only its status counts: 2xx is delivered; a redirect is refused, not followed (a
302 followed as a GET reaches no channel, yet looked sent); anything else, and any fault of the
transport (a refused or reset connection, an answer that is not HTTP, a URL ``http.client``
will not send), is a :class:`ChannelError`, so the handler releases the claim and Lambda's
retry sends the page again. A post sent whole whose answer did not come within the deadline
may have been shown (a chat service that answers late): it is an ``AnswerLateError``, whose
claim the handler keeps, marked, for one re-send with ``LATE_DEADLINE_S``. The whole delivery
(name lookup, connect, TLS, request, the answer's status) is bounded by one deadline, not by a
timeout per socket read that a server answering a byte at a time would reset forever: a timer
shuts the socket at the deadline. The
connection is opened within the same deadline (``_connector``): the name is resolved in a
thread waited on for the time left, and each resolved address is tried with only the time left,
stopping when it is spent (``http.client`` would give every address the whole timeout, and the
timer has no socket to shut while it connects).

The URL carries the webhook's token, so it is no environment variable: it is an SSM
SecureString parameter, the parameter's name the ``webhook_url_parameter`` setting, read with
decryption at a container's first delivery and again every few minutes (the handler's
``_webhook_url``). Parameter Store's AWS managed key (aws/ssm)
"grants Decrypt permission to all IAM principals in the AWS account"
(https://docs.aws.amazon.com/systems-manager/latest/userguide/ps-restrict-decryption.html), so
the function needs ``ssm:GetParameter`` on that one parameter and nothing of KMS.
"""

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from http.client import HTTPConnection, HTTPException, HTTPSConnection, InvalidURL
from typing import Any, Final
from urllib.parse import quote, urlsplit

from botocore.exceptions import BotoCoreError, ClientError

from lambdas.notifier import markup
from lambdas.notifier.channels import (
    AnswerLateError,
    ChannelError,
    ChannelTimeoutError,
    Delivery,
)
from lambdas.notifier.config import FUNCTION_TIMEOUT_S
from lambdas.notifier.notification import Incident
from lambdas.notifier.webhook_formats import body, format_for

WEBHOOK: Final = "webhook"
#: One delivery, start to status, is given up after this: with SNS and the ledger, a page on
#: both channels ends well inside the function's timeout (the handler also stops claiming
#: when less than one delivery's time is left: handler.send).
DEADLINE_S: Final = FUNCTION_TIMEOUT_S / 6
#: The one re-send of a page whose first post was sent whole and answered late: a webhook that
#: answers after the deadline (a chat service slow to post) is given twice the time, so the
#: re-send reads the answer, and the page is shown at most twice (handler.send).
LATE_DEADLINE_S: Final = 2 * DEADLINE_S


class DeliveryFaultError(Exception):
    """The POST got no HTTP status; the message never holds the URL's path or query.
    ``timed_out``: no answer within the deadline; ``sent``: the request had been sent whole
    (the server may have acted on it)."""

    def __init__(self, message: str, *, timed_out: bool = False, sent: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out
        self.sent = sent


def _where(url: str) -> str:
    """The URL's scheme, host and port only: its userinfo (``user:token@``), path and query
    may hold the token, never logged or raised."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


def _secrets(url: str) -> list[str]:
    """The pieces of the URL's path and query, in the forms an error message could show them."""
    parts = urlsplit(url)
    pieces = [parts.path, parts.query]
    for sep in "/?&=":
        pieces = [p for piece in pieces for p in piece.split(sep)]
    out = []
    for piece in {p for p in pieces if len(p) >= 4}:
        out += [piece, repr(piece)[1:-1], quote(piece, safe="")]
    return sorted(set(out), key=len, reverse=True)


def scrub(text: str, url: str) -> str:
    """``text`` with every piece of ``url``'s path and query replaced by ``...``."""
    for secret in _secrets(url):
        text = text.replace(secret, "...")
    return text


def _abort(connection: HTTPConnection, fired: threading.Event) -> None:
    """Shut the connection's socket: a read blocked on it returns at once."""
    fired.set()
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):  # already closed: nothing to unblock
            sock.shutdown(socket.SHUT_RDWR)


def _resolve(host: str, port: int, left_s: float) -> list[Any]:
    """``getaddrinfo`` for ``host``, given at most ``left_s``: resolved in a daemon thread (a
    lookup cannot be interrupted), which is left behind if it takes longer."""
    found: list[Any] = []
    failed: list[OSError] = []

    def lookup() -> None:
        try:
            found.extend(socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM))
        except OSError as err:
            failed.append(err)

    thread = threading.Thread(target=lookup, daemon=True)
    thread.start()
    thread.join(max(left_s, 0.0))
    if thread.is_alive():
        raise TimeoutError(f"no address for the host within {left_s:.3g} s")
    if failed:
        raise failed[0]
    return found


def _connector(deadline: float) -> Callable[..., socket.socket]:
    """A stand-in for ``socket.create_connection`` (``http.client``'s ``_create_connection``)
    that opens the connection before ``deadline`` (``time.monotonic``): each address is given
    only the time left, and none is tried once it is spent."""

    def connect(
        address: tuple[str, int], timeout: Any = None, source_address: Any = None
    ) -> socket.socket:
        host, port = address
        error: OSError | None = None
        for family, kind, proto, _, sockaddr in _resolve(host, port, deadline - time.monotonic()):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            sock = socket.socket(family, kind, proto)
            try:
                sock.settimeout(left)
                if source_address:
                    sock.bind(source_address)
                sock.connect(sockaddr)
            except OSError as err:
                sock.close()
                error = err
                continue
            sock.settimeout(timeout)
            return sock
        if time.monotonic() >= deadline:
            raise TimeoutError("no connection within the deadline")
        raise error or OSError("no address for the host")

    return connect


def post(url: str, payload: bytes, *, deadline_s: float) -> tuple[int, str]:
    """POST ``payload`` as JSON; the answer's status and reason, read within ``deadline_s``
    in all, or :class:`DeliveryFaultError`. Redirects are not followed."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise DeliveryFaultError("the URL is not valid (not shown: it holds the token)") from None
    kind = HTTPSConnection if parts.scheme == "https" else HTTPConnection
    connection = kind(parts.hostname or "", port, timeout=deadline_s)
    # http.client's hook for how it connects (HTTPConnection.__init__ sets it to
    # socket.create_connection; HTTPSConnection.connect wraps the socket it returns).
    connection._create_connection = _connector(time.monotonic() + deadline_s)  # type: ignore[attr-defined]
    fired = threading.Event()
    timer = threading.Timer(deadline_s, _abort, args=(connection, fired))
    timer.daemon = True
    timer.start()
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    sent = False
    try:
        connection.request(
            "POST", target, body=payload, headers={"Content-Type": "application/json"}
        )
        sent = True
        response = connection.getresponse()
        status, reason = int(response.status), str(response.reason)
    except (OSError, HTTPException, ValueError) as err:
        if fired.is_set() or isinstance(err, TimeoutError):
            raise DeliveryFaultError(
                f"timed out: no answer within {deadline_s:g} s"
                + (" (the request was sent)" if sent else ""),
                timed_out=True,
                sent=sent,
            ) from None
        if isinstance(err, ValueError | InvalidURL):
            why = "the URL is not valid (not shown: it holds the token)"
            raise DeliveryFaultError(f"{type(err).__name__}: {why}") from None
        said = markup.one_line(scrub(str(err), url)).strip()[:200]
        raise DeliveryFaultError(f"{type(err).__name__}: {said}") from None
    finally:
        timer.cancel()
        connection.close()
    return status, reason


def url_from_parameter(ssm: Any, parameter: str) -> str:
    """The webhook URL stored in the SecureString parameter, or ChannelError naming it."""
    try:
        value = ssm.get_parameter(Name=parameter, WithDecryption=True)["Parameter"]["Value"]
    except (ClientError, BotoCoreError) as err:
        raise ChannelError(f"webhook URL parameter {parameter}: {err}") from err
    url = str(value).strip()
    if not url.isascii() or any(c.isspace() or not c.isprintable() for c in url):
        raise ChannelError(
            f"webhook URL parameter {parameter} holds a URL with a space, a control or a "
            "non-ASCII character (not shown: it holds the token)"
        )
    if urlsplit(url).scheme != "https" or not urlsplit(url).hostname:
        raise ChannelError(f"webhook URL parameter {parameter} does not hold an https:// URL")
    return url


class WebhookChannel:
    """``url`` is called at the first delivery and kept: a parameter that cannot be read fails
    this channel alone (the others deliver, the retry reads it again)."""

    def __init__(self, url: Callable[[], str], *, deadline_s: float = DEADLINE_S) -> None:
        self._url_source = url
        self._url: str | None = None
        self.deadline_s = deadline_s

    @property
    def name(self) -> str:
        return WEBHOOK

    def deliver(self, incident: Incident, *, deadline_s: float | None = None) -> Delivery:
        if self._url is None:
            self._url = self._url_source()
        url = self._url
        where = _where(url)
        payload = body(incident, format_for(url))
        try:
            status, reason = post(url, payload, deadline_s=deadline_s or self.deadline_s)
        except DeliveryFaultError as err:
            kind = ChannelTimeoutError if err.timed_out else ChannelError
            raise (AnswerLateError if err.sent else kind)(f"webhook {where}: {err}") from None
        if 300 <= status < 400:
            raise ChannelError(
                f"webhook {where}: HTTP {status}, a redirect: refused, not followed "
                "(a webhook URL answers itself; store the URL it names)"
            )
        if not 200 <= status < 300:
            said = markup.one_line(scrub(reason, url))[:100]
            raise ChannelError(f"webhook {where}: HTTP {status} {said}")
        return Delivery(WEBHOOK, str(status))
