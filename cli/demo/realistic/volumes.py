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
    #: The driver's ``--k8s-tag-cluster-id`` (the chart's ``controller.k8sTagClusterId``),
    #: unset by default (kubernetes-sigs/aws-ebs-csi-driver charts/aws-ebs-csi-driver/
    #: values.yaml: "ID of the Kubernetes cluster used for tagging provisioned EBS volumes
    #: (optional)", no value).
    cluster_id: str | None = None

    def describe(self) -> dict[str, Any]:
        """The volume as one item of DescribeVolumes' ``Volumes``. A volume the EBS CSI driver
        provisioned for a claim carries its tags (kubernetes-sigs/aws-ebs-csi-driver
        docs/tagging.md): ``CSIVolumeName`` and ``ebs.csi.aws.com/cluster=true`` on every
        volume; ``kubernetes.io/created-for/pv/name``, ``/pvc/name`` and ``/pvc/namespace``
        because the chart runs the external-provisioner with ``--extra-create-metadata``
        (values.yaml ``controller.extraCreateMetadata: true``); and only with a cluster id,
        ``kubernetes.io/cluster/<id>=owned`` ("add to all volumes and snapshots if
        k8s-tag-cluster-id argument is set"), ``KubernetesCluster=<id>`` and
        ``Name=<id>-dynamic-<pv>`` (the tags a chart install writes with and without it,
        aws-ebs-csi-driver issue #996)."""
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
            if self.cluster_id is not None:
                item["Tags"] += [
                    {"Key": f"kubernetes.io/cluster/{self.cluster_id}", "Value": "owned"},
                    {"Key": "KubernetesCluster", "Value": self.cluster_id},
                    {"Key": "Name", "Value": f"{self.cluster_id}-dynamic-{volume}"},
                ]
        return item


def fleet(now: datetime, instance_id: str, zone: str = "us-east-1a") -> list[Volume]:
    """A few volumes of a training namespace's claims, at ``now``: one two months old and
    attached all along; one created and attached three days ago; one created ten days ago but
    attached only two days ago (its pod was pending); one detached (``available``) since its
    pod ended; one made two hours ago for a pod still pending, not attached yet. The driver
    runs as installed by default: no cluster id, so no tag names the cluster."""
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
        Volume(
            "vol-0e5f6071829304152", now - timedelta(hours=2), 50, zone,
            pvc=("nlp", "eval-pending"),
        ),
    ]  # fmt: skip
