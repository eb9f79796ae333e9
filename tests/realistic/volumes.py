"""EBS volumes as DescribeVolumes returns them, with the times that say how long a volume has
existed and been attached: ``CreateTime`` ("The time stamp when volume creation was
initiated") and each attachment's ``AttachTime`` ("The time stamp when the attachment
initiated") (Amazon EC2 API Reference, Volume and VolumeAttachment). A volume's metrics exist
only from then on: hours before it are no evidence that it idled.
"""

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

#: "gp3 volumes deliver a consistent baseline IOPS performance of 3,000 IOPS ... and a
#: consistent baseline throughput performance of 125 MiB/s" (Amazon EBS User Guide, General
#: Purpose SSD volumes).
GP3_BASELINE_IOPS: Final = 3000
GP3_BASELINE_THROUGHPUT: Final = 125


@dataclass(frozen=True)
class Attachment:
    instance_id: str
    attached: datetime
    device: str = "/dev/xvdaa"


@dataclass(frozen=True)
class Volume:
    volume_id: str
    created: datetime
    size_gib: int
    zone: str
    attachment: Attachment | None = None
    volume_type: str = "gp3"
    iops: int = GP3_BASELINE_IOPS
    throughput: int = GP3_BASELINE_THROUGHPUT
    #: The PersistentVolumeClaim the EBS CSI driver made it for (namespace, name), if any.
    pvc: tuple[str, str] | None = None

    def describe(self) -> dict[str, Any]:
        """The volume as one item of DescribeVolumes' ``Volumes``. A volume the EBS CSI driver
        provisioned for a claim carries its tags: ``CSIVolumeName``, ``ebs.csi.aws.com/cluster``,
        ``kubernetes.io/created-for/pv/name``, ``/pvc/name`` and ``/pvc/namespace``
        (kubernetes-sigs/aws-ebs-csi-driver docs/tagging.md)."""
        item: dict[str, Any] = {
            "VolumeId": self.volume_id,
            "Size": self.size_gib,
            "VolumeType": self.volume_type,
            "Iops": self.iops,
            "Throughput": self.throughput,
            "AvailabilityZone": self.zone,
            "CreateTime": self.created,
            "State": "in-use" if self.attachment else "available",
            "Attachments": [],
        }
        if self.attachment is not None:
            item["Attachments"] = [
                {
                    "VolumeId": self.volume_id,
                    "InstanceId": self.attachment.instance_id,
                    "Device": self.attachment.device,
                    "State": "attached",
                    "AttachTime": self.attachment.attached,
                    "DeleteOnTermination": False,
                }
            ]
        if self.pvc is not None:
            namespace, claim = self.pvc
            # The PersistentVolume is named after the claim's UID: "pvc-<uid>".
            volume = f"pvc-{uuid.uuid5(uuid.NAMESPACE_URL, self.volume_id)}"
            item["Tags"] = [
                {"Key": "CSIVolumeName", "Value": volume},
                {"Key": "ebs.csi.aws.com/cluster", "Value": "true"},
                {"Key": "kubernetes.io/created-for/pv/name", "Value": volume},
                {"Key": "kubernetes.io/created-for/pvc/name", "Value": claim},
                {"Key": "kubernetes.io/created-for/pvc/namespace", "Value": namespace},
            ]
        return item


def fleet(now: datetime, instance_id: str, zone: str = "us-east-1a") -> list[Volume]:
    """A few volumes of a training namespace's claims, at ``now``: one two months old and
    attached all along; one created and attached three days ago; one created ten days ago but
    attached only two days ago (its pod was pending); one detached (``available``) since its
    pod ended."""
    day = timedelta(days=1)
    return [
        Volume(
            "vol-0a1b2c3d4e5f60718", now - 60 * day, 500, zone,
            Attachment(instance_id, now - 60 * day), pvc=("nlp", "dataset-cache"),
        ),
        Volume(
            "vol-0b2c3d4e5f6071829", now - 3 * day, 1000, zone,
            Attachment(instance_id, now - 3 * day), pvc=("nlp", "checkpoints-new"),
        ),
        Volume(
            "vol-0c3d4e5f607182930", now - 10 * day, 200, zone,
            Attachment(instance_id, now - 2 * day), pvc=("research", "scratch"),
        ),
        Volume("vol-0d4e5f60718293041", now - 20 * day, 100, zone, pvc=("research", "old-run")),
    ]  # fmt: skip
