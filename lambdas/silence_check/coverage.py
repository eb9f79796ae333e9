"""Which of a cluster's running NVIDIA GPU instances the silence check covers, and why not the
others. Pure logic: the check keeps the covered ones (lambdas/silence_check/aws.py), and
``gpu-insights preflight`` and ``status`` name every other one, with the tag to add where a
tag is what is missing.

The check covers an instance that a tag names the cluster's (lambdas/shared/cluster_tags.py),
whose architecture the exporter's image runs on, and that is not an EKS Auto Mode node: the
exporter's DaemonSet keeps off Auto Mode nodes, whose image does not give unprivileged
containers the GPUs (cdk/node_config/manifest.py ``REQUIRED_NODE_EXPRESSIONS``), so the check
would call every one of them silent. An Auto Mode instance is an EC2 managed instance
(DescribeInstances ``Operator.Managed``) and carries ``eks:kubernetes-node-pool-name``, which
no other path sets (AmazonEKSComputePolicy).
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from lambdas.shared.cluster_tags import (
    AUTO_MODE_NODE_POOL_TAG,
    TAG_TO_ADD,
    cluster_tag,
    matching_tags,
)

#: What no tag changes: the GPUs of such a node are watched by Container Insights' own GPU
#: metrics (and their alarms), not by the check.
NO_TAG_FIX = "none by tag: Container Insights' GPU metrics are all that watch its GPUs"


@dataclass(frozen=True)
class ClusterInstance:
    """A running instance that belongs to the cluster by some evidence, as EC2 describes it."""

    instance_id: str
    instance_type: str
    #: PrivateDnsName: the node's name in EKS.
    node_name: str
    #: EC2's name of its architecture (x86_64, arm64).
    architecture: str
    tags: Mapping[str, str] = field(default_factory=dict)
    #: ``Operator.Managed``: an EC2 managed instance.
    managed: bool = False
    #: How it was found when no tag named it the cluster's (a node of the cluster's series).
    seen_as: str = ""

    @property
    def auto_mode(self) -> bool:
        return self.managed or AUTO_MODE_NODE_POOL_TAG in self.tags


@dataclass(frozen=True)
class Uncovered:
    """A running GPU instance of the cluster whose silence the check cannot see."""

    instance_id: str
    instance_type: str
    node_name: str
    why: str
    fix: str
    #: Whether a tag is what is missing (the fix is to add it).
    untagged: bool = False

    def line(self) -> str:
        node = f", {self.node_name}" if self.node_name else ""
        return f"{self.instance_id} ({self.instance_type}{node}): {self.why}; fix: {self.fix}"


def why_uncovered(
    instance: ClusterInstance, cluster: str, architectures: Sequence[str]
) -> Uncovered | None:
    """None where the check covers ``instance``; otherwise why not and what would fix it."""

    def uncovered(why: str, fix: str = NO_TAG_FIX, *, untagged: bool = False) -> Uncovered:
        return Uncovered(
            instance.instance_id,
            instance.instance_type,
            instance.node_name,
            why,
            fix,
            untagged,
        )

    if instance.auto_mode:
        return uncovered(
            "an EKS Auto Mode node: the exporter does not run there, so the silence check "
            "expects nothing of it"
        )
    if instance.architecture not in architectures:
        return uncovered(
            f"{instance.architecture}: the exporter's image runs on {', '.join(architectures)} "
            "only, so the silence check expects nothing of it"
        )
    if not matching_tags(instance.tags, cluster):
        seen = f" (it is {instance.seen_as})" if instance.seen_as else ""
        return uncovered(
            f"no tag names it cluster {cluster}'s{seen}, so the silence check does not see it",
            f"tag it {cluster_tag(cluster)}={TAG_TO_ADD}, in its launch template or Auto Scaling "
            "group (propagated at launch) so that its replacements carry it too",
            untagged=True,
        )
    return None


def covered(instance: ClusterInstance, cluster: str, architectures: Sequence[str]) -> bool:
    return why_uncovered(instance, cluster, architectures) is None


def uncovered_instances(
    instances: Iterable[ClusterInstance], cluster: str, architectures: Sequence[str]
) -> list[Uncovered]:
    """Every instance the check does not cover, in instance id order."""
    found = (why_uncovered(i, cluster, architectures) for i in instances)
    return sorted((u for u in found if u is not None), key=lambda u: u.instance_id)
