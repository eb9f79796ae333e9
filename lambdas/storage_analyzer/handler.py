"""Lambda entry point of the storage analyzer, on an EventBridge schedule (daily by default).

Its environment is declared in lambdas/storage_analyzer/config.py and read at cold start.
"""

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from gpu_insights_agent.contract.resource_names import dashboard_name
from lambdas.shared.aws_clients import ClientCache
from lambdas.shared.console_links import STORAGE_DASHBOARD
from lambdas.shared.events import analysis_window, scheduled_time
from lambdas.shared.findings import stamped
from lambdas.shared.publisher import FindingsPublisher, failure_queue_keeper
from lambdas.storage_analyzer import fleet
from lambdas.storage_analyzer.config import StorageConfig
from lambdas.storage_analyzer.dashboard import draw_volumes
from lambdas.storage_analyzer.ebs_analysis import ANALYZER
from lambdas.storage_analyzer.run import StorageRun, analyze_buckets, analyze_storage
from lambdas.storage_analyzer.s3_analysis import S3Thresholds

log = logging.getLogger()
log.setLevel(logging.INFO)
_clients = ClientCache()


def _publish(run: StorageRun, config: StorageConfig, end: float) -> dict[str, Any]:
    cluster = config.cluster_name
    findings = stamped(run.findings, cluster, end)
    # The deployed storage dashboard draws the volumes found today (EBS metrics name no
    # cluster); a dashboard that cannot be written is logged, and the findings still go out.
    drawn = draw_volumes(
        _clients("cloudwatch"), dashboard_name(cluster, STORAGE_DASHBOARD), cluster, run.volume_ids
    )
    published = FindingsPublisher(
        s3=_clients("s3"),
        events=_clients("events"),
        cloudwatch=_clients("cloudwatch"),
        bucket=config.report_bucket,
        event_bus=config.event_bus,
        cluster=cluster,
        analyzer=ANALYZER,
        keep=failure_queue_keeper(_clients, config.failure_queue_url),
    ).publish(findings, datetime.fromtimestamp(end, UTC).date())
    summary = {
        "volumes": run.volumes,
        "buckets": run.buckets,
        "findings": len(findings),
        # A count: the merge's output is a Step Functions state (at most 256 KiB); each
        # skipped resource is named by its analysis_error finding in the file at ``key``.
        "skipped": len(run.skipped),
        "key": published.key,
        "dashboard_volumes": len(run.volume_ids) if drawn else None,
    }
    log.info("storage analysis done: %s", summary)
    return summary


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    """A whole run (the schedule's event), or, under the fleet state machine, its ``plan``,
    one ``shard`` or the ``merge`` (lambdas/storage_analyzer/fleet.py), by ``event["mode"]``."""
    config = StorageConfig.current()
    cluster, scope, buckets = config.cluster_name, config.volume_scope, list(config.buckets)
    start, end = analysis_window(scheduled_time(event).timestamp(), config.lookback_days)
    bucket, day = config.report_bucket, datetime.fromtimestamp(end, UTC).date().isoformat()
    mode = event.get("mode")
    if mode == "plan":
        return fleet.plan(
            ec2=_clients("ec2"), s3=_clients("s3"), bucket=bucket, cluster=cluster,
            scope=scope, day=day, per_shard=config.shard_volumes,
        )  # fmt: skip
    if mode == "shard":
        return fleet.shard(
            s3=_clients("s3"), cloudwatch=_clients("cloudwatch"), bucket=bucket,
            cluster=cluster, day=day, index=int(event["index"]), first=int(event["first"]),
            count=int(event["count"]), start=start, end=end,
        )  # fmt: skip
    if mode == "merge":
        run = fleet.read_parts(
            s3=_clients("s3"), bucket=bucket, cluster=cluster, day=day,
            shards=len(event["shards"]),
        )  # fmt: skip
        analyze_buckets(
            _clients("s3"), _clients("cloudwatch"), buckets, start, end, S3Thresholds(), run
        )
        return _publish(run, config, end)
    return _publish(analyze(config, _clients, start, end), config, end)


def analyze(
    config: StorageConfig, clients: Callable[[str], Any], start: float, end: float
) -> StorageRun:
    """A whole run's reads (no shards), with ``clients`` by service name: the handler's cache
    or ``gpu-insights analyze storage``'s. Read-only."""
    return analyze_storage(
        ec2=clients("ec2"),
        s3=clients("s3"),
        cloudwatch=clients("cloudwatch"),
        cluster=config.cluster_name,
        scope=config.volume_scope,
        buckets=list(config.buckets),
        start=start,
        end=end,
    )
