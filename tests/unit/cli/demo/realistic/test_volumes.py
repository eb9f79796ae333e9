"""EBS volumes as DescribeVolumes returns them, with their creation and attach times."""

from datetime import UTC, datetime, timedelta

import boto3
from moto import mock_aws

from cli.demo.realistic import volumes

NOW = datetime(2026, 11, 30, tzinfo=UTC)


def test_the_fleet_has_new_late_attached_and_detached_volumes() -> None:
    fleet = {v.volume_id: v.describe() for v in volumes.fleet(NOW, "i-0123456789abcdef0")}
    ages = {
        vid: (
            (NOW - v["CreateTime"]).days,
            [(NOW - a["AttachTime"]).days for a in v["Attachments"]],
            v["State"],
        )
        for vid, v in fleet.items()
    }
    assert sorted(ages.values()) == [
        (0, [], "available"),
        (3, [3], "in-use"),
        (10, [2], "in-use"),
        (20, [], "available"),
        (60, [60], "in-use"),
    ]
    tags = {t["Key"]: t["Value"] for t in fleet["vol-0b2c3d4e5f6071829"]["Tags"]}
    assert tags["kubernetes.io/created-for/pvc/name"] == "checkpoints-new"
    assert tags["CSIVolumeName"] == tags["kubernetes.io/created-for/pv/name"]
    assert tags["CSIVolumeName"].startswith("pvc-")
    assert not any(k.startswith("kubernetes.io/cluster/") for k in tags)  # no cluster id
    tagged = volumes.Volume("vol-0f", NOW, 10, "us-east-1a", pvc=("a", "b"), cluster_id="train")
    keys = {t["Key"]: t["Value"] for t in tagged.describe()["Tags"]}
    assert keys["kubernetes.io/cluster/train"] == "owned"
    assert keys["Name"] == f"train-dynamic-{keys['CSIVolumeName']}"


def test_describe_has_the_shape_ec2_returns() -> None:
    # moto's DescribeVolumes for a gp3 volume it made: the model's items have the same keys
    # (and, where attached, the same attachment keys).
    with mock_aws():
        ec2 = boto3.client(
            "ec2", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        made = ec2.create_volume(AvailabilityZone="us-east-1a", Size=100, VolumeType="gp3")
        (real,) = ec2.describe_volumes(VolumeIds=[made["VolumeId"]])["Volumes"]
    model = volumes.Volume("vol-0d", NOW - timedelta(days=1), 100, "us-east-1a").describe()
    shared = {"VolumeId", "Size", "VolumeType", "Iops", "AvailabilityZone", "CreateTime", "State",
              "Attachments"}  # fmt: skip
    assert shared <= set(real)
    assert shared <= set(model)
    assert type(real["CreateTime"]) is type(model["CreateTime"])
