"""Lambda entry point of the storage analyzer, on an EventBridge schedule (daily by default).

Settings come from the environment at cold start: CLUSTER_NAME, VOLUME_SCOPE (cluster|all),
BUCKETS (comma-separated), LOOKBACK_DAYS, REPORT_BUCKET, EVENT_BUS.
"""

import logging
import os
from datetime import UTC, datetime
from typing import Any

from lambdas.shared.aws_clients import ClientCache
from lambdas.shared.events import scheduled_time
from lambdas.shared.publisher import FindingsPublisher, failure_queue_keeper
from lambdas.storage_analyzer.aws import VolumeScope
from lambdas.storage_analyzer.ebs_analysis import ANALYZER
from lambdas.storage_analyzer.run import analyze_storage

log = logging.getLogger()
log.setLevel(logging.INFO)
_clients = ClientCache()


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    cluster = os.environ["CLUSTER_NAME"]
    end = scheduled_time(event).timestamp()
    end -= end % 3600
    start = end - int(os.environ.get("LOOKBACK_DAYS", "14")) * 86_400
    run = analyze_storage(
        ec2=_clients("ec2"),
        s3=_clients("s3"),
        cloudwatch=_clients("cloudwatch"),
        cluster=cluster,
        scope=VolumeScope(os.environ.get("VOLUME_SCOPE", "cluster")),
        buckets=[b for b in os.environ.get("BUCKETS", "").split(",") if b],
        start=start,
        end=end,
    )
    stamp = datetime.fromtimestamp(end, UTC).isoformat()
    findings = [
        f.__class__(**{**f.__dict__, "cluster": cluster, "detected_at": stamp})
        for f in run.findings
    ]
    published = FindingsPublisher(
        s3=_clients("s3"),
        events=_clients("events"),
        cloudwatch=_clients("cloudwatch"),
        bucket=os.environ["REPORT_BUCKET"],
        event_bus=os.environ.get("EVENT_BUS", "default"),
        cluster=cluster,
        analyzer=ANALYZER,
        keep=failure_queue_keeper(_clients),
    ).publish(findings, datetime.fromtimestamp(end, UTC).date())
    summary = {
        "volumes": run.volumes,
        "buckets": run.buckets,
        "findings": len(findings),
        "skipped": run.skipped,
        "key": published.key,
    }
    log.info("storage analysis done: %s", summary)
    return summary
