"""AWS adapters of the storage analyzer: which volumes and buckets, and which metric queries.
Every client is injected; every call is read-only.

A cluster's volumes, from what AWS and the EBS CSI driver really tag
(kubernetes-sigs/aws-ebs-csi-driver docs/tagging.md): the driver adds ``CSIVolumeName``,
``ebs.csi.aws.com/cluster=true`` and, with the external-provisioner's
``--extra-create-metadata`` (the chart's ``controller.extraCreateMetadata``, true by default,
charts/aws-ebs-csi-driver/values.yaml), ``kubernetes.io/created-for/pv/name``,
``.../pvc/name`` and ``.../pvc/namespace``; it adds ``kubernetes.io/cluster/<id>=owned``
(and, from 2026, ``ebs.csi.aws.com/cluster-name=<id>``, PR #2899) only "if k8s-tag-cluster-id
argument is set", and the chart leaves ``controller.k8sTagClusterId`` unset (the tags a default
install writes: issue #996). So a volume is the cluster's if it is tagged for it, or attached
to one of its instances (lambdas/shared/cluster_tags.py); a detached one the driver made
without a cluster id names no cluster, and EC2 keeps no attachment history (DescribeVolumes
lists current attachments only), so it is taken as this cluster's unless tagged for another,
and its findings say the cluster is unconfirmed.
"""

from collections.abc import Iterator
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from lambdas.shared.cluster_tags import cluster_tag
from lambdas.shared.metric_fetcher import MetricQuery
from lambdas.storage_analyzer.ebs_analysis import Volume

#: The S3 request metrics' period. The EBS queries are lambdas/storage_analyzer/ebs_plan.py's.
PERIOD_S: Final = 3600
BUCKET_METRICS: Final = (
    ("first_byte_p99_ms", "FirstByteLatency", "p99"),
    ("total_latency_p99_ms", "TotalRequestLatency", "p99"),
    ("requests", "AllRequests", "Sum"),
    ("errors_4xx", "4xxErrors", "Sum"),
    ("errors_5xx", "5xxErrors", "Sum"),
    ("bytes_downloaded", "BytesDownloaded", "Sum"),
)


#: The EBS CSI driver's tags (module docstring).
CSI_MANAGED_TAG: Final = "ebs.csi.aws.com/cluster"
CSI_CLUSTER_NAME_TAG: Final = "ebs.csi.aws.com/cluster-name"
CLAIM_NAME_TAG: Final = "kubernetes.io/created-for/pvc/name"
CLAIM_NAMESPACE_TAG: Final = "kubernetes.io/created-for/pvc/namespace"
#: A DescribeVolumes/DescribeInstances filter takes at most 200 values.
FILTER_VALUES: Final = 200


class VolumeScope(StrEnum):
    #: Volumes tagged for the cluster, those attached to its instances, and detached ones the
    #: EBS CSI driver made that name no other cluster.
    CLUSTER = "cluster"
    ALL = "all"


def _epoch(stamp: datetime | None) -> float | None:
    return stamp.timestamp() if stamp is not None else None


def _volume(raw: dict[str, Any], *, cluster_confirmed: bool = True) -> Volume:
    """A DescribeVolumes volume: its attachment's instance and start (``AttachTime``), and its
    ``CreateTime``, so that it is judged only on the hours it existed and was attached; the
    claim the CSI driver made it for, from its tags."""
    attachments = raw.get("Attachments") or []
    tags = _tags(raw)
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
        claim_namespace=tags.get(CLAIM_NAMESPACE_TAG),
        claim_name=tags.get(CLAIM_NAME_TAG),
        cluster_confirmed=cluster_confirmed,
    )


def _tags(raw: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in raw.get("Tags") or []}


def _names_a_cluster(raw: dict[str, Any]) -> bool:
    return any(key.startswith(cluster_tag("")) or key == CSI_CLUSTER_NAME_TAG for key in _tags(raw))


def _describe_raw(ec2: Any, filters: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    kwargs = {"Filters": filters} if filters else {}
    for page in ec2.get_paginator("describe_volumes").paginate(**kwargs):
        yield from page["Volumes"]


def _describe(ec2: Any, filters: list[dict[str, Any]]) -> Iterator[Volume]:
    for raw in _describe_raw(ec2, filters):
        yield _volume(raw)


def cluster_instances(ec2: Any, cluster: str) -> list[str]:
    """Every instance tagged for the cluster, in any state: a stopped node's volumes are
    still the cluster's and still billed."""
    return [
        instance["InstanceId"]
        for page in ec2.get_paginator("describe_instances").paginate(
            Filters=[{"Name": "tag-key", "Values": [cluster_tag(cluster)]}]
        )
        for reservation in page["Reservations"]
        for instance in reservation["Instances"]
    ]


def discover_volumes(ec2: Any, *, cluster: str, scope: VolumeScope) -> list[Volume]:
    if scope is VolumeScope.ALL:
        return list(_describe(ec2, []))
    tagged = [
        [{"Name": "tag-key", "Values": [cluster_tag(cluster)]}],
        [{"Name": f"tag:{CSI_CLUSTER_NAME_TAG}", "Values": [cluster]}],
    ]
    found = {v.volume_id: v for filters in tagged for v in _describe(ec2, filters)}
    instances = cluster_instances(ec2, cluster)
    for first in range(0, len(instances), FILTER_VALUES):
        chunk = instances[first : first + FILTER_VALUES]
        for volume in _describe(ec2, [{"Name": "attachment.instance-id", "Values": chunk}]):
            found.setdefault(volume.volume_id, volume)
    detached = [
        {"Name": "tag-key", "Values": [CSI_MANAGED_TAG]},
        {"Name": "status", "Values": ["available"]},
    ]
    for raw in _describe_raw(ec2, detached):
        if raw["VolumeId"] not in found and not _names_a_cluster(raw):
            found[raw["VolumeId"]] = _volume(raw, cluster_confirmed=False)
    return sorted(found.values(), key=lambda v: v.volume_id)


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
