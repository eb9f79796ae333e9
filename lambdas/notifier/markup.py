"""Untrusted text (job names, pod and node names, a rank's state, a log line) made inert for
each place a page is shown. Pure logic.

A job name is whatever the training script passed (the emitter takes any printable ASCII), so
``<!channel> <https://evil.example|Open the runbook>`` must reach a chat as those characters,
not as a mention of everyone and a link. Only the fields of an incident are escaped; the page's
own labels, layout and console links are the notifier's.

- Plain text (email): no markup, but a line break in a field would forge a line of the page
  (``What to do: ...``): every field is folded to one line (:func:`one_line`), for every channel.
- Slack ``text`` (mrkdwn): "you must escape ``&``, ``<`` and ``>``" as ``&amp;``, ``&lt;``,
  ``&gt;``; "you shouldn't HTML entity-encode the entire text, as only the specific characters
  shown above will be decoded for display in Slack"
  (https://api.slack.com/reference/surfaces/formatting#escaping, "Escaping text").
- Amazon Q Developer ``client-markdown``: rendered "in the target chat platform's markdown"
  (https://docs.aws.amazon.com/chatbot/latest/adminguide/custom-notifs.html): Slack's, Teams'
  or Chime's. Slack's three escapes, and no backslash escape: Slack's formatting reference
  defines none, so a backslash is shown as typed (``bert\\_base\\_v2`` would reach the
  channel with its backslashes). What is dangerous there is a mention or a link: Slack's
  (``<!channel>``, ``<https://...|text>``), which the three escapes make inert, and
  markdown's, which Teams renders (its card markdown's "Hyperlinks": ``[Title](url)``,
  https://learn.microsoft.com/en-us/microsoftteams/platform/task-modules-and-cards/cards/
  cards-format) and Chime's ``@All``: :func:`inert` breaks both without a visible
  character. Emphasis in a job name is cosmetic. The notification's ``keywords`` are values,
  not markdown: they carry the plain field.
- Any other webhook host, read as Slack-compatible (Mattermost, Discord's ``/slack``
  endpoint, Rocket.Chat): Mattermost translates Slack's ``<url|text>`` and ``<!channel>``,
  "always converts markdown and automatically links @mentions"
  (https://docs.mattermost.com/developers/integrate/slash-commands/slack, "Slack
  compatibility"), and Discord pings ``@everyone`` and ``@here`` and renders masked links:
  Slack's three escapes for the first, :func:`inert` for the rest (a zero-width space after
  ``@``, as discord.py's ``utils.escape_mentions`` writes ``@\u200beveryone``, and between a
  link's ``]`` and ``(``, which CommonMark's inline link needs "immediately" after its text).
- Amazon Chime: "Webhooks messages can be formatted with markdown", and "@All and @Present
  annotations" alert a room (https://docs.aws.amazon.com/chime/latest/dg/webhooks.html):
  CommonMark's backslash escapes (``<``, ``>`` and ``&`` among them: Chime is not Slack), and a
  zero-width space after every ``@`` so that no name is an annotation.
- Microsoft Teams (Adaptive Card): untrusted text goes only into ``TextRun`` elements, whose
  ``text`` is shown as is ("Markdown is not supported",
  https://learn.microsoft.com/en-us/adaptive-cards/schema-explorer/text-run): nothing to escape.
"""

import re
from typing import Final

#: C0 controls, DEL and the C1 controls; Unicode line and paragraph separators.
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
#: What opens markup inline in CommonMark (escape, code, emphasis, links), raw HTML,
#: autolinks and entities, for Chime's renderer (not Slack).
_COMMONMARK: Final = re.compile(r"([\\`*_~\[\]()<>&])")
_ZERO_WIDTH_SPACE: Final = "\u200b"


def one_line(text: str) -> str:
    """``text`` with every run of control characters (line breaks, tabs, escapes) one space."""
    return _CONTROL.sub(" ", text)


def slack(text: str) -> str:
    """Slack mrkdwn: ``&``, ``<``, ``>`` as Slack's three entities."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def inert(text: str) -> str:
    """``text`` on one line with no mention and no markdown link left in it, and nothing
    visible added: a zero-width space after every ``@`` (``@channel``, ``@everyone``,
    ``@All``) and between ``]`` and ``(`` (``[text](url)``)."""
    return (
        one_line(text)
        .replace("@", "@" + _ZERO_WIDTH_SPACE)
        .replace("](", "]" + _ZERO_WIDTH_SPACE + "(")
    )


def markdown(text: str) -> str:
    """Amazon Q Developer client-markdown: :func:`inert`, and Slack's three escapes only (no
    backslash escapes: Slack would show them)."""
    return slack(inert(text))


def chime(text: str) -> str:
    """Amazon Chime markdown: CommonMark backslash escapes, and no ``@`` annotation."""
    escaped = _COMMONMARK.sub(r"\\\1", one_line(text))
    return escaped.replace("@", "@" + _ZERO_WIDTH_SPACE)
