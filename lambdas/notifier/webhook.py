"""The webhook channel: each incident POSTed as JSON to a chat webhook (Slack, Amazon Chime,
Microsoft Teams), for a team that reads its pages in chat without Amazon Q Developer.

One body serves the three: Slack's incoming webhooks read ``text`` ("the text field ... will
be used as the message text", https://api.slack.com/messaging/webhooks), as do Teams'
incoming webhooks; Amazon Chime's read ``Content`` (``{"Content":"Message Body"}``,
https://docs.aws.amazon.com/chime/latest/dg/webhooks.html). Each ignores the other's key.

The URL carries the webhook's token, so it is no environment variable: it is an SSM
SecureString parameter, the parameter's name the ``webhook_url_parameter`` setting, read with
decryption at a container's first delivery and again every few minutes (the handler's
``_webhook_url``). Parameter Store's AWS managed key (aws/ssm)
"grants Decrypt permission to all IAM principals in the AWS account"
(https://docs.aws.amazon.com/systems-manager/latest/userguide/ps-restrict-decryption.html), so
the function needs ``ssm:GetParameter`` on that one parameter and nothing of KMS.
"""

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, Final
from urllib.parse import urlsplit

from botocore.exceptions import BotoCoreError, ClientError

from lambdas.notifier.channels import ChannelError, Delivery
from lambdas.notifier.notification import Incident, render_text

WEBHOOK: Final = "webhook"
#: One POST waits at most this long (to connect, and for each read): two incidents' worth
#: stays well inside the function's 30 s timeout beside SNS and the ledger.
TIMEOUT_S: Final = 5.0


def body(incident: Incident) -> bytes:
    """The JSON a Slack, Teams or Chime webhook shows as one message."""
    text = render_text(incident)
    return json.dumps({"text": text, "Content": text}).encode()


def _where(url: str) -> str:
    """The URL without its path and query: those hold the token, never logged or raised."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def url_from_parameter(ssm: Any, parameter: str) -> str:
    """The webhook URL stored in the SecureString parameter, or ChannelError naming it."""
    try:
        value = ssm.get_parameter(Name=parameter, WithDecryption=True)["Parameter"]["Value"]
    except (ClientError, BotoCoreError) as err:
        raise ChannelError(f"webhook URL parameter {parameter}: {err}") from err
    url = str(value).strip()
    if urlsplit(url).scheme != "https" or not urlsplit(url).hostname:
        raise ChannelError(f"webhook URL parameter {parameter} does not hold an https:// URL")
    return url


class WebhookChannel:
    """``url`` is called at the first delivery and kept: a parameter that cannot be read fails
    this channel alone (the others deliver, the retry reads it again)."""

    def __init__(self, url: Callable[[], str], *, timeout_s: float = TIMEOUT_S) -> None:
        self._url_source = url
        self._url: str | None = None
        self.timeout_s = timeout_s

    @property
    def name(self) -> str:
        return WEBHOOK

    def deliver(self, incident: Incident) -> Delivery:
        if self._url is None:
            self._url = self._url_source()
        url = self._url
        request = urllib.request.Request(
            url,
            data=body(incident),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                status = int(response.status)
        except urllib.error.HTTPError as err:
            raise ChannelError(f"webhook {_where(url)}: HTTP {err.code} {err.reason}") from err
        except (urllib.error.URLError, TimeoutError, OSError) as err:
            raise ChannelError(f"webhook {_where(url)}: {err}") from err
        return Delivery(WEBHOOK, str(status))
