"""How big a page may be on each channel: one table, each figure with its source, and the one
way a text is cut to fit. Pure logic.

- SNS ``Publish`` (email, HTTPS, Amazon Q Developer): the ``Message``, all of the
  ``MessageStructure=json`` object, "at most 256 KB in size (262,144 bytes, not 262,144
  characters)" (https://docs.aws.amazon.com/sns/latest/api/API_Publish.html).
- Slack incoming webhook: ``text`` past 40,000 characters is truncated
  (https://api.slack.com/changelog/2018-04-truncating-really-long-messages).
- Microsoft Teams (Workflows webhook, Adaptive Card): "The message size limit is 28 KB. When
  the size exceeds 28 KB, you receive an error"
  (https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/add-incoming-webhook);
  the Teams connector's posting actions: "about 28 KB ... Request Entity too large"
  (https://learn.microsoft.com/en-us/connectors/teams/, known issues).
- Amazon Chime webhook ``Content``: no size documented
  (https://docs.aws.amazon.com/chime/latest/dg/webhooks.html; the service ended on
  2026-02-20); held to 4 KB, the Chime SDK's "STANDARD messages can be up to 4KB"
  (https://docs.aws.amazon.com/chime-sdk/latest/dg/msg-types.html).
- Amazon Q Developer custom notification: no size of its own documented
  (https://docs.aws.amazon.com/chatbot/latest/adminguide/custom-notifs.html); it rides in the
  SNS message and is shown in Slack or Teams, so it is held to Teams' 28 KB.
- A webhook of no known service: the smallest of these, 4 KB.

Every page is first summarised where it could be long (a job's ranks, pods, nodes: ``jobs.py``),
and each fact is cut at :data:`MAX_FACT_CHARS`; :func:`clip` is the last guard, so that no input,
however long, makes a message its channel refuses.
"""

from typing import Final

SNS_MESSAGE_BYTES: Final = 262_144
SLACK_TEXT_CHARS: Final = 40_000
#: "28 KB" read as the smaller 28,000 bytes, so either reading of KB fits.
TEAMS_MESSAGE_BYTES: Final = 28_000
CHIME_CONTENT_BYTES: Final = 4_096
#: Amazon Q Developer shows the notification in Slack or Teams: Teams' limit is the smaller.
Q_DEVELOPER_NOTIFICATION_BYTES: Final = TEAMS_MESSAGE_BYTES
#: A webhook whose service is not recognised gets the smallest chat limit of the table.
UNKNOWN_WEBHOOK_BYTES: Final = CHIME_CONTENT_BYTES

#: One fact (a list of pods, a log line) is cut here: a page names, it does not enumerate.
MAX_FACT_CHARS: Final = 600
CUT: Final = " … (cut to fit; see the dashboard)"


def utf8_len(text: str) -> int:
    return len(text.encode())


def clip(text: str, max_bytes: int, *, cut: str = CUT) -> str:
    """``text`` if its UTF-8 fits ``max_bytes``, else its longest prefix (whole characters)
    that fits with ``cut`` appended."""
    if utf8_len(text) <= max_bytes:
        return text
    room = max(0, max_bytes - utf8_len(cut))
    return text.encode()[:room].decode(errors="ignore") + cut


def clip_chars(text: str, max_chars: int, *, cut: str = CUT) -> str:
    """The same in characters, for limits stated in characters."""
    if len(text) <= max_chars:
        return text
    return text[: max(0, max_chars - len(cut))] + cut
