"""Which EC2 instances are a cluster's: those tagged ``kubernetes.io/cluster/<cluster>``.

Every EKS provisioning path sets it: Karpenter tags every instance it launches so ("owned",
aws/karpenter-provider-aws pkg/cloudprovider/cloudprovider.go, the static tags beside
``eks:eks-cluster-name``), EKS managed node groups tag theirs so, self-managed nodes need it,
and the CloudWatch agent itself finds a node's cluster by that tag (aws/amazon-cloudwatch-agent,
translator util ``GetClusterNameFromEc2Tagger``: prefix ``kubernetes.io/cluster/``, value
``owned``). ``eks:cluster-name`` is a managed node group's only; Karpenter's is
``eks:eks-cluster-name``: neither finds every node.
"""


def cluster_tag(cluster: str) -> str:
    return f"kubernetes.io/cluster/{cluster}"
