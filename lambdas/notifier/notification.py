"""One incident, one message: the formatter every alarm, contributor and XID notification goes
through. Pure logic, no AWS.

An incident is written twice from the same fields: plain text for email (and any subscriber
without its own rendering) and an Amazon Q Developer in chat applications (formerly AWS
Chatbot) custom notification for a Slack or Teams channel subscribed to the topic. SNS sends
each protocol its own text when the message is published with ``MessageStructure=json``: the
message is a JSON object with at least a ``default`` string and optionally one string per
protocol (https://docs.aws.amazon.com/sns/latest/api/API_Publish.html, MessageStructure).
Amazon Q Developer subscribes to a topic over HTTPS, so the ``https`` text is the custom
notification; ``email`` and ``default`` are the plain text.

The custom notification's fields (``version`` "1.0", ``source`` "custom", ``content`` with
``textType``, ``title``, ``description``, ``nextSteps``, ``keywords``; ``metadata`` with
``threadId``, ``summary``, ``eventType``, ``relatedResources``, ``additionalContext``) are
AWS's: https://docs.aws.amazon.com/chatbot/latest/adminguide/custom-notifs.html.

Every field of an incident may come from outside (a job name, a pod name, a rank's state): each
is folded to one line and cut at a length (``capped``), and escaped for the markup it is shown
in (``lambdas/notifier/markup.py``); a message that would still pass its channel's limit
(``lambdas/notifier/limits.py``) is rendered again with shorter fields (``fitted``).
"""

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, TypeVar

from lambdas.notifier import markup
from lambdas.notifier.limits import (
    MAX_FACT_CHARS,
    Q_DEVELOPER_NOTIFICATION_BYTES,
    SNS_MESSAGE_BYTES,
    clip_chars,
    utf8_len,
)

Severity = Literal["critical", "warning"]

#: SNS: a subject is ASCII, has no line breaks, and is "less than 100 characters".
MAX_SUBJECT: Final = 99
_ICON: Final = {"critical": ":rotating_light:", "warning": ":warning:"}


@dataclass(frozen=True)
class Near:
    """A sliding window beside an incident keyed by a fixed window: one GPU and code's pages
    are at least ``span_ms`` apart, whatever window each falls in. ``key`` names the GPU and
    code (the incident key without its window); ``at_ms`` is when this incident happened
    (lambdas/notifier/sent_ledger.py)."""

    key: str
    at_ms: int
    span_ms: int


@dataclass(frozen=True, kw_only=True)
class Incident:
    """What one person needs to act on one incident."""

    #: The incident's identity, for idempotency and chat threads: stable across retries.
    key: str
    severity: Severity
    #: ``gpu-low-power``, ``gpu-xid``...: what kind of incident (the chat event type).
    kind: str
    title: str
    what: str
    cluster: str
    node: str
    gpu: str
    action: str
    pods: tuple[str, ...] = ()
    job: str | None = None
    #: The job's Kubernetes namespace, where its contributor names one (OTel mode's PromQL).
    namespace: str | None = None
    threshold: str | None = None
    observed: str | None = None
    when: str | None = None
    alarm_url: str | None = None
    dashboard_url: str | None = None
    #: ARNs the incident is about (the alarm), for the chat notification's metadata.
    resources: tuple[str, ...] = ()
    #: Further labelled facts (the XID code and its source, the count of repeats).
    facts: tuple[tuple[str, str], ...] = field(default=())
    #: Where ``key`` names a fixed window (an XID's), the windows beside it that may hold the
    #: same incident; None: the key alone is its identity (an alarm's).
    near: Near | None = None
    #: A fail-slow page's culprit node, where the page names one: recorded for the lemon-node
    #: score once the page is sent (lambdas/notifier/culprit_record.py). Not shown as such.
    culprit_node: str | None = None

    def rows(self) -> list[tuple[str, str]]:
        """The labelled facts, in reading order; absent ones are left out, not blank."""
        rows = [("Cluster", self.cluster), ("Node", self.node), ("GPU", self.gpu)]
        if self.pods:
            rows.append(("Pods", ", ".join(self.pods)))
        if self.job:
            rows.append(("Job", self.job))
        if self.namespace:
            rows.append(("Namespace", self.namespace))
        if self.threshold is not None:
            rows.append(("Threshold", self.threshold))
        if self.observed is not None:
            rows.append(("Observed", self.observed))
        rows += list(self.facts)
        if self.when:
            rows.append(("When", self.when))
        return rows


def mapped(incident: Incident, text: Callable[[str], str]) -> Incident:
    """``incident`` with ``text`` applied to every field a person reads (not its key, kind,
    resources or console links, which the notifier builds)."""

    def opt(value: str | None) -> str | None:
        return None if value is None else text(value)

    return replace(
        incident,
        title=text(incident.title),
        what=text(incident.what),
        cluster=text(incident.cluster),
        node=text(incident.node),
        gpu=text(incident.gpu),
        action=text(incident.action),
        pods=tuple(text(p) for p in incident.pods),
        job=opt(incident.job),
        namespace=opt(incident.namespace),
        threshold=opt(incident.threshold),
        observed=opt(incident.observed),
        when=opt(incident.when),
        facts=tuple((text(label), text(value)) for label, value in incident.facts),
    )


