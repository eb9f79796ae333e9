"""Lambda entry point of the notifier. Two sources, one formatter:

- a CloudWatch Logs subscription delivers XID events (the exporter's EMF, kernel lines); they
  are grouped per node, GPU, code and window, one message per group;
- an EventBridge rule delivers this app's alarm and contributor state changes; each GPU that
  goes into ALARM is one message.

Each incident is claimed in the sent ledger before it is published, so a retried invocation
sends only what was not sent. Critical incidents go to the critical topic, the rest to the
warning topic.
"""

import logging
import time
from dataclasses import replace
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lambdas.shared.aws_clients import ClientCache
from lambdas.shared.subscription import decode_subscription
from lambdas.xid_notifier.config import NotifierConfig
from lambdas.xid_notifier.incidents import Deployment, Skipped, from_alarm_event, from_xid_group
from lambdas.xid_notifier.jobs import (
    Placement,
    PlacementLookupError,
    alarm_time_ms,
    is_job_kind,
    job_incident,
    job_placement,
)
from lambdas.xid_notifier.messages import group_xids, parse_log_events
from lambdas.xid_notifier.notification import Incident, publish_arguments
from lambdas.xid_notifier.pods import PodLookupError, pods_on_gpu
from lambdas.xid_notifier.sent_ledger import SentLedger

log = logging.getLogger()
log.setLevel(logging.INFO)

_clients = ClientCache()


class PublishError(Exception):
    """SNS refused a notification; raised so that Lambda retries and then dead-letters."""


def decode(event: dict[str, Any]) -> dict[str, Any]:
    """The subscription payload, or ``SubscriptionPayloadError`` naming what was wrong."""
    return decode_subscription(event)


def deployment(config: NotifierConfig) -> Deployment:
    return Deployment(
        cluster=config.cluster_name,
        region=config.region,
        gpu_dashboard=config.gpu_dashboard,
        alarm_kinds=config.alarm_kinds,
    )


def send(
    sns: Any, ledger: SentLedger, incidents: list[Incident], now_s: float, config: NotifierConfig
) -> int:
    """Publish each incident not sent before; a failed publish is released and raised."""
    sent = 0
    for incident in incidents:
        if not ledger.claim(incident.key, now_s):
            continue
        topic = (
            config.critical_topic_arn
            if incident.severity == "critical"
            else config.warning_topic_arn
        )
        try:
            sns.publish(**publish_arguments(incident, topic))
        except (ClientError, BotoCoreError) as err:
            ledger.release(incident.key)
            raise PublishError(f"publishing {incident.key} to {topic}: {err}") from err
        sent += 1
    return sent


def _ledger(config: NotifierConfig) -> SentLedger:
    return SentLedger(_clients("dynamodb"), config.sent_table)


def _from_logs(event: dict[str, Any], now_s: float, config: NotifierConfig) -> dict[str, int]:
    payload = decode(event)
    if payload.get("messageType") == "CONTROL_MESSAGE":
        return {"incidents": 0, "published": 0, "unreadable": 0}
    where = deployment(config)
    parsed = parse_log_events(payload, cluster=where.cluster)
    incidents = [from_xid_group(g, where) for g in group_xids(parsed.notices)]
    published = send(_clients("sns"), _ledger(config), incidents, now_s, config)
    if parsed.unreadable:
        log.warning("%d log events named an XID but could not be read", parsed.unreadable)
    return {"incidents": len(incidents), "published": published, "unreadable": parsed.unreadable}


def _with_pods(incident: Incident, at_ms: int, log_group: str) -> Incident:
    """The pods the exporter last saw on the GPU the alarm names, where it names one."""
    if incident.pods or not incident.gpu.isdigit():
        return incident
    try:
        uids = pods_on_gpu(_clients("logs"), log_group, incident.node, incident.gpu, at_ms)
    except PodLookupError as err:
        log.warning("no pods for %s: %s", incident.key, err)
        return incident
    return replace(incident, pods=tuple(f"{uid} (pod UID)" for uid in uids))


def _with_job(incident: Incident, at_ms: int, config: NotifierConfig) -> Incident:
    """A job alarm's incident with the job's pods, nodes and GPUs (its ranks' newest
    documents in the training log group), where the emitter was told them."""
    try:
        placement = job_placement(
            _clients("logs"), incident.cluster, incident.job or "", alarm_time_ms(incident, at_ms)
        )
    except PlacementLookupError as err:
        log.warning("no placement for %s: %s", incident.key, err)
        placement = Placement()
    return job_incident(incident, config.region, placement)


def _from_alarm(event: dict[str, Any], now_s: float, config: NotifierConfig) -> dict[str, int]:
    result = from_alarm_event(event, deployment(config))
    if isinstance(result, Skipped):
        log.info("not an incident: %s", result.reason)
        return {"incidents": 0, "published": 0, "unreadable": 0}
    if is_job_kind(result.kind) and result.job:
        incident = _with_job(result, int(now_s * 1000), config)
    else:
        incident = _with_pods(result, int(now_s * 1000), config.exporter_log_group)
    published = send(_clients("sns"), _ledger(config), [incident], now_s, config)
    return {"incidents": 1, "published": published, "unreadable": 0}


def handler(event: dict[str, Any], context: object) -> dict[str, int]:
    now_s = time.time()
    config = NotifierConfig.current()
    if "awslogs" in event:
        return _from_logs(event, now_s, config)
    return _from_alarm(event, now_s, config)
