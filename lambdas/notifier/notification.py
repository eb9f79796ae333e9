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
"""

import json
from dataclasses import dataclass, field
from typing import Any, Final, Literal

Severity = Literal["critical", "warning"]

#: SNS: a subject is ASCII, has no line breaks, and is "less than 100 characters".
MAX_SUBJECT: Final = 99
_ICON: Final = {"critical": ":rotating_light:", "warning": ":warning:"}


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
    threshold: str | None = None
    observed: str | None = None
    when: str | None = None
    alarm_url: str | None = None
    dashboard_url: str | None = None
    #: ARNs the incident is about (the alarm), for the chat notification's metadata.
    resources: tuple[str, ...] = ()
    #: Further labelled facts (the XID code and its source, the count of repeats).
    facts: tuple[tuple[str, str], ...] = field(default=())

    def rows(self) -> list[tuple[str, str]]:
        """The labelled facts, in reading order; absent ones are left out, not blank."""
        rows = [("Cluster", self.cluster), ("Node", self.node), ("GPU", self.gpu)]
        if self.pods:
            rows.append(("Pods", ", ".join(self.pods)))
        if self.job:
            rows.append(("Job", self.job))
        if self.threshold is not None:
            rows.append(("Threshold", self.threshold))
        if self.observed is not None:
            rows.append(("Observed", self.observed))
        rows += list(self.facts)
        if self.when:
            rows.append(("When", self.when))
        return rows


def subject(incident: Incident) -> str:
    text = f"[{incident.severity.upper()}] {incident.title}"
    ascii_text = text.encode("ascii", "replace").decode().replace("\n", " ")
    return ascii_text[:MAX_SUBJECT]


def _links(incident: Incident) -> list[tuple[str, str]]:
    links = []
    if incident.alarm_url:
        links.append(("Alarm", incident.alarm_url))
    if incident.dashboard_url:
        links.append(("GPU dashboard", incident.dashboard_url))
    return links


def render_text(incident: Incident) -> str:
    """The message an email subscriber reads."""
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
    """The same incident as an Amazon Q Developer custom notification."""
    facts = "\n".join(f"*{label}:* {value}" for label, value in incident.rows())
    links = [f"{label}: {url}" for label, url in _links(incident)]
    return {
        "version": "1.0",
        "source": "custom",
        "id": incident.key,
        "content": {
            "textType": "client-markdown",
            "title": f"{_ICON[incident.severity]} [{incident.severity.upper()}] {incident.title}",
            "description": f"{incident.what}\n\n{facts}",
            "nextSteps": [incident.action, *links],
            "keywords": [incident.severity, incident.kind, incident.cluster, incident.node],
        },
        "metadata": {
            "threadId": incident.key,
            "summary": subject(incident),
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
    notification for HTTPS subscribers (Amazon Q Developer)."""
    text = render_text(incident)
    message = {
        "default": text,
        "email": text,
        "https": json.dumps(render_chatbot(incident)),
    }
    return {
        "TopicArn": topic_arn,
        "Subject": subject(incident),
        "Message": json.dumps(message),
        "MessageStructure": "json",
    }