def capped(incident: Incident, chars: int = MAX_FACT_CHARS) -> Incident:
    """Every field on one line and at most ``chars`` characters: a page names, it does not
    enumerate (a list of 1,024 pods is summarised before it gets here; this is the guard)."""

    def cap(value: str) -> str:
        return clip_chars(markup.one_line(value), chars)

    short = mapped(incident, cap)
    # The pods are one row: cut as one.
    return replace(short, pods=(cap(", ".join(short.pods)),)) if short.pods else short


#: Field lengths tried in turn until a message fits its channel: the first fits every page
#: summarised as ``jobs.py`` does; the others are for inputs nothing summarised.
FIELD_CAPS: Final = (MAX_FACT_CHARS, 300, 150, 80, 40)
T = TypeVar("T")


def fitted(incident: Incident, render: Callable[[Incident], T], fits: Callable[[T], bool]) -> T:
    """``render`` of ``incident`` with the longest field cap whose result ``fits``; where none
    does (a console link that holds a job name of a thousand characters), the shortest cap's
    without the links: the page goes out, naming what it is about."""
    for chars in FIELD_CAPS:
        out = render(capped(incident, chars))
        if fits(out):
            return out
    return render(replace(capped(incident, FIELD_CAPS[-1]), alarm_url=None, dashboard_url=None))


#: What ends a subject cut short: the body's first lines hold the whole title.
CUT: Final = " ..."


def subject(incident: Incident) -> str:
    text = f"[{incident.severity.upper()}] {incident.title}"
    return cut_subject(markup.one_line(text.encode("ascii", "replace").decode()))


def cut_subject(text: str) -> str:
    """``text`` within SNS's subject limit; a longer one cut after its last whole word that
    fits, then ``CUT``, never inside a name (``ip-10-0-4-4`` read as a node of its own)."""
    if len(text) <= MAX_SUBJECT:
        return text
    room = MAX_SUBJECT - len(CUT)
    space = text.rfind(" ", 0, room + 1)
    kept = text[:space] if space > 0 else text[:room]
    return kept.rstrip(" ,;:") + CUT


def _links(incident: Incident) -> list[tuple[str, str]]:
    links = []
    if incident.alarm_url:
        links.append(("Alarm", incident.alarm_url))
    if incident.dashboard_url:
        links.append(("GPU dashboard", incident.dashboard_url))
    return links


def render_text(incident: Incident) -> str:
    """The message an email subscriber reads (its fields one line each, at most
    ``MAX_FACT_CHARS`` long)."""
    return _text(capped(incident))


def _text(incident: Incident) -> str:
    rows = incident.rows()
    width = max(len(label) for label, _ in [*rows, *_links(incident), ("What to do", "")]) + 2
    lines = [f"[{incident.severity.upper()}] {incident.title}", "", incident.what, ""]
    lines += [f"{label + ':':<{width}}{value}" for label, value in rows]
    lines += ["", f"{'What to do:':<{width}}{incident.action}"]
    links = _links(incident)
    if links:
        lines.append("")
        lines += [f"{label + ':':<{width}}{url}" for label, url in links]
    return "\n".join(lines)


def render_chatbot(incident: Incident) -> dict[str, Any]:
    """The same incident as an Amazon Q Developer custom notification, its fields escaped for
    client-markdown."""
    return _chatbot(capped(incident), escaped=mapped(capped(incident), markup.markdown))


def _chatbot(incident: Incident, *, escaped: Incident) -> dict[str, Any]:
    """``incident``'s fields raw (data: keywords, context) and ``escaped`` (what is shown)."""
    facts = "\n".join(f"*{label}:* {value}" for label, value in escaped.rows())
    links = [f"{label}: {url}" for label, url in _links(incident)]
    return {
        "version": "1.0",
        "source": "custom",
        "id": incident.key,
        "content": {
            "textType": "client-markdown",
            "title": f"{_ICON[incident.severity]} [{incident.severity.upper()}] {escaped.title}",
            "description": f"{escaped.what}\n\n{facts}",
            "nextSteps": [escaped.action, *links],
            "keywords": [incident.severity, incident.kind, incident.cluster, incident.node],
        },
        "metadata": {
            "threadId": incident.key,
            "summary": subject(escaped),
            "eventType": incident.kind,
            "relatedResources": list(incident.resources),
            "additionalContext": {
                "cluster": incident.cluster,
                "node": incident.node,
                "gpu": incident.gpu,
                "severity": incident.severity,
            },
        },
    }


def publish_arguments(incident: Incident, topic_arn: str) -> dict[str, str]:
    """``sns.publish`` keyword arguments: plain text by default and for email, the custom
    notification for HTTPS subscribers (Amazon Q Developer). The whole ``Message`` (the JSON
    of the three) fits SNS's limit, and the notification Amazon Q Developer shows fits the
    smallest of the chat apps it posts to."""

    def render(capped_incident: Incident) -> tuple[str, str]:
        text = _text(capped_incident)
        chatbot = json.dumps(
            _chatbot(capped_incident, escaped=mapped(capped_incident, markup.markdown))
        )
        return json.dumps({"default": text, "email": text, "https": chatbot}), chatbot

    def fits(out: tuple[str, str]) -> bool:
        message, chatbot = out
        return (
            utf8_len(message) <= SNS_MESSAGE_BYTES
            and utf8_len(chatbot) <= Q_DEVELOPER_NOTIFICATION_BYTES
        )

    message, _ = fitted(incident, render, fits)
    return {
        "TopicArn": topic_arn,
        "Subject": subject(incident),
        "Message": message,
        "MessageStructure": "json",
    }
