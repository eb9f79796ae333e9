"""One storage analysis: discover, fetch in full batches at the datapoint floor (ebs_plan),
analyze volume by volume as their series arrive, and keep going past any resource that fails."""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lambdas.shared.findings import AnalysisRun, Finding
from lambdas.shared.metric_fetcher import MetricDataError, MetricQuery, fetch, window_period
from lambdas.storage_analyzer.aws import (
    VolumeScope,
    bucket_queries,
    discover_volumes,
    request_metric_filters,
)
from lambdas.storage_analyzer.ebs_analysis import (
    ANALYZER,
    EbsThresholds,
    Volume,
    VolumeMetrics,
    analyze_volume,
)
from lambdas.storage_analyzer.ebs_plan import FILLED, could_fire, first_pass, second_pass
from lambdas.storage_analyzer.s3_analysis import (
    BucketMetrics,
    S3Thresholds,
    analyze_bucket,
    request_metrics_disabled,
)

AWS_ERRORS = (ClientError, BotoCoreError)


@dataclass
class StorageRun(AnalysisRun):
    analyzer: str = ANALYZER
    volumes: int = 0
    buckets: int = 0
    #: The cluster's volumes, by ID, for the storage dashboard's EBS widgets (dashboard.py).
    volume_ids: list[str] = field(default_factory=list)


def _collect(
    cloudwatch: Any,
    plans: dict[str, list[MetricQuery]],
    metrics: dict[str, VolumeMetrics],
    start: float,
    end: float,
    run: StorageRun,
) -> Iterator[str]:
    """Fills each volume's metrics from its planned series; yields a volume's id as soon as
    its last series has arrived (series come in about query order, a volume's in one or two
    neighbouring calls). A volume with a series CloudWatch failed is skipped, not judged."""
    left = {volume_id: len(queries) for volume_id, queries in plans.items()}
    failed: dict[str, str] = {}
    queries = (q for qs in plans.values() for q in qs)
    for batch in fetch(cloudwatch, queries, start=start, end=end):
        for series in batch:
            volume_id, name = series.query.key
            setattr(metrics[volume_id], name, series.values)
            if name in FILLED:
                metrics[volume_id].filled_at[name] = series.timestamps
            if series.error:
                failed.setdefault(volume_id, f"{name}: {series.error}")
            left[volume_id] -= 1
            if left[volume_id]:
                continue
            if volume_id in failed:
                del metrics[volume_id]
                run.skip(volume_id, MetricDataError(failed.pop(volume_id)))
                continue
            yield volume_id


def _volume_findings(
    cloudwatch: Any,
    volumes: Sequence[Volume],
    start: float,
    end: float,
    t: EbsThresholds,
    run: StorageRun,
) -> Iterator[Finding]:
    """First the hourly totals and the window screens of every volume (ebs_plan), analyzing
    each volume as it completes unless a screen could fire; then, for those few, the
    screened series hourly. Only one batch's volumes, and the unsettled ones, are held."""
    by_id = {v.volume_id: v for v in volumes}
    window = window_period(start, end)
    metrics = {v.volume_id: VolumeMetrics() for v in volumes}
    unsettled: dict[str, list[MetricQuery]] = {}
    try:
        first = {v.volume_id: first_pass(v, window) for v in volumes}
        for volume_id in _collect(cloudwatch, first, metrics, start, end, run):
            volume = by_id[volume_id]
            fields = could_fire(volume, metrics[volume_id], t)
            if fields:
                unsettled[volume_id] = second_pass(volume, fields)
                continue
            yield from _analyze(volume, metrics.pop(volume_id), t, end, run)
        for volume_id in _collect(cloudwatch, unsettled, metrics, start, end, run):
            yield from _analyze(by_id[volume_id], metrics.pop(volume_id), t, end, run)
    except AWS_ERRORS as err:
        # The metric read itself failed: every volume not yet analyzed is skipped, by name.
        for volume in volumes:
            if volume.volume_id in metrics:
                run.skip(volume.volume_id, err)
        return


def _analyze(
    volume: Volume, metrics: VolumeMetrics, t: EbsThresholds, end: float, run: StorageRun
) -> Iterator[Finding]:
    run.volumes += 1
    try:
        yield from analyze_volume(volume, metrics, t, end)
    except (ValueError, ZeroDivisionError, TypeError) as err:
        run.skip(volume.volume_id, err)


def _bucket_findings(
    s3: Any,
    cloudwatch: Any,
    buckets: Sequence[str],
    start: float,
    end: float,
    t: S3Thresholds,
    run: StorageRun,
) -> Iterator[Finding]:
    for bucket in buckets:
        try:
            filters = request_metric_filters(s3, bucket)
            run.buckets += 1
            if not filters:
                yield request_metrics_disabled(bucket)
                continue
            queries = [q for f in filters for q in bucket_queries(bucket, f)]
            metrics = {f: BucketMetrics(bucket=bucket, filter_id=f) for f in filters}
            for batch in fetch(cloudwatch, queries, start=start, end=end):
                for series in batch:
                    _, filter_id, name = series.query.key
                    setattr(metrics[filter_id], name, series.values)
            for m in metrics.values():
                yield from analyze_bucket(m, t)
        except AWS_ERRORS as err:
            run.skip(f"arn:aws:s3:::{bucket}", err)


def analyze_volumes(
    cloudwatch: Any,
    volumes: Sequence[Volume],
    start: float,
    end: float,
    t: EbsThresholds = EbsThresholds(),  # noqa: B008
    run: StorageRun | None = None,
) -> StorageRun:
    """These volumes' findings: a whole fleet's, or one shard's (lambdas/shared/shards.py),
    whose runs merged in shard order are the whole fleet's. Volumes finish in fetch order (a
    second-pass volume after the rest of its run), so findings and skips are put back in
    volume order, which is the same whether the volumes are one run or cut into shards."""
    run = run or StorageRun()
    findings, skipped = len(run.findings), len(run.skipped)
    run.findings.extend(_volume_findings(cloudwatch, volumes, start, end, t, run))
    position = {v.volume_id: i for i, v in enumerate(volumes)}
    run.findings[findings:] = sorted(run.findings[findings:], key=lambda f: position[f.resource])
    run.skipped[skipped:] = sorted(run.skipped[skipped:], key=position.__getitem__)
    return run


def analyze_storage(
    *,
    ec2: Any,
    s3: Any,
    cloudwatch: Any,
    cluster: str,
    scope: VolumeScope,
    buckets: Sequence[str],
    start: float,
    end: float,
    ebs_thresholds: EbsThresholds = EbsThresholds(),  # noqa: B008
    s3_thresholds: S3Thresholds = S3Thresholds(),  # noqa: B008
) -> StorageRun:
    run = StorageRun()
    try:
        volumes = discover_volumes(ec2, cluster=cluster, scope=scope)
    except AWS_ERRORS as err:
        run.skip(f"EBS volumes of {cluster}", err)
        volumes = []
    run.volume_ids = [v.volume_id for v in volumes]
    analyze_volumes(cloudwatch, volumes, start, end, ebs_thresholds, run)
    return analyze_buckets(s3, cloudwatch, buckets, start, end, s3_thresholds, run)


def analyze_buckets(
    s3: Any,
    cloudwatch: Any,
    buckets: Sequence[str],
    start: float,
    end: float,
    t: S3Thresholds,
    run: StorageRun,
) -> StorageRun:
    """The buckets' findings, after the volumes' (in one run, or in the merge of shards)."""
    run.findings.extend(_bucket_findings(s3, cloudwatch, buckets, start, end, t, run))
    return run
