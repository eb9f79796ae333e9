"""The demo's storage: EBS volumes and S3 buckets in moto, each showing one finding, plus
healthy ones and a new volume that must show none, analyzed by the storage analyzer's real
Lambda handler."""

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from cdk.function_configs import storage_config
from cdk.settings import Settings
from cli.service_answers import (
    Params,
    answer,
    dated_volumes,
    metric_math_sums,
    percentiles_as_maximum,
)
from lambdas.storage_analyzer import handler as storage_handler
from lambdas.storage_analyzer.config import StorageConfig

#: The demo's "now": the last hour of last ISO week (Sunday 23:00 UTC; 1970-01-05 was a Monday),
#: so the weekly report's week holds the demo's seven days. CloudWatch Logs refuses events
#: older than 14 days, so the training demo cannot use a fixed date; the storage demo shares it
#: so the two link up.
WEEK = 7 * 86_400
END = (time.time() - 4 * 86_400) // WEEK * WEEK + 4 * 86_400 - 3600
DAYS = 8
HOURS = DAYS * 24
MIB = 2**20
REPORT_BUCKET = "gpu-insights-demo-reports"
#: The demo's own cluster: a deployment names its cluster, and so does the demo.
DEMO_CLUSTER = "example-gpu-cluster"
TAG = "kubernetes.io/cluster/{cluster}"

#: name -> (create_volume arguments, attached, hourly read IOPS, read MiB/s, queue length)
VOLUMES: dict[str, tuple[dict[str, Any], bool, float, float, float]] = {
    "unattached": ({"VolumeType": "gp3", "Size": 500}, False, 0, 0, 0),
    "idle-attached": ({"VolumeType": "gp3", "Size": 200}, True, 0.2, 0, 0.0),
    "saturated-dataset": (
        {"VolumeType": "gp3", "Size": 2000, "Iops": 3000, "Throughput": 125},
        True,
        900,
        122,
        1.0,
    ),
    "overprovisioned-iops": (
        {"VolumeType": "gp3", "Size": 500, "Iops": 16000, "Throughput": 125},
        True,
        1800,
        20,
        1.0,
    ),
    "overprovisioned-throughput": (
        {"VolumeType": "gp3", "Size": 500, "Iops": 3000, "Throughput": 1000},
        True,
        1200,
        40,
        1.0,
    ),
    "deep-queue": (
        {"VolumeType": "gp3", "Size": 500, "Iops": 3000, "Throughput": 125},
        True,
        2400,
        30,
        20.0,
    ),
    "healthy": (
        {"VolumeType": "gp3", "Size": 500, "Iops": 3000, "Throughput": 125},
        True,
        1500,
        40,
        1.0,
    ),
    # Made and attached three days ago, not read yet: too new for the idle rule's seven days.
    "new-volume": ({"VolumeType": "gp3", "Size": 200}, True, 0.0, 0, 0.0),
}
#: Days before the demo's "now" each volume was made and attached (DescribeVolumes'
#: CreateTime and AttachTime); the others a month before, ahead of the analyzer's window.
MADE_DAYS_AGO: dict[str, int] = {"new-volume": 3}
MONTH_DAYS = 30
#: bucket -> request metrics (None: no metrics configuration): (p99 first byte ms, 5xx share)
BUCKETS: dict[str, tuple[float, float] | None] = {
    "demo-training-data": (450.0, 0.03),
    "demo-checkpoints": None,
    "demo-eval-data": (35.0, 0.0),
}


@contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """The Lambda's environment, for the length of one invocation."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _put(
    cloudwatch: Any,
    namespace: str,
    dims: dict[str, str],
    metric: str,
    value: float,
    hours: int = HOURS,
) -> None:
    """The last ``hours`` hours of the window, one datapoint each."""
    data = [
        {
            "MetricName": metric,
            "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
            "Timestamp": datetime.fromtimestamp(END - (hours - h) * 3600, UTC),
            "Value": value,
        }
        for h in range(hours)
    ]
    cloudwatch.put_metric_data(Namespace=namespace, MetricData=data)


def metrics_configurations(params: Params) -> Params:
    """ListBucketMetricsConfigurations as S3 answers it for the demo's buckets: moto keeps no
    metrics configurations (it reads the request as a listing of the bucket's objects)."""
    configured = BUCKETS.get(params["Bucket"]) is not None
    return {
        "MetricsConfigurationList": [{"Id": "EntireBucket"}] if configured else [],
        "IsTruncated": False,
    }


def seed(clients: dict[str, Any], cluster: str) -> dict[str, str]:
    ec2, s3, cloudwatch = clients["ec2"], clients["s3"], clients["cloudwatch"]
    tags = [
        {"ResourceType": "volume", "Tags": [{"Key": TAG.format(cluster=cluster), "Value": "owned"}]}
    ]
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    node = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
    ids = {}
    dates: dict[str, tuple[float, float | None]] = {}
    for index, (name, (spec, attached, iops, mibps, queue)) in enumerate(VOLUMES.items()):
        volume = ec2.create_volume(AvailabilityZone="us-east-1a", TagSpecifications=tags, **spec)
        ids[volume["VolumeId"]] = name
        days = MADE_DAYS_AGO.get(name, MONTH_DAYS)
        dates[volume["VolumeId"]] = (END - days * 86_400, END - days * 86_400)
        if not attached:
            continue
        ec2.attach_volume(
            VolumeId=volume["VolumeId"], InstanceId=node, Device=f"/dev/sd{chr(102 + index)}"
        )
        dims = {"VolumeId": volume["VolumeId"]}
        hours = min(HOURS, days * 24)  # EBS has datapoints since the volume was attached
        _put(cloudwatch, "AWS/EBS", dims, "VolumeReadOps", iops * 3600, hours)
        _put(cloudwatch, "AWS/EBS", dims, "VolumeWriteOps", 0.0, hours)
        _put(cloudwatch, "AWS/EBS", dims, "VolumeReadBytes", mibps * MIB * 3600, hours)
        _put(cloudwatch, "AWS/EBS", dims, "VolumeQueueLength", queue, hours)
    dated_volumes(ec2, dates)  # moto dates them by its clock, after the demo's "now"
    for bucket, request_metrics in BUCKETS.items():
        s3.create_bucket(Bucket=bucket)
        if request_metrics is None:
            continue
        p99, error_share = request_metrics
        dims = {"BucketName": bucket, "FilterId": "EntireBucket"}
        _put(cloudwatch, "AWS/S3", dims, "AllRequests", 20_000.0)
        _put(cloudwatch, "AWS/S3", dims, "5xxErrors", 20_000.0 * error_share)
        _put(cloudwatch, "AWS/S3", dims, "FirstByteLatency", p99)
    s3.create_bucket(Bucket=REPORT_BUCKET)
    return ids


def storage_analyzer_config(settings: Settings) -> StorageConfig:
    """The function's configuration as the stack builds it, for the deployment that reads the
    demo's buckets over its days."""
    demo = replace(settings, storage_buckets=tuple(BUCKETS), lookback_days=DAYS)
    return storage_config(demo, report_bucket=REPORT_BUCKET)


def run_storage_analyzer(
    clients: dict[str, Any], settings: Settings
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The Lambda handler, with the environment the stack gives it."""
    for service in ("ec2", "events", "s3", "cloudwatch"):
        storage_handler._clients[service] = clients[service]
    answer(clients["s3"], "ListBucketMetricsConfigurations", metrics_configurations)
    percentiles_as_maximum(clients["cloudwatch"])
    metric_math_sums(clients["cloudwatch"])
    env = storage_analyzer_config(settings).environment()
    return run_analyzer(storage_handler.handler, env, clients["s3"])


def run_analyzer(
    handler: Callable[[dict[str, Any], object], dict[str, Any]],
    env: dict[str, str],
    s3: Any,
    at: float = END,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """An analyzer's Lambda handler, scheduled at ``at`` (the demo's end), with the
    environment the stack gives it; its findings read back from the report bucket."""
    with environment(env):
        summary = handler({"time": datetime.fromtimestamp(at, UTC).isoformat()}, None)
    body = s3.get_object(Bucket=REPORT_BUCKET, Key=summary["key"])["Body"].read()
    return summary, [json.loads(line) for line in body.decode().splitlines()]


def storage_summary(findings: list[dict[str, Any]], names: dict[str, str]) -> list[str]:
    """The demo's lines about storage: each finding by resource name, and the quiet ones."""
    waste = sum(f.get("estimated_monthly_waste_usd") or 0 for f in findings)
    lines = [
        f"6. Ran the storage analyzer's Lambda handler on {len(VOLUMES)} seeded EBS volumes and "
        f"{len(BUCKETS)} S3 buckets: {len(findings)} findings, ${waste:,.2f} a month of waste:"
    ]
    named = set()
    for f in findings:
        name = names.get(f["resource"], f["resource"].removeprefix("arn:aws:s3:::"))
        named.add(name)
        lines.append(f"   {f['severity']:<8} {f['kind']:<32} {name}")
    quiet = [n for n in [*VOLUMES, *BUCKETS] if n not in named]
    lines.append(f"   no findings: {', '.join(quiet)}")
    return lines
