"""Which EC2 instances are a cluster's: the tags each provisioning path puts on the instances it
launches. An instance is the cluster's when any of them names the cluster.

- ``kubernetes.io/cluster/<cluster>`` (any value: ``owned`` or ``shared``). Karpenter tags every
  instance it launches so, ``owned`` (aws/karpenter-provider-aws pkg/cloudprovider/
  cloudprovider.go, the ``staticTags`` beside ``eks:eks-cluster-name``); EKS managed node
  groups tag theirs so (their Auto Scaling group's tags, propagated at launch); eksctl's
  self-managed node groups tag their Auto Scaling group so, ``PropagateAtLaunch: "true"``
  (eksctl-io/eksctl pkg/cfn/builder, the ``NodeGroupTags`` test: ``Name`` and
  ``kubernetes.io/cluster/<cluster>: owned``). For other self-managed nodes (Terraform,
  CloudFormation of one's own) it is the template author's choice. The CloudWatch
  agent itself finds a node's cluster by it (aws/amazon-cloudwatch-agent translator util
  ``EKSClusterNameTagKeyPrefix = "kubernetes.io/cluster/"``).
- ``eks:cluster-name``: an EKS managed node group's, beside ``eks:nodegroup-name`` (the tags the
  node group service role's policy, AWSServiceRoleForAmazonEKSNodegroup, lets it put on the
  group's Auto Scaling group).
- ``eks:eks-cluster-name``: Karpenter's (pkg/apis/v1 ``EKSClusterNameTagKey =
  "eks:eks-cluster-name"``) and EKS Auto Mode's: AmazonEKSComputePolicy lets the cluster role
  call ``ec2:RunInstances`` and ``ec2:CreateFleet`` only with ``aws:RequestTag/
  eks:eks-cluster-name`` equal to its own, and with ``eks:kubernetes-node-pool-name`` and
  ``eks:kubernetes-node-class-name`` set
  (https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AmazonEKSComputePolicy.html).
- ``alpha.eksctl.io/cluster-name`` and the older ``eksctl.cluster.k8s.io/v1alpha1/cluster-name``:
  eksctl's tags on every CloudFormation stack it makes (eksctl pkg/cfn/manager
  ``NewStackCollection``: ``ClusterNameTag``, ``OldClusterNameTag``), which CloudFormation
  propagates to the resources of the stack that take tags ("The propagation of stack-level tags
  to resources ... varies by resource type", CloudFormation User Guide, "CloudFormation
  resource tagging").
"""

from collections.abc import Mapping
from typing import Any, Final


def cluster_tag(cluster: str) -> str:
    return f"kubernetes.io/cluster/{cluster}"


#: Tags whose value is the cluster's name, and the provisioning path that sets each.
NAME_TAGS: Final = {
    "eks:cluster-name": "EKS managed node group",
    "eks:eks-cluster-name": "Karpenter or EKS Auto Mode",
    "alpha.eksctl.io/cluster-name": "eksctl",
    "eksctl.cluster.k8s.io/v1alpha1/cluster-name": "eksctl",
}
#: An EKS Auto Mode instance's own tag (AmazonEKSComputePolicy, above): no other path sets it.
AUTO_MODE_NODE_POOL_TAG: Final = "eks:kubernetes-node-pool-name"
#: The tag a team adds to an instance the check does not see: the one every path shares, and
#: the one the CloudWatch agent reads.
TAG_TO_ADD: Final = "owned"


def matching_tags(tags: Mapping[str, str], cluster: str) -> tuple[str, ...]:
    """The keys of ``tags`` that name ``cluster``: empty when none does."""
    return tuple(
        key
        for key, value in tags.items()
        if key == cluster_tag(cluster) or (key in NAME_TAGS and value == cluster)
    )


def instance_filters(cluster: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """DescribeInstances filters that together find every instance some tag names the cluster's
    in two calls: the key that holds the name, and the keys whose value does. The second is
    looser than the rule: "tag-value ... This filter is independent of the tag-key filter"
    (EC2 API Reference, DescribeInstances), so an instance with one of the keys and the name as
    another tag's value passes too; ``matching_tags`` decides."""
    return (
        [{"Name": "tag-key", "Values": [cluster_tag(cluster)]}],
        [
            {"Name": "tag-key", "Values": list(NAME_TAGS)},
            {"Name": "tag-value", "Values": [cluster]},
        ],
    )


def tags_of(instance: Mapping[str, Any]) -> dict[str, str]:
    """An EC2 instance's tags as a mapping (DescribeInstances' ``Tags``: Key and Value pairs)."""
    return {t["Key"]: t.get("Value", "") for t in instance.get("Tags", [])}
