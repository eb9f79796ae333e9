"""AWS adapters of the storage analyzer: which volumes and buckets, and which metric queries.
Every client is injected; every call is read-only."""

from collections.abc import Iterator
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from lambdas.shared.metric_fetcher import MetricQuery
from lambdas.storage_analyzer.ebs_analysis import Volume

PERIOD_S: Final = 3600
#: Burst balance exists only for volumes that burst.
BURSTING_TYPES: Final = frozenset({"gp2", "st1", "sc1"})

#: (field of VolumeMetrics, CloudWatch metric, statistic)
VOLUME_METRICS: Final = (
    ("read_ops", "VolumeReadOps", "Sum"),
    ("write_ops", "VolumeWriteOps", "Sum"),
    ("read_bytes", "VolumeReadBytes", "Sum"),
    ("write_bytes", "VolumeWriteBytes", "Sum"),
    ("queue_length", "VolumeQueueLength", "Average"),
    ("iops_exceeded", "VolumeIOPSExceededCheck", "Maximum"),
    ("throughput_exceeded", "VolumeThroughputExceededCheck", "Maximum"),
)
BUCKET_METRICS: Final = (
    ("first_byte_p99_ms", "FirstByteLatency", "p99"),
    ("total_latency_p99_ms", "TotalRequestLatency", "p99"),
    ("requests", "AllRequests", "Sum"),
    ("errors_4xx", "4xxErrors", "Sum"),
    ("errors_5xx", "5xxErrors", "Sum"),
    ("bytes_downloaded", "BytesDownloaded", "Sum"),
)


class VolumeScope(StrEnum):
    #: Volumes the EBS CSI driver tagged for the cluster, and those of its nodes.
    CLUSTER = "cluster"
    ALL = "all"


def _epoch(stamp: datetime | None) -> float | None:
    return stamp.timestamp() if stamp is not None else None


def _volume(raw: dict[str, Any]) -> Volume:
    """A DescribeVolumes volume: its attachment's instance and start (``AttachTime``), and its
    ``CreateTime``, so that it is judged only on the hours it existed and was attached."""
    attachments = raw.get("Attachments") or []
    return Volume(
        volume_id=raw["VolumeId"],
        volume_type=raw.get("VolumeType", "standard"),
        size_gib=int(raw.get("Size", 0)),
        state=raw.get("State", "in-use"),
        iops=raw.get("Iops"),
        throughput_mibps=raw.get("Throughput"),
        attached_to=attachments[0].get("InstanceId") if attachments else None,
        created=_epoch(raw.get("CreateTime")),
        attached_at=_epoch(attachments[0].get("AttachTime")) if attachments else None,
    )


def _describe(ec2: Any, filters: list[dict[str, Any]]) -> Iterator[Volume]:
    kwargs = {"Filters": filters} if filters else {}
    for page in ec2.get_paginator("describe_volumes").paginate(**kwargs):
        for raw in page["Volumes"]:
            yield _volume(raw)


def discover_volumes(ec2: Any, *, cluster: str, scope: VolumeScope) -> list[Volume]:
    if scope is VolumeScope.ALL:
        return list(_describe(ec2, []))
    found = {
        v.volume_id: v
        for v in _describe(
            ec2, [{"Name": "tag-key", "Values": [f"kubernetes.io/cluster/{cluster}"]}]
        )
    }
    instances = [
        instance["InstanceId"]
        for page in ec2.get_paginator("describe_instances").paginate(
            Filters=[{"Name": "tag:eks:cluster-name", "Values": [cluster]}]
        )
        for reservation in page["Reservations"]
        for instance in reservation["Instances"]
    ]
    for first in range(0, len(instances), 200):  # a filter takes at most 200 values
        chunk = instances[first : first + 200]
        for volume in _describe(ec2, [{"Name": "attachment.instance-id", "Values": chunk}]):
            found.setdefault(volume.volume_id, volume)
    return sorted(found.values(), key=lambda v: v.volume_id)


def volume_queries(volume: Volume) -> list[MetricQuery]:
    """Every series hourly: the plan before the datapoint floor (ebs_plan), which
    ``make bench`` measures as the baseline."""
    dims = (("VolumeId", volume.volume_id),)
    queries = [
        MetricQuery((volume.volume_id, field), "AWS/EBS", metric, dims, stat, PERIOD_S)
        for field, metric, stat in VOLUME_METRICS
    ]
    if volume.volume_type in BURSTING_TYPES:
        queries.append(
            MetricQuery(
                (volume.volume_id, "burst_balance"),
                "AWS/EBS",
                "BurstBalance",
                dims,
                "Minimum",
                PERIOD_S,
            )
        )
    return queries


def request_metric_filters(s3: Any, bucket: str) -> list[str]:
    """The bucket's request-metrics configuration ids (empty: request metrics are off)."""
    ids: list[str] = []
    kwargs: dict[str, Any] = {"Bucket": bucket}
    while True:
        response = s3.list_bucket_metrics_configurations(**kwargs)
        ids += [c["Id"] for c in response.get("MetricsConfigurationList", [])]
        if not response.get("IsTruncated"):
            return ids
        kwargs["ContinuationToken"] = response["NextContinuationToken"]


def bucket_queries(bucket: str, filter_id: str) -> list[MetricQuery]:
    dims = (("BucketName", bucket), ("FilterId", filter_id))
    return [
        MetricQuery((bucket, filter_id, field), "AWS/S3", metric, dims, stat, PERIOD_S)
        for field, metric, stat in BUCKET_METRICS
    ]
