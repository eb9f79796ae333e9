"""The page the notifier would send for each ALARM of a PromQL alarm's replay, and for each XID
the exporter's OTel-mode log lines hold, through the notifier's own code: the event read as its
handler reads it (``from_alarm_event``, ``parse_log_events``), the incident placed as it places
it (``handler.placed``: a job's ranks and a model's replicas read by PromQL, here from the
replay's engine), and rendered as its email subscribers read it (``subject``,
``render_text``). Nothing is sent."""

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from cdk.alarms.model import AlarmSpec
from cdk.function_configs import notifier_config
from cdk.settings import Settings
from cli.backtest.promql_alarm import ALARM, Transition
from gpu_insights_agent.emf.document import EmfDocument, encode
from lambdas.notifier.config import NotifierConfig
from lambdas.notifier.handler import deployment, placed
from lambdas.notifier.incidents import Skipped, from_alarm_event, from_xid_group
from lambdas.notifier.messages import group_xids, parse_log_events
from lambdas.notifier.notification import render_text, subject
from lambdas.shared.promql import PromQLClient

#: The replay's notifier has no topics, ledger or log groups: nothing is sent or read there.
_NOWHERE: Final = "-"


@dataclass(frozen=True)
class Page:
    """A page the notifier would send: when (epoch seconds), for which alarm (``xid-log`` for
    the exporter's log line) and its subject and text, or why it would send none."""

    at: float
    alarm: str
    subject: str
    text: str


def replay_config(settings: Settings, region: str) -> NotifierConfig:
    """The notifier's configuration as its construct builds it from ``settings``."""
    return notifier_config(
        settings,
        region=region,
        critical_topic_arn=_NOWHERE,
        warning_topic_arn=_NOWHERE,
        sent_table=_NOWHERE,
        exporter_log_group=_NOWHERE,
    )


def contributor_event(
    spec: AlarmSpec, cluster: str, region: str, raised: Transition, account: str | None = None
) -> dict[str, Any]:
    """The ``CloudWatch Alarm Contributor State Change`` of a PromQL alarm's contributor:
    its attributes the series' labels. What else a PromQL alarm's event carries is not in the
    User Guide's examples: no metrics list (the query is in its ``EvaluationCriteria``), and a
    reason the notifier does not read to name the GPU (tests/unit/lambdas/notifier/events.py
    ``as_promql_contributor``). ``account``: where the alarm is (its ARN in ``resources``);
    a replay of a file knows none, and the notifier reads it only into a chat message's
    related resources."""
    name = spec.alarm_name(cluster)
    when = datetime.fromtimestamp(raised.at, UTC)
    arn = f"arn:aws:cloudwatch:{region}:{account}:alarm:{name}"
    return {
        "version": "0",
        "id": f"replay-{spec.key}-{int(raised.at)}",
        "detail-type": "CloudWatch Alarm Contributor State Change",
        "source": "aws.cloudwatch",
        **({"account": account} if account else {}),
        "time": f"{when:%Y-%m-%dT%H:%M:%SZ}",
        "region": region,
        "resources": [arn] if account else [],
        "detail": {
            "alarmName": name,
            "alarmContributor": {
                "id": hashlib.sha256(repr(raised.contributor).encode()).hexdigest()[:16],
                "attributes": raised.labels,
            },
            "configuration": {"description": spec.description},
            "state": {"value": ALARM, "reason": "", "timestamp": when.isoformat()},
        },
    }


def alarm_page(
    spec: AlarmSpec, raised: Transition, config: NotifierConfig, promql: PromQLClient
) -> Page:
    """The page of one contributor's ALARM, placed at the alarm's time by ``promql``."""
    event = contributor_event(spec, config.cluster_name, config.region, raised)
    result = from_alarm_event(event, deployment(config))
    if isinstance(result, Skipped):
        return Page(raised.at, spec.key, "", f"no page: {result.reason}")
    incident = placed(result, int(raised.at * 1000), config, promql=lambda: promql,
                      pods_from_log=False)  # fmt: skip
    return Page(raised.at, spec.key, subject(incident), render_text(incident))


#: What a page from the exporter's XID log line is filed under, beside the alarms' keys.
XID_LOG: Final = "xid-log"
#: The log subscription delivers a line this long after it was written (the demo's figure).
DELIVERY_MS: Final = 5_000


def subscription_payload(messages: Sequence[str], at_ms: int, stream: str) -> dict[str, Any]:
    """A CloudWatch Logs subscription's decoded payload of ``messages``, received at ``at_ms``
    from log stream ``stream`` (the node)."""
    return {
        "messageType": "DATA_MESSAGE",
        "logStream": stream,
        "logEvents": [
            {"id": str(i), "timestamp": at_ms + i, "message": m} for i, m in enumerate(messages)
        ],
    }


def xid_pages(lines: Sequence[EmfDocument], config: NotifierConfig) -> list[Page]:
    """Each XID incident of the exporter's log lines, as the notifier's log subscription pages
    it: the lines of a node delivered together (grouped per GPU, code and window as the
    notifier groups them), no kernel log read."""
    by_node: dict[str, list[EmfDocument]] = {}
    for line in lines:
        by_node.setdefault(str(line.get("NodeName", "unknown node")), []).append(line)
    pages = []
    where = deployment(config)
    for node, documents in sorted(by_node.items()):
        received = max(int(d["_aws"]["Timestamp"]) for d in documents) + DELIVERY_MS
        payload = subscription_payload([encode(d) for d in documents], received, node)
        parsed = parse_log_events(payload, cluster=config.cluster_name)
        pages += [
            Page(received / 1000, XID_LOG, "", f"refused: {r.reason}") for r in parsed.refused
        ]
        for group in group_xids(parsed.notices):
            incident = from_xid_group(
                group, where, None, require_kernel=config.require_kernel_confirmation
            )
            at = group.first.time_ms / 1000
            pages.append(Page(at, XID_LOG, subject(incident), render_text(incident)))
    return sorted(pages, key=lambda p: p.at)


def page_lines(page: Page) -> list[str]:
    """A page as the replay's report shows it, indented under its contributor."""
    if not page.subject:
        return [f"      {page.text}"]
    return [f"      page: {line}" if i == 0 else f"            {line}"
            for i, line in enumerate(page.text.splitlines())]  # fmt: skip


def as_json(page: Page) -> dict[str, Any]:
    return {"time": page.at, "alarm": page.alarm, "subject": page.subject, "text": page.text}


def dumps(pages: Sequence[Page]) -> str:
    return json.dumps([as_json(p) for p in pages], indent=2)
