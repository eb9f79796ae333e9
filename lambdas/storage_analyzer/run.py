"""One storage analysis: discover, fetch in full batches, analyze volume by volume as their
series arrive, and keep going past any resource that fails."""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lambdas.shared.findings import AnalysisRun, Finding
from lambdas.shared.metric_fetcher import fetch
from lambdas.storage_analyzer.aws import (
    VolumeScope,
    bucket_queries,
    discover_volumes,
    request_metric_filters,
    volume_queries,
)
from lambdas.storage_analyzer.ebs_analysis import (
    ANALYZER,
    EbsThresholds,
    Volume,
    VolumeMetrics,
    analyze_volume,
)
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


def _volume_findings(
    cloudwatch: Any,
    volumes: Sequence[Volume],
    start: float,
    end: float,
    t: EbsThresholds,
    run: StorageRun,
) -> Iterator[Finding]:
    """Series come in query order, a volume's together; a volume is analyzed as soon as its
    last series has arrived, so only the volumes of one batch are ever held."""
    by_id = {v.volume_id: v for v in volumes}
    expected = {v.volume_id: len(volume_queries(v)) for v in volumes}
    pending: dict[str, tuple[VolumeMetrics, int]] = {}
    queries = (q for v in volumes for q in volume_queries(v))
    try:
        for batch in fetch(cloudwatch, queries, start=start, end=end):
            for series in batch:
                volume_id, name = series.query.key
                metrics, seen = pending.get(volume_id, (VolumeMetrics(), 0))
                setattr(metrics, name, series.values)
                pending[volume_id] = (metrics, seen + 1)
                if seen + 1 == expected[volume_id]:
                    del pending[volume_id]
                    yield from _analyze(by_id[volume_id], metrics, t, run)
    except AWS_ERRORS as err:
        # The metric read itself failed: every volume not yet analyzed is skipped, by name.
        done = {f.resource for f in run.findings}
        for volume in volumes:
            if volume.volume_id not in done and volume.volume_id in expected:
                run.skip(volume.volume_id, err)
        return


def _analyze(
    volume: Volume, metrics: VolumeMetrics, t: EbsThresholds, run: StorageRun
) -> Iterator[Finding]:
    run.volumes += 1
    try:
        yield from analyze_volume(volume, metrics, t)
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
    for finding in _volume_findings(cloudwatch, volumes, start, end, ebs_thresholds, run):
        run.findings.append(finding)
    for finding in _bucket_findings(s3, cloudwatch, buckets, start, end, s3_thresholds, run):
        run.findings.append(finding)
    return run
