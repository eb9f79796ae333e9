"""Where findings go: JSON lines in the report bucket, one EventBridge event each, and counts
in ``GpuInsights/Findings``. Clients are injected; configure them with adaptive retries.

Reruns change nothing a reader counts. The S3 key is fixed by cluster, analyzer and day, so a
rerun for the same day replaces the file instead of adding a second one. Counts are stamped at
00:00 UTC of the day and read with ``FINDINGS_COUNT_STAT`` (Maximum), so a rerun's repeated
datum does not add (a rerun that finds more raises the day's count to its own; one that finds
fewer leaves the higher count). Events are at-least-once (a rerun sends them again); each
event's detail carries ``finding_id``, stable for the same finding on the same day, and
``day``: a consumer acts once per ``finding_id``.
"""

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_KIND,
    DIM_SEVERITY,
    FINDINGS_COUNT_METRIC,
    NAMESPACE_FINDINGS,
)
from lambdas.shared.findings import Finding

EVENT_SOURCE: Final = "gpu-insights"
EVENT_DETAIL_TYPE: Final = "GPU Insights Finding"
#: PutEvents takes at most 10 entries per call.
EVENTS_PER_CALL: Final = 10


class PublishError(Exception):
    """A destination refused findings; raised from the AWS error, after the client's retries."""


def findings_key(cluster: str, analyzer: str, day: date) -> str:
    return f"findings/cluster={cluster}/date={day.isoformat()}/{analyzer}.jsonl"


def finding_ids(cluster: str, analyzer: str, day: date, findings: Sequence[Finding]) -> list[str]:
    """One id per finding, the same on every run for the same day: a digest of the cluster,
    analyzer, day, kind and resource, and the finding's ordinal among those with the same kind
    and resource (one bucket can have several request-metrics filters)."""
    seen: Counter[tuple[str, str]] = Counter()
    ids = []
    for finding in findings:
        same = (str(finding.kind), finding.resource)
        seen[same] += 1
        name = json.dumps([cluster, analyzer, day.isoformat(), *same, seen[same]])
        ids.append(hashlib.sha256(name.encode()).hexdigest()[:32])
    return ids


@dataclass(frozen=True)
class Published:
    key: str
    findings: int
    events: int


class FindingsPublisher:
    def __init__(
        self,
        *,
        s3: Any,
        events: Any,
        cloudwatch: Any,
        bucket: str,
        event_bus: str,
        cluster: str,
        analyzer: str,
        keep: Callable[[str, bytes], None] | None = None,
    ) -> None:
        """``keep`` receives the findings file when S3 refuses it (after the client's retries),
        so a failed run loses nothing it computed."""
        self._s3, self._events, self._cloudwatch = s3, events, cloudwatch
        self._keep = keep
        self._bucket, self._bus = bucket, event_bus
        self._cluster, self._analyzer = cluster, analyzer

    def publish(self, findings: Sequence[Finding], day: date) -> Published:
        key = findings_key(self._cluster, self._analyzer, day)
        body = "".join(f.to_json() + "\n" for f in findings).encode()
        try:
            self._s3.put_object(
                Bucket=self._bucket, Key=key, Body=body, ContentType="application/x-ndjson"
            )
        except (ClientError, BotoCoreError) as err:
            if self._keep is not None:
                self._keep(key, body)
            raise PublishError(f"writing s3://{self._bucket}/{key}: {err}") from err
        sent = self._send_events(findings, day)
        self._put_counts(findings, day)
        return Published(key=key, findings=len(findings), events=sent)

    def _send_events(self, findings: Sequence[Finding], day: date) -> int:
        ids = finding_ids(self._cluster, self._analyzer, day, findings)
        entries = [
            {
                "Source": EVENT_SOURCE,
                "DetailType": EVENT_DETAIL_TYPE,
                "Detail": json.dumps(
                    {**f.to_dict(), "finding_id": finding_id, "day": day.isoformat()},
                    sort_keys=True,
                    separators=(",", ":"),
                ),
                "EventBusName": self._bus,
                "Resources": [f.resource] if f.resource.startswith("arn:") else [],
            }
            for f, finding_id in zip(findings, ids, strict=True)
        ]
        for first in range(0, len(entries), EVENTS_PER_CALL):
            batch = entries[first : first + EVENTS_PER_CALL]
            try:
                response = self._events.put_events(Entries=batch)
                if response.get("FailedEntryCount"):
                    # Entries fail one by one (throttled, too large): send those again, once.
                    failed = [
                        e
                        for e, r in zip(batch, response["Entries"], strict=True)
                        if "ErrorCode" in r
                    ]
                    retry = self._events.put_events(Entries=failed)
                    if retry.get("FailedEntryCount"):
                        codes = sorted(
                            {r["ErrorCode"] for r in retry["Entries"] if "ErrorCode" in r}
                        )
                        raise PublishError(
                            f"EventBridge refused {retry['FailedEntryCount']} findings: {codes}"
                        )
            except (ClientError, BotoCoreError) as err:
                raise PublishError(f"sending finding events to {self._bus}: {err}") from err
        return len(entries)

    def _put_counts(self, findings: Sequence[Finding], day: date) -> None:
        counts = Counter((str(f.kind), str(f.severity)) for f in findings)
        stamp = datetime.combine(day, time.min, UTC)
        data = [
            {
                "MetricName": FINDINGS_COUNT_METRIC,
                "Timestamp": stamp,
                "Dimensions": [
                    {"Name": DIM_CLUSTER, "Value": self._cluster},
                    {"Name": DIM_KIND, "Value": kind},
                    {"Name": DIM_SEVERITY, "Value": severity},
                ],
                "Value": float(n),
                "Unit": "Count",
            }
            for (kind, severity), n in sorted(counts.items())
        ]
        try:
            for first in range(0, len(data), 1000):
                self._cloudwatch.put_metric_data(
                    Namespace=NAMESPACE_FINDINGS, MetricData=data[first : first + 1000]
                )
        except (ClientError, BotoCoreError) as err:
            raise PublishError(f"putting finding counts: {err}") from err


#: SQS takes messages of at most 256 KiB; findings go in parts under that.
QUEUE_PART_BYTES: Final = 200_000


def failure_queue_keeper(
    clients: Callable[[str], Any], url: str | None
) -> Callable[[str, bytes], None] | None:
    """Where a Lambda's findings go when S3 refuses them: its failure queue, when it has one."""
    return queue_keeper(clients("sqs"), url) if url else None


def queue_keeper(sqs: Any, queue_url: str) -> Callable[[str, bytes], None]:
    """Sends a findings file to the failure queue, in parts of whole lines, each message
    naming the S3 key it was meant for; a person can replay them into the bucket."""

    def keep(key: str, body: bytes) -> None:
        part: list[bytes] = []
        size = 0
        parts: list[bytes] = []
        for line in body.splitlines(keepends=True):
            if part and size + len(line) > QUEUE_PART_BYTES:
                parts.append(b"".join(part))
                part, size = [], 0
            part.append(line)
            size += len(line)
        if part:
            parts.append(b"".join(part))
        for number, chunk in enumerate(parts, start=1):
            sqs.send_message(
                QueueUrl=queue_url,
                MessageBody=chunk.decode(),
                MessageAttributes={
                    "findings_key": {"DataType": "String", "StringValue": key},
                    "part": {"DataType": "String", "StringValue": f"{number}/{len(parts)}"},
                },
            )

    return keep
