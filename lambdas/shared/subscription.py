"""The payload of a CloudWatch Logs subscription to Lambda, decoded or refused by name.

CloudWatch Logs delivers ``{"awslogs": {"data": BASE64}}`` where the data is a gzip-compressed
JSON object with ``messageType`` (``DATA_MESSAGE`` or ``CONTROL_MESSAGE``), ``logGroup``,
``logStream`` and ``logEvents`` (a list of ``{"id", "timestamp", "message"}``); CloudWatch Logs
User Guide, "Using subscription filters with AWS Lambda", and "Subscription filters: examples"
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/SubscriptionFilters.html). Anything
else raises ``SubscriptionPayloadError`` with one line naming the part that was wrong.
"""

import base64
import binascii
import gzip
import io
import json
import zlib
from typing import Any

from lambdas.shared.events import EventError

#: A subscription delivers at most 1 MB of events; anything larger decompressed is not one.
MAX_DECOMPRESSED_BYTES = 16 * 1024 * 1024


class SubscriptionPayloadError(EventError):
    """A log subscription event that is not CloudWatch Logs' payload; the message says which
    part (the envelope, base64, gzip, JSON or a field)."""


def decode_subscription(event: Any) -> dict[str, Any]:
    """The decoded payload; its ``logEvents`` is a list of objects for a data message."""
    if not isinstance(event, dict) or not isinstance(event.get("awslogs"), dict):
        raise SubscriptionPayloadError('subscription event has no "awslogs" object')
    data = event["awslogs"].get("data")
    if not isinstance(data, str):
        raise SubscriptionPayloadError('subscription event "awslogs.data" is not a string')
    try:
        compressed = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as err:
        raise SubscriptionPayloadError(f'subscription "awslogs.data" is not base64: {err}') from err
    try:
        raw = gzip.GzipFile(fileobj=io.BytesIO(compressed)).read(MAX_DECOMPRESSED_BYTES + 1)
    except (OSError, EOFError, zlib.error) as err:
        raise SubscriptionPayloadError(f'subscription "awslogs.data" is not gzip: {err}') from err
    if len(raw) > MAX_DECOMPRESSED_BYTES:
        raise SubscriptionPayloadError(
            f"subscription payload is over {MAX_DECOMPRESSED_BYTES} bytes decompressed"
        )
    try:
        payload = json.loads(raw)
    except ValueError as err:  # JSONDecodeError and UnicodeDecodeError alike
        raise SubscriptionPayloadError(f"subscription payload is not JSON: {err}") from err
    if not isinstance(payload, dict):
        raise SubscriptionPayloadError(
            f"subscription payload is a JSON {type(payload).__name__}, not an object"
        )
    if payload.get("messageType") == "CONTROL_MESSAGE":
        return payload
    events = payload.get("logEvents", [])
    if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
        raise SubscriptionPayloadError('subscription payload "logEvents" is not a list of objects')
    return payload
