"""The storage analyzer's real handler against moto: volumes, buckets, metrics in; findings
out to S3, EventBridge and CloudWatch, at the floor of GetMetricData calls."""

import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cli.demo.realistic import volumes as realistic_volumes
from cli.service_answers import answer, dated_volumes, error, metric_math_sums
from dashboards.bodies import storage as storage_dashboard
from lambdas.shared.metric_fetcher import floor_calls
from lambdas.storage_analyzer import fleet
from lambdas.storage_analyzer import handler as storage_handler
from tests.functional.lambdas.iam import resolve, role_statements, run_as_role

END = datetime(2025, 11, 28, tzinfo=UTC).timestamp()
DAYS = 3
HOURS = DAYS * 24
MIB = 2**20
HANDLER = "lambdas.storage_analyzer.handler.handler"
#: The seeded volumes were made and attached a month before END (cli/service_answers.py
#: ``dated_volumes``: moto stamps them with its own clock).
MADE = END - 30 * 86_400


def _dates(ids: dict[str, str]) -> dict[str, tuple[float, float | None]]:
    return dict.fromkeys(ids.values(), (MADE, MADE))


def _put(
    cloudwatch: Any, namespace: str, dims: dict[str, str], metric: str, values: list[float]
) -> None:
    data = [
        {
            "MetricName": metric,
            "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
            "Timestamp": datetime.fromtimestamp(END - (len(values) - i) * 3600, UTC),
            "Value": value,
        }
        for i, value in enumerate(values)
    ]
    for first in range(0, len(data), 1000):
        cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[first : first + 1000])


def _metrics_configurations(params: dict[str, Any]) -> dict[str, Any]:
    """moto keeps no bucket metrics configurations (it reads the request as an object
    listing): S3's answer for the seeded buckets, and NoSuchBucket for any other."""
    configured = {"train-data": [{"Id": "EntireBucket"}], "checkpoints": []}
    if params["Bucket"] not in configured:
        return error("NoSuchBucket", "The specified bucket does not exist", 404)
    return {"MetricsConfigurationList": configured[params["Bucket"]], "IsTruncated": False}


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    with mock_aws():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        clients: dict[str, Any] = {
            name: session.client(name) for name in ("ec2", "s3", "cloudwatch", "events", "sqs")
        }
        for name in ("ec2", "s3", "cloudwatch", "events"):
            monkeypatch.setitem(storage_handler._clients, name, clients[name])
        monkeypatch.setenv("CLUSTER_NAME", "train")
        monkeypatch.setenv("LOOKBACK_DAYS", str(DAYS))
        monkeypatch.setenv("REPORT_BUCKET", "reports")
        monkeypatch.setenv("BUCKETS", "train-data,checkpoints")
        monkeypatch.setenv("EVENT_BUS", "default")
        clients["s3"].create_bucket(Bucket="reports")
        answer(clients["s3"], "ListBucketMetricsConfigurations", _metrics_configurations)
        yield clients


def _seed(aws: dict[str, Any]) -> dict[str, str]:
    ec2, cloudwatch, s3 = aws["ec2"], aws["cloudwatch"], aws["s3"]
    tags = [
        {
            "ResourceType": "volume",
            "Tags": [{"Key": "kubernetes.io/cluster/train", "Value": "owned"}],
        }
    ]
    ids = {}
    for name, kwargs in {
        "unattached": {"VolumeType": "gp3", "Size": 200},
        "saturated": {"VolumeType": "gp3", "Size": 500, "Iops": 3000, "Throughput": 125},
        "healthy": {"VolumeType": "gp3", "Size": 500, "Iops": 3000, "Throughput": 125},
    }.items():
        ids[name] = ec2.create_volume(
            AvailabilityZone="us-east-1a", TagSpecifications=tags, **kwargs
        )["VolumeId"]
    ec2.create_volume(AvailabilityZone="us-east-1a", VolumeType="gp3", Size=10)  # not the cluster's
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    instance = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1)["Instances"][0][
        "InstanceId"
    ]
    for name in ("saturated", "healthy"):
        ec2.attach_volume(VolumeId=ids[name], InstanceId=instance, Device=f"/dev/sd{name[0]}")
    dated_volumes(ec2, _dates(ids))
    for name, mibps in (("saturated", 124.0), ("healthy", 20.0)):
        dims = {"VolumeId": ids[name]}
        _put(cloudwatch, "AWS/EBS", dims, "VolumeReadOps", [1500 * 3600.0] * HOURS)
        _put(cloudwatch, "AWS/EBS", dims, "VolumeWriteOps", [0.0] * HOURS)
        _put(cloudwatch, "AWS/EBS", dims, "VolumeReadBytes", [mibps * MIB * 3600] * HOURS)
        _put(cloudwatch, "AWS/EBS", dims, "VolumeQueueLength", [1.0] * HOURS)
    s3.create_bucket(Bucket="train-data")
    s3.create_bucket(Bucket="checkpoints")
    s3.put_bucket_metrics_configuration(
        Bucket="train-data", Id="EntireBucket", MetricsConfiguration={"Id": "EntireBucket"}
    )
    dims = {"BucketName": "train-data", "FilterId": "EntireBucket"}
    _put(cloudwatch, "AWS/S3", dims, "AllRequests", [10_000.0] * HOURS)
    _put(cloudwatch, "AWS/S3", dims, "5xxErrors", [400.0] * HOURS)
    return ids


