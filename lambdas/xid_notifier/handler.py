"""Lambda entry point: a CloudWatch Logs subscription delivers XID events; each becomes one
SNS message on the critical or the warning topic, by the code's severity."""

import logging
import os
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from agent.xid import XidSeverity
from lambdas.shared.aws_clients import ClientCache
from lambdas.shared.subscription import decode_subscription
from lambdas.xid_notifier.messages import XidNotice, parse_log_events

log = logging.getLogger()
log.setLevel(logging.INFO)

_clients = ClientCache()


class PublishError(Exception):
    """SNS refused a notification; raised so that Lambda retries and then dead-letters."""


def decode(event: dict[str, Any]) -> dict[str, Any]:
    """The subscription payload, or ``SubscriptionPayloadError`` naming what was wrong."""
    return decode_subscription(event)


def publish(sns: Any, notices: list[XidNotice], *, critical_arn: str, warning_arn: str) -> int:
    for notice in notices:
        topic = critical_arn if notice.severity is XidSeverity.FATAL else warning_arn
        try:
            sns.publish(TopicArn=topic, Subject=notice.subject, Message=notice.body())
        except (ClientError, BotoCoreError) as err:
            raise PublishError(f"publishing XID {notice.code} to {topic}: {err}") from err
    return len(notices)


def handler(event: dict[str, Any], context: object) -> dict[str, int]:
    payload = decode(event)
    if payload.get("messageType") == "CONTROL_MESSAGE":
        return {"published": 0, "unreadable": 0}
    parsed = parse_log_events(payload, cluster=os.environ["CLUSTER_NAME"])
    published = publish(
        _clients("sns"),
        parsed.notices,
        critical_arn=os.environ["CRITICAL_TOPIC_ARN"],
        warning_arn=os.environ["WARNING_TOPIC_ARN"],
    )
    if parsed.unreadable:
        log.warning("%d log events named an XID but could not be read", parsed.unreadable)
    return {"published": published, "unreadable": parsed.unreadable}
