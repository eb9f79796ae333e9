"""The body a chat webhook takes, picked from its URL's host. Pure logic, no network.

- ``hooks.slack.com``: a Slack incoming webhook (its URLs are
  ``https://hooks.slack.com/services/T.../B.../...``, and "the text field ... will be used as
  the message text", https://api.slack.com/messaging/webhooks): ``{"text": ...}``, escaped
  for Slack's mrkdwn.
- ``*.logic.azure.com``, ``*.api.powerplatform.com``, ``*.webhook.office.com``: Microsoft
  Teams, a Workflows webhook (the retired Office 365 connectors' successor):
  ``{"type": "message", "attachments": [{"contentType":
  "application/vnd.microsoft.card.adaptive", "content": <Adaptive Card>}]}`` (below).
- ``hooks.chime.aws``: Amazon Chime (support ended 2026-02-20): ``{"Content": ...}`` ("a
  JSON payload with a single key Content", https://docs.aws.amazon.com/chime/latest/dg/webhooks.html).
- Any other host, the documented fallback: ``{"text": ..., "Content": ...}``, Slack's key
  (which Slack-compatible services read: Mattermost, Discord's ``/slack`` endpoint) and
  Chime's, within the smallest limit of all; the ``text``'s fields made inert for those
  services' mentions and markdown links as well as Slack's (``markup.inert``).

Teams: "Workflows support Adaptive Cards only. It doesn't support the older message card format
that Office 365 Connectors use"
(https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/connectors-using);
the "Send webhook alerts to a channel" template posts each card of the body's ``attachments``
(its step "Send each adaptive card" loops over ``triggerOutputs()?['body']?['attachments']``,
and fails on a body without them: https://github.com/polymind-inc/acmebot/issues/869). Its
trigger URLs moved from ``*.logic.azure.com`` to ``*.environment.api.powerplatform.com`` by
2025-11-30 ("Changes to HTTP or Teams Webhook trigger flows",
https://learn.microsoft.com/en-us/troubleshoot/power-platform/power-automate/flow-run-issues/triggers-troubleshoot).
``*.webhook.office.com`` is the connectors' host; their incoming webhooks take the same
envelope ("Send Adaptive Cards using an Incoming Webhook",
https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/add-incoming-webhook).
Every untrusted field is a ``TextRun`` (Adaptive Cards 1.2), whose text is shown as is
(lambdas/notifier/markup.py); links are ``Action.OpenUrl`` buttons.
"""

import json
from collections.abc import Callable
from enum import StrEnum
from typing import Any, Final
from urllib.parse import urlsplit

from lambdas.notifier import markup
from lambdas.notifier.limits import (
    CHIME_CONTENT_BYTES,
    SLACK_TEXT_CHARS,
    TEAMS_MESSAGE_BYTES,
    UNKNOWN_WEBHOOK_BYTES,
    utf8_len,
)
from lambdas.notifier.notification import Incident, fitted, mapped, render_text


class Format(StrEnum):
    SLACK = "slack"
    TEAMS = "teams"
    CHIME = "chime"
    #: A host of none of the above: Slack's ``text`` and Chime's ``Content``.
    GENERIC = "generic"


_EXACT: Final = {"hooks.slack.com": Format.SLACK, "hooks.chime.aws": Format.CHIME}
_SUFFIXES: Final = {
    ".logic.azure.com": Format.TEAMS,
    ".api.powerplatform.com": Format.TEAMS,
    ".webhook.office.com": Format.TEAMS,
}
_CARD: Final = "application/vnd.microsoft.card.adaptive"
_SEVERITY_COLOUR: Final = {"critical": "attention", "warning": "warning"}


def format_for(url: str) -> Format:
    """The body the webhook at ``url`` takes, from its host (``GENERIC`` when unknown)."""
    host = (urlsplit(url).hostname or "").lower()
    if host in _EXACT:
        return _EXACT[host]
    for suffix, fmt in _SUFFIXES.items():
        if host.endswith(suffix):
            return fmt
    return Format.GENERIC


def _run(text: str, **style: Any) -> dict[str, Any]:
    return {"type": "TextRun", "text": text, **style}


def _line(*runs: dict[str, Any]) -> dict[str, Any]:
    return {"type": "RichTextBlock", "inlines": list(runs)}


def _card(incident: Incident) -> dict[str, Any]:
    """The Workflows envelope with one Adaptive Card; untrusted text only in TextRuns."""
    links = [("Alarm", incident.alarm_url), ("GPU dashboard", incident.dashboard_url)]
    body = [
        _line(
            _run(
                f"[{incident.severity.upper()}] {incident.title}",
                weight="bolder",
                size="medium",
                color=_SEVERITY_COLOUR[incident.severity],
            )
        ),
        _line(_run(incident.what)),
        *(_line(_run(f"{k}: ", weight="bolder"), _run(v)) for k, v in incident.rows()),
        _line(_run("What to do: ", weight="bolder"), _run(incident.action)),
    ]
    card = {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": body,
        "actions": [
            {"type": "Action.OpenUrl", "title": title, "url": url} for title, url in links if url
        ],
    }
    return {
        "type": "message",
        "attachments": [{"contentType": _CARD, "contentUrl": None, "content": card}],
    }


def _renderer(fmt: Format) -> tuple[Callable[[Incident], dict[str, Any]], Callable[[bytes], bool]]:
    """How ``fmt`` renders a (capped) incident, and whether a body fits its limit."""
    if fmt is Format.SLACK:
        return (
            lambda i: {"text": markup.slack(render_text(i))},
            lambda b: len(json.loads(b)["text"]) <= SLACK_TEXT_CHARS,
        )
    if fmt is Format.TEAMS:
        return _card, lambda b: len(b) <= TEAMS_MESSAGE_BYTES
    if fmt is Format.CHIME:
        return (
            lambda i: {"Content": render_text(mapped(i, markup.chime))},
            lambda b: utf8_len(json.loads(b)["Content"]) <= CHIME_CONTENT_BYTES,
        )
    return (
        lambda i: {
            "text": markup.slack(render_text(mapped(i, markup.inert))),
            "Content": render_text(mapped(i, markup.chime)),
        },
        lambda b: len(b) <= UNKNOWN_WEBHOOK_BYTES,
    )


def body(incident: Incident, fmt: Format) -> bytes:
    """The JSON ``fmt``'s webhook shows as one message, within its documented size."""
    render, fits = _renderer(fmt)
    return fitted(incident, lambda i: json.dumps(render(i)).encode(), fits)