def test_handler_finds_what_was_seeded_and_nothing_on_healthy_resources(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run as the storage analyzer's role, with moto's IAM authorization on (limits:
    tests/functional/lambdas/iam.py; ListBucketMetricsConfigurations, which moto lacks, is
    answered before it is sent, so moto does not authorize s3:GetMetricsConfiguration)."""
    ids = _seed(aws)
    physical = {"ReportBucket": {"Ref": "reports", "Arn": "arn:aws:s3:::reports"}}
    principal = run_as_role(
        resolve(role_statements(templates, HANDLER), physical), monkeypatch, "storage-analyzer"
    )
    for name in ("ec2", "s3", "cloudwatch", "events"):
        monkeypatch.setitem(storage_handler._clients, name, principal.role(name))
    answer(principal.role("s3"), "ListBucketMetricsConfigurations", _metrics_configurations)
    metric_math_sums(principal.role("cloudwatch"))  # moto computes no metric math
    dated_volumes(principal.role("ec2"), _dates(ids))
    aws = {name: principal.admin(name) for name in ("s3", "cloudwatch")}
    calls: list[str] = []
    principal.role("cloudwatch").meta.events.register(
        "before-call.monitoring.GetMetricData", lambda model, **_: calls.append(model.name)
    )
    # The storage dashboard as the Alarms stack deploys it, before the analyzer's first run.
    synthesized = storage_dashboard("train", ["train-data", "checkpoints"], "us-east-1")
    aws["cloudwatch"].put_dashboard(
        DashboardName="gpu-insights-train-storage", DashboardBody=json.dumps(synthesized)
    )
    event = {"time": datetime.fromtimestamp(END, UTC).isoformat()}
    summary = storage_handler.handler(event, None)
    assert summary["volumes"] == 3
    assert summary["buckets"] == 2
    assert summary["skipped"] == 0
    # Its EBS widgets now draw the cluster's three volumes, and not the Region's fourth.
    assert summary["dashboard_volumes"] == 3
    drawn = json.loads(
        aws["cloudwatch"].get_dashboard(DashboardName="gpu-insights-train-storage")["DashboardBody"]
    )
    reads = next(
        w["properties"]["metrics"]
        for w in drawn["widgets"]
        if w["properties"].get("title") == "EBS read ops per 5 minutes (ten busiest)"
    )
    assert sorted(row[3] for row in reads[:-1]) == sorted(ids.values())
    assert reads[-1][0]["expression"] == "SORT(METRICS(), SUM, DESC, 10)"
    assert "the cluster's 3 volumes" in json.dumps(drawn)
    body = aws["s3"].get_object(Bucket="reports", Key=summary["key"])["Body"].read().decode()
    findings = [json.loads(line) for line in body.splitlines()]
    found = {(f["kind"], f["resource"]) for f in findings}
    assert found == {
        ("ebs_idle_volume", ids["unattached"]),
        ("ebs_throughput_saturated", ids["saturated"]),
        ("s3_high_error_rate", "arn:aws:s3:::train-data"),
        ("s3_request_metrics_disabled", "arn:aws:s3:::checkpoints"),
    }
    assert summary["key"] == "findings/cluster=train/date=2025-11-28/storage.jsonl"
    assert all(f["cluster"] == "train" for f in findings)
    # 2 attached gp3 volumes x 7 series + 6 bucket series, 72 hourly points: the floor is one
    # call per metric read (volumes, then the bucket).
    assert len(calls) == floor_calls(2 * 7, HOURS) + floor_calls(6, HOURS) == 2
    counts = aws["cloudwatch"].list_metrics(Namespace="GpuInsights/Findings")["Metrics"]
    assert {d["Value"] for m in counts for d in m["Dimensions"] if d["Name"] == "Kind"} == {
        "ebs_idle_volume",
        "ebs_throughput_saturated",
        "s3_high_error_rate",
        "s3_request_metrics_disabled",
    }


def test_rerun_for_the_same_day_replaces_the_file(aws: dict[str, Any]) -> None:
    _seed(aws)
    event = {"time": datetime.fromtimestamp(END, UTC).isoformat()}
    first = storage_handler.handler(event, None)
    second = storage_handler.handler(event, None)
    assert first["key"] == second["key"]
    keys = [o["Key"] for o in aws["s3"].list_objects_v2(Bucket="reports")["Contents"]]
    assert keys == [first["key"]]
    body = aws["s3"].get_object(Bucket="reports", Key=first["key"])["Body"].read().decode()
    assert len(body.splitlines()) == first["findings"]


def test_a_bucket_that_cannot_be_read_is_one_analysis_error(
    aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(aws)
    monkeypatch.setenv("BUCKETS", "train-data,no-such-bucket")
    summary = storage_handler.handler({"time": datetime.fromtimestamp(END, UTC).isoformat()}, None)
    assert summary["skipped"] == 1  # a count; its analysis_error names it
    body = aws["s3"].get_object(Bucket="reports", Key=summary["key"])["Body"].read().decode()
    errors = [json.loads(x) for x in body.splitlines() if '"analysis_error"' in x]
    assert [e["resource"] for e in errors] == ["arn:aws:s3:::no-such-bucket"]
    assert "NoSuchBucket" in errors[0]["evidence"]["error"]
    assert math.isclose(summary["findings"], len(body.splitlines()))


def test_the_fleet_state_machine_path_writes_the_single_runs_file(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """plan, one shard per volume, merge (as the Distributed Map runs them), as the storage
    role with IAM on: the day's file is byte for byte the one a single run writes."""
    ids = _seed(aws)
    physical = {"ReportBucket": {"Ref": "reports", "Arn": "arn:aws:s3:::reports"}}
    principal = run_as_role(
        resolve(role_statements(templates, HANDLER), physical), monkeypatch, "storage-analyzer"
    )
    for name in ("ec2", "s3", "cloudwatch", "events"):
        monkeypatch.setitem(storage_handler._clients, name, principal.role(name))
    answer(principal.role("s3"), "ListBucketMetricsConfigurations", _metrics_configurations)
    metric_math_sums(principal.role("cloudwatch"))
    dated_volumes(principal.role("ec2"), _dates(ids))
    aws = {name: principal.admin(name) for name in ("s3", "cloudwatch")}
    event = {"time": datetime.fromtimestamp(END, UTC).isoformat()}
    single = storage_handler.handler(event, None)
    key = single["key"]
    expected = aws["s3"].get_object(Bucket="reports", Key=key)["Body"].read()
    aws["s3"].delete_object(Bucket="reports", Key=key)
    monkeypatch.setenv("SHARD_VOLUMES", "1")
    planned = storage_handler.handler({**event, "mode": "plan"}, None)
    assert planned["volumes"] == 3
    assert [s["count"] for s in planned["shards"]] == [1, 1, 1]
    for item in reversed(planned["shards"]):  # the Map runs shards in any order
        storage_handler.handler({**event, "mode": "shard", **item}, None)
    merged = storage_handler.handler({**event, "mode": "merge", **planned}, None)
    assert merged["key"] == key
    assert merged["volumes"] == single["volumes"]
    assert merged["buckets"] == 2
    assert aws["s3"].get_object(Bucket="reports", Key=key)["Body"].read() == expected
    aws["s3"].delete_object(Bucket="reports", Key=fleet.part_key("train", "2025-11-28", 1))
    with pytest.raises(fleet.MissingPartError, match="shard 1 did not finish"):
        storage_handler.handler({**event, "mode": "merge", **planned}, None)


def test_a_volume_is_judged_only_on_the_hours_since_it_was_made_and_attached(
    aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three gp3 volumes that never read or wrote, over 14 days: made and attached a month
    ago (idle, 14 days), ten days ago (idle, judged on its 9 whole days since), and three days
    ago (too new for the idle rule's 7 days: no finding). FILL gives the new one 14 days of
    zeros, 11 of them before it existed; judged on those, it read as idle and was to be
    deleted."""
    monkeypatch.setenv("LOOKBACK_DAYS", "14")
    monkeypatch.setenv("BUCKETS", "")
    ec2, cloudwatch = aws["ec2"], aws["cloudwatch"]
    tag = {"Key": "kubernetes.io/cluster/train", "Value": "owned"}
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    instance = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1)["Instances"][0]
    ages = {"old": 30, "recent": 10, "new": 3}
    ids = {}
    for index, name in enumerate(ages):
        ids[name] = ec2.create_volume(
            AvailabilityZone="us-east-1a", VolumeType="gp3", Size=200,
            TagSpecifications=[{"ResourceType": "volume", "Tags": [tag]}],
        )["VolumeId"]  # fmt: skip
        ec2.attach_volume(
            VolumeId=ids[name], InstanceId=instance["InstanceId"], Device=f"/dev/sd{102 + index:c}"
        )
    # moto stamps both times with its own clock, as EC2 does at the call.
    described = ec2.describe_volumes(VolumeIds=list(ids.values()))["Volumes"]
    assert all(v["CreateTime"] and v["Attachments"][0]["AttachTime"] for v in described)
    made = {ids[name]: END - days * 86_400 for name, days in ages.items()}
    dated_volumes(ec2, {volume_id: (t, t + 600) for volume_id, t in made.items()})
    for volume_id, t in made.items():
        hours = int(min(END - t - 600, 14 * 86_400) // 3600)  # datapoints only while attached
        for metric in ("VolumeReadOps", "VolumeWriteOps", "VolumeReadBytes", "VolumeWriteBytes"):
            _put(cloudwatch, "AWS/EBS", {"VolumeId": volume_id}, metric, [0.0] * hours)
    metric_math_sums(cloudwatch)
    summary = storage_handler.handler({"time": datetime.fromtimestamp(END, UTC).isoformat()}, None)
    body = aws["s3"].get_object(Bucket="reports", Key=summary["key"])["Body"].read().decode()
    idle = {
        f["resource"]: f["evidence"]
        for f in map(json.loads, body.splitlines())
        if f["kind"] == "ebs_idle_volume"
    }
    assert set(idle) == {ids["old"], ids["recent"]}  # not the three-day-old volume
    assert idle[ids["old"]]["days"] == 14
    assert "in_use_since" not in idle[ids["old"]]
    recent = idle[ids["recent"]]
    assert recent["days"] == 9  # whole days since its attachment ten minutes into day ten
    assert (
        recent["in_use_since"] == datetime.fromtimestamp(made[ids["recent"]] + 600, UTC).isoformat()
    )
    assert recent["hours_before_in_use"] == 4 * 24 + 1


def test_the_cluster_scope_finds_a_karpenter_nodes_volumes_and_its_detached_claims(
    aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model's volumes (cli/demo/realistic/volumes.py) tagged as a default EBS CSI driver
    tags them, with no tag naming the cluster, on a node tagged as Karpenter tags it
    (``kubernetes.io/cluster/<cluster>`` and ``eks:eks-cluster-name``, no ``eks:cluster-name``):
    all five are the cluster's, and the node's root volume; another cluster's detached volume
    and an untagged one are not.
    The detached claim of 20 days is advised by its claim; the one made two hours ago for a
    pending pod is not advised at all."""
    monkeypatch.setenv("BUCKETS", "")
    ec2 = aws["ec2"]
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    karpenter = [
        {"Key": "kubernetes.io/cluster/train", "Value": "owned"},
        {"Key": "eks:eks-cluster-name", "Value": "train"},
        {"Key": "karpenter.sh/nodepool", "Value": "gpu"},
    ]
    node = ec2.run_instances(
        ImageId=image, MinCount=1, MaxCount=1,
        TagSpecifications=[{"ResourceType": "instance", "Tags": karpenter}],
    )["Instances"][0]["InstanceId"]  # fmt: skip
    now = datetime.fromtimestamp(END, UTC)
    other = realistic_volumes.Volume(
        "vol-other", now - timedelta(days=30), 100, "us-east-1a", pvc=("x", "y"), cluster_id="b"
    )
    ids: dict[str, str] = {}
    dates: dict[str, tuple[float, float | None]] = {}
    for index, volume in enumerate([*realistic_volumes.fleet(now, node), other]):
        made = ec2.create_volume(
            AvailabilityZone=volume.zone, Size=volume.size_gib, VolumeType=volume.volume_type,
            TagSpecifications=[{"ResourceType": "volume", "Tags": volume.describe()["Tags"]}],
        )["VolumeId"]  # fmt: skip
        ids[volume.volume_id] = made
        attached = None
        if volume.attachment is not None:
            ec2.attach_volume(VolumeId=made, InstanceId=node, Device=f"/dev/sd{102 + index:c}")
            attached = volume.attachment.attached.timestamp()
        dates[made] = (volume.created.timestamp(), attached)
    ec2.create_volume(AvailabilityZone="us-east-1a", VolumeType="gp3", Size=10)  # nobody's
    dated_volumes(ec2, dates)
    metric_math_sums(aws["cloudwatch"])
    summary = storage_handler.handler({"time": now.isoformat()}, None)
    assert summary["volumes"] == 5 + 1  # and the node's root volume (moto makes one, as EC2)
    body = aws["s3"].get_object(Bucket="reports", Key=summary["key"])["Body"].read().decode()
    detached = [
        f for f in map(json.loads, body.splitlines()) if f["evidence"]["state"] == "available"
    ]
    (finding,) = detached  # not the two-hour-old volume of the pending pod
    assert finding["resource"] == ids["vol-0d4e5f60718293041"]
    assert finding["evidence"]["claim"] == "research/old-run"
    assert "kubectl delete pvc -n research old-run" in finding["recommendation"]
    assert finding["evidence"]["cluster"].startswith("unconfirmed")
