"""Which of a cluster's GPU instances the silence check covers, on plain data: the tags each
provisioning path really sets (cli/demo/realistic/nodes.py, with their sources) against
lambdas/shared/cluster_tags.py and lambdas/silence_check/coverage.py."""

import pytest

from cli.demo.realistic.nodes import (
    UNTAGGED,
    auto_mode_tags,
    eksctl_self_managed_tags,
    eksctl_stack_tags,
    karpenter_tags,
    managed_node_group_tags,
)
from lambdas.shared.cluster_tags import matching_tags
from lambdas.silence_check.coverage import ClusterInstance, uncovered_instances, why_uncovered

X86: tuple[str, ...] = ("x86_64",)


def _instance(tags: dict[str, str], n: int = 1, **kw: object) -> ClusterInstance:
    fields: dict[str, object] = {
        "instance_id": f"i-0{n:016x}",
        "instance_type": "p5.48xlarge",
        "node_name": f"ip-10-0-1-{n}.ec2.internal",
        "architecture": "x86_64",
        "tags": tags,
        **kw,
    }
    return ClusterInstance(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("tags", "matched"),
    [
        (
            managed_node_group_tags("train", "gpu"),
            ("eks:cluster-name", "kubernetes.io/cluster/train"),
        ),
        (
            karpenter_tags("train", "gpu", "default"),
            ("kubernetes.io/cluster/train", "eks:eks-cluster-name"),
        ),
        (auto_mode_tags("train", "gpu"), ("eks:eks-cluster-name",)),
        (eksctl_self_managed_tags("train", "ng-1"), ("kubernetes.io/cluster/train",)),
        (
            eksctl_stack_tags("train"),
            ("alpha.eksctl.io/cluster-name", "eksctl.cluster.k8s.io/v1alpha1/cluster-name"),
        ),
        (UNTAGGED, ()),
        # Another cluster's, whatever else names "train": the value must be a name tag's.
        ({**managed_node_group_tags("other", "gpu"), "Name": "train"}, ()),
        ({"kubernetes.io/cluster/training": "owned"}, ()),
    ],
)
def test_each_path_s_tags_name_the_cluster(tags: dict[str, str], matched: tuple[str, ...]) -> None:
    assert matching_tags(tags, "train") == matched


def test_every_tagged_x86_path_but_auto_mode_is_covered() -> None:
    covered = [
        managed_node_group_tags("train", "gpu"),
        karpenter_tags("train", "gpu", "default"),
        eksctl_self_managed_tags("train", "ng-1"),
        eksctl_stack_tags("train"),
    ]
    assert [why_uncovered(_instance(t), "train", X86) for t in covered] == [None] * 4


def test_each_uncovered_instance_says_why_and_what_to_do() -> None:
    instances = [
        _instance(managed_node_group_tags("train", "gpu"), 1),
        _instance(auto_mode_tags("train", "gpu"), 2),
        # EC2's Operator.Managed alone marks an Auto Mode instance too.
        _instance(karpenter_tags("train", "gpu", "default"), 3, managed=True),
        _instance(
            managed_node_group_tags("train", "grace"),
            4,
            instance_type="g5g.xlarge",
            architecture="arm64",
        ),
        _instance(UNTAGGED, 5, seen_as="node ip-10-0-1-5.ec2.internal of the cluster in X"),
    ]
    lines = [u.line() for u in uncovered_instances(instances, "train", X86)]
    auto = (
        "an EKS Auto Mode node: the exporter does not run there, so the silence check expects "
        "nothing of it; fix: none by tag: Container Insights' GPU metrics are all that watch "
        "its GPUs"
    )
    assert lines == [
        f"i-00000000000000002 (p5.48xlarge, ip-10-0-1-2.ec2.internal): {auto}",
        f"i-00000000000000003 (p5.48xlarge, ip-10-0-1-3.ec2.internal): {auto}",
        "i-00000000000000004 (g5g.xlarge, ip-10-0-1-4.ec2.internal): arm64: the exporter's "
        "image runs on x86_64 only, so the silence check expects nothing of it; fix: none by "
        "tag: Container Insights' GPU metrics are all that watch its GPUs",
        "i-00000000000000005 (p5.48xlarge, ip-10-0-1-5.ec2.internal): no tag names it cluster "
        "train's (it is node ip-10-0-1-5.ec2.internal of the cluster in X), so the silence "
        "check does not see it; fix: tag it kubernetes.io/cluster/train=owned, in its launch "
        "template or Auto Scaling group (propagated at launch) so that its replacements carry "
        "it too",
    ]
    assert [u.untagged for u in uncovered_instances(instances, "train", X86)] == [
        False,
        False,
        False,
        True,
    ]
