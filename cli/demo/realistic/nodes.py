"""GPU nodes as each provisioning path names, labels and tags them (the EC2 tags on their
instances, at the end): EKS managed node groups (the
accelerated AMI), Karpenter, EKS Auto Mode, self-managed nodes; and the labels NVIDIA's GPU
feature discovery, the GPU Operator and Node Feature Discovery add, where they run. Nothing
here is a GPU label unless one of those put it there: a managed node group on the accelerated
AMI with only the device plugin has none.
"""

from dataclasses import dataclass, field
from typing import Final


@dataclass(frozen=True)
class InstanceType:
    """What EC2's DescribeInstanceTypes says of an instance type (``GpuInfo.Gpus[0]``: Name,
    Manufacturer, Count, ``MemoryInfo.SizeInMiB``; ``VCpuInfo``, ``MemoryInfo``,
    ``ProcessorInfo.SupportedArchitectures`` as Kubernetes names it), and the product name
    NVIDIA's GPU feature discovery reads from the driver. An instance type without a GPU has
    no GPU fields."""

    name: str
    vcpus: int
    memory_mib: int
    gpu_name: str = ""
    gpu_manufacturer: str = ""
    gpu_count: int = 0
    gpu_memory_mib: int = 0
    #: GPU feature discovery's ``nvidia.com/gpu.product``: the NVML name, spaces as dashes.
    gfd_product: str = ""
    #: ... and ``nvidia.com/gpu.family`` (the architecture).
    gfd_family: str = ""
    #: ``kubernetes.io/arch``: EC2's ``x86_64`` is Kubernetes' ``amd64``, ``arm64`` is
    #: ``arm64`` (aws/karpenter-provider-aws pkg/apis/v1/labels.go ``AWSToKubeArchitectures``).
    arch: str = "amd64"

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def size(self) -> str:
        return self.name.split(".", 1)[1]


# https://aws.amazon.com/ec2/instance-types/p5/: p5.48xlarge, 8 NVIDIA H100 (80 GB HBM3 each),
# 192 vCPUs, 2 TiB; GPU Operator docs, "GPU Operator with MIG" (node labels):
# "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3".
P5_48XLARGE: Final = InstanceType(
    "p5.48xlarge", 192, 2_097_152, "H100", "NVIDIA", 8, 81_920, "NVIDIA-H100-80GB-HBM3", "hopper"
)
# https://aws.amazon.com/ec2/instance-types/p4/: p4d.24xlarge, 8 NVIDIA A100 (40 GB), 96 vCPUs,
# 1152 GiB.
P4D_24XLARGE: Final = InstanceType(
    "p4d.24xlarge", 96, 1_179_648, "A100", "NVIDIA", 8, 40_960, "NVIDIA-A100-SXM4-40GB", "ampere"
)
# https://aws.amazon.com/ec2/instance-types/g5/: g5.12xlarge, 4 NVIDIA A10G (24 GB), 48 vCPUs,
# 192 GiB.
G5_12XLARGE: Final = InstanceType(
    "g5.12xlarge", 48, 196_608, "A10G", "NVIDIA", 4, 24_576, "NVIDIA-A10G", "ampere"
)


# https://aws.amazon.com/ec2/instance-types/g5g/: g5g.xlarge, 1 NVIDIA T4G Tensor Core GPU
# (16 GiB), 4 vCPUs (AWS Graviton2: arm64), 8 GiB.
G5G_XLARGE: Final = InstanceType("g5g.xlarge", 4, 8_192, "T4g", "NVIDIA", 1, 16_384, arch="arm64")
# https://aws.amazon.com/ec2/instance-types/g4/: "G4ad instances feature the latest AMD Radeon
# Pro V520 GPUs"; g4ad.xlarge, 1 GPU (8 GiB), 4 vCPUs, 16 GiB. A GPU node, but not NVIDIA's.
G4AD_XLARGE: Final = InstanceType("g4ad.xlarge", 4, 16_384, "Radeon Pro V520", "AMD", 1, 8_192)
# Nodes without a GPU: https://aws.amazon.com/ec2/instance-types/m7i/ (m7i.2xlarge, 8 vCPUs,
# 32 GiB) and https://aws.amazon.com/ec2/instance-types/c7g/ (c7g.4xlarge, 16 vCPUs, 32 GiB,
# Graviton3: arm64).
M7I_2XLARGE: Final = InstanceType("m7i.2xlarge", 8, 32_768)
C7G_4XLARGE: Final = InstanceType("c7g.4xlarge", 16, 32_768, arch="arm64")


@dataclass(frozen=True)
class Node:
    name: str
    instance_id: str
    instance_type: InstanceType
    zone: str
    labels: dict[str, str] = field(default_factory=dict)


def node_name(private_ip: str, region: str) -> str:
    """An EKS node's name: its EC2 private IP DNS name, "ip-private-ipv4-address.ec2.internal
    for the us-east-1 Region, and ip-private-ipv4-address.region.compute.internal for other
    Regions" (Amazon EC2 User Guide, "Amazon EC2 instance hostname types")."""
    host = "ip-" + private_ip.replace(".", "-")
    return f"{host}.ec2.internal" if region == "us-east-1" else f"{host}.{region}.compute.internal"


def well_known_labels(
    name: str, instance_type: InstanceType, zone: str, zone_id: str
) -> dict[str, str]:
    """Every node's: the kubelet's (``kubernetes.io/hostname``, ``/os``, ``/arch`` and their
    deprecated ``beta.`` twins) and the AWS cloud provider's (``node.kubernetes.io/
    instance-type``, ``topology.kubernetes.io/region`` and ``/zone``, their ``beta`` and
    ``failure-domain.beta`` twins, ``topology.k8s.aws/zone-id``). Kubernetes docs,
    "Well-Known Labels, Annotations and Taints"; the zone ID label: aws/karpenter-provider-aws
    pkg/apis/v1/labels.go ``LabelTopologyZoneID``. The OTel add-on drops most of them from its
    series by name (``otel.DROPPED_NODE_LABELS``), evidence they are on every node. ``zone_id``
    is the zone's ID: "AZ names are mapped to AZ IDs independently for each account" (AWS RAM
    User Guide, "Availability Zone IDs for your AWS resources"), so the model takes it as given."""
    region = zone[:-1]
    return {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": instance_type.arch,
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": instance_type.arch,
        "node.kubernetes.io/instance-type": instance_type.name,
        "beta.kubernetes.io/instance-type": instance_type.name,
        "topology.kubernetes.io/region": region,
        "topology.kubernetes.io/zone": zone,
        "failure-domain.beta.kubernetes.io/region": region,
        "failure-domain.beta.kubernetes.io/zone": zone,
        "topology.k8s.aws/zone-id": zone_id,
    }


#: The EKS API's ``capacityType``: "Valid Values: ON_DEMAND | SPOT | CAPACITY_BLOCK" (Amazon EKS
#: API Reference, Nodegroup).
MANAGED_CAPACITY_TYPES: Final = ("ON_DEMAND", "SPOT", "CAPACITY_BLOCK")


def managed_node_group_labels(
    nodegroup: str,
    ami: str,
    capacity_type: str = "ON_DEMAND",
    launch_template: tuple[str, str] | None = None,
) -> dict[str, str]:
    """What EKS adds to a managed node group's nodes: "Amazon EKS adds Kubernetes labels to
    managed node group instances. These Amazon EKS provided labels are prefixed with
    eks.amazonaws.com"; "Amazon EKS adds the following Kubernetes label to all nodes in your
    managed node group that specifies the capacity type: eks.amazonaws.com/capacityType: SPOT"
    (Amazon EKS User Guide, "Managed node groups"). The node group's image and launch template
    (``eks.amazonaws.com/nodegroup-image``, ``/sourceLaunchTemplateId``,
    ``/sourceLaunchTemplateVersion``) are named by the OTel add-on's attribute limit
    (aws-observability/helm-charts _otel-container-insights-config.tpl,
    ``awsattributelimit/cw_k8s_ci_v0``)."""
    if capacity_type not in MANAGED_CAPACITY_TYPES:
        raise ValueError(f"capacity type {capacity_type!r} is not one of {MANAGED_CAPACITY_TYPES}")
    labels = {
        "eks.amazonaws.com/nodegroup": nodegroup,
        "eks.amazonaws.com/nodegroup-image": ami,
        "eks.amazonaws.com/capacityType": capacity_type,
    }
    if launch_template is not None:
        labels["eks.amazonaws.com/sourceLaunchTemplateId"] = launch_template[0]
        labels["eks.amazonaws.com/sourceLaunchTemplateVersion"] = launch_template[1]
    return labels


def _instance_labels(prefix: str, instance_type: InstanceType) -> dict[str, str]:
    """The instance labels Karpenter (``karpenter.k8s.aws/``) and EKS Auto Mode
    (``eks.amazonaws.com/``) put on a node: GPU name and manufacturer in lower kebab case, and
    GPU labels only on an instance type with a GPU (aws/karpenter-provider-aws
    pkg/providers/instancetype/types.go ``computeRequirements``: ``if info.GpuInfo != nil``,
    ``lowerKabobCase(gpu.Name)``, ``gpu.Count``, ``gpu.MemoryInfo.SizeInMiB``)."""
    family = instance_type.family
    labels = {
        f"{prefix}/instance-category": family[0],
        f"{prefix}/instance-family": family,
        f"{prefix}/instance-generation": "".join(c for c in family if c.isdigit()),
        f"{prefix}/instance-size": instance_type.size,
        f"{prefix}/instance-cpu": str(instance_type.vcpus),
        f"{prefix}/instance-memory": str(instance_type.memory_mib),
        f"{prefix}/instance-hypervisor": "nitro",
    }
    if instance_type.gpu_count:
        labels |= {
            f"{prefix}/instance-gpu-name": _kebab(instance_type.gpu_name),
            f"{prefix}/instance-gpu-manufacturer": _kebab(instance_type.gpu_manufacturer),
            f"{prefix}/instance-gpu-count": str(instance_type.gpu_count),
            f"{prefix}/instance-gpu-memory": str(instance_type.gpu_memory_mib),
        }
    return labels


def _kebab(name: str) -> str:
    """Karpenter's ``lowerKabobCase``: lower case, spaces as dashes."""
    return name.lower().replace(" ", "-")


def karpenter_labels(
    nodepool: str, nodeclass: str, instance_type: InstanceType, capacity_type: str = "on-demand"
) -> dict[str, str]:
    """A node Karpenter launched: its NodePool (``karpenter.sh/nodepool``), capacity type
    (``karpenter.sh/capacity-type``: spot, on-demand, reserved), lifecycle labels
    (``karpenter.sh/registered``, ``/initialized``), EC2NodeClass
    (``karpenter.k8s.aws/ec2nodeclass``: aws/karpenter-provider-aws pkg/apis/v1/labels.go
    ``LabelNodeClass``) and the instance's ``karpenter.k8s.aws/instance-*`` labels
    (``WellKnownLabels`` in that file; https://karpenter.sh/docs/concepts/scheduling/
    #well-known-labels)."""
    return {
        "karpenter.sh/nodepool": nodepool,
        "karpenter.sh/capacity-type": capacity_type,
        "karpenter.sh/registered": "true",
        "karpenter.sh/initialized": "true",
        "karpenter.k8s.aws/ec2nodeclass": nodeclass,
        **_instance_labels("karpenter.k8s.aws", instance_type),
    }


def auto_mode_labels(
    nodepool: str, instance_type: InstanceType, capacity_type: str = "on-demand"
) -> dict[str, str]:
    """A node of EKS Auto Mode: "EKS Auto Mode uses different labels than Karpenter. Labels
    related to EC2 managed instances start with eks.amazonaws.com"; ``eks.amazonaws.com/
    compute-type: auto`` "Identifies EKS Auto Mode managed nodes"; ``eks.amazonaws.com/
    instance-gpu-name`` (e.g. t4), ``-gpu-manufacturer`` (nvidia), ``-gpu-count``,
    ``-gpu-memory``; ``karpenter.sh/capacity-type`` (Amazon EKS User Guide, "Create a Node Pool
    for EKS Auto Mode", EKS Auto Mode Supported Labels). GPU instances come from a NodePool of
    your own: the built-in ``general-purpose`` and ``system`` pools cannot be modified."""
    return {
        "eks.amazonaws.com/compute-type": "auto",
        "karpenter.sh/nodepool": nodepool,
        "karpenter.sh/capacity-type": capacity_type,
        **_instance_labels("eks.amazonaws.com", instance_type),
    }


def eksctl_labels(cluster: str, nodegroup: str) -> dict[str, str]:
    """A self-managed node group made by eksctl: ``alpha.eksctl.io/cluster-name`` and
    ``/nodegroup-name`` (the OTel add-on drops the ``alpha.eksctl.io/`` prefix from its
    series). A self-managed node made otherwise has only the well-known labels and what its
    kubelet's ``--node-labels`` gives it."""
    return {"alpha.eksctl.io/cluster-name": cluster, "alpha.eksctl.io/nodegroup-name": nodegroup}


def gpu_feature_discovery_labels(instance_type: InstanceType) -> dict[str, str]:
    """NVIDIA GPU feature discovery's labels (NVIDIA/k8s-device-plugin, "Generated Labels"):
    ``nvidia.com/gpu.count``, ``nvidia.com/gpu.product``, ``nvidia.com/gpu.family``. It does not
    set ``nvidia.com/gpu.present``: the GPU Operator does. It runs on NVIDIA GPU nodes only."""
    if not instance_type.gfd_product:
        raise ValueError(f"{instance_type.name}: no GPU feature discovery product modelled")
    return {
        "nvidia.com/gpu.count": str(instance_type.gpu_count),
        "nvidia.com/gpu.product": instance_type.gfd_product,
        "nvidia.com/gpu.family": instance_type.gfd_family,
    }


def node_feature_discovery_labels(*, gpu_operator_config: bool = True) -> dict[str, str]:
    """Node Feature Discovery's PCI label for an NVIDIA device (vendor 10de). The GPU Operator
    configures NFD to label PCI devices by vendor alone (``pci-10de.present``); NFD's default
    is class and vendor (``pci-0302_10de.present`` for a 3D controller): NVIDIA/gpu-operator
    controllers/state_manager.go ``gpuNodeLabels`` looks for all of these."""
    key = "pci-10de.present" if gpu_operator_config else "pci-0302_10de.present"
    return {f"feature.node.kubernetes.io/{key}": "true"}


#: NVIDIA/gpu-operator controllers/state_manager.go: ``commonGPULabelKey =
#: "nvidia.com/gpu.present"``, set on every node NFD found an NVIDIA PCI device on, and the
#: ``gpuStateLabels`` that schedule its operands there.
GPU_OPERATOR_LABELS: Final = {
    "nvidia.com/gpu.present": "true",
    "nvidia.com/gpu.deploy.driver": "true",
    "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
    "nvidia.com/gpu.deploy.container-toolkit": "true",
    "nvidia.com/gpu.deploy.device-plugin": "true",
    "nvidia.com/gpu.deploy.dcgm": "true",
    "nvidia.com/gpu.deploy.dcgm-exporter": "true",
    "nvidia.com/gpu.deploy.node-status-exporter": "true",
    "nvidia.com/gpu.deploy.operator-validator": "true",
}


#: The GPU Operator on a node it labelled before that has no NVIDIA device now: "previously
#: labelled node and no longer has GPU's ... labels[commonGPULabelKey] = "false"" (the same
#: file), its operands' labels removed.
GPU_OPERATOR_NO_GPU_LABELS: Final = {"nvidia.com/gpu.present": "false"}


def gpu_operator_labels(instance_type: InstanceType) -> dict[str, str]:
    """A node where the GPU Operator runs: its own labels, its NFD's, and its GPU feature
    discovery's."""
    return {
        **node_feature_discovery_labels(),
        **GPU_OPERATOR_LABELS,
        **gpu_feature_discovery_labels(instance_type),
    }


def node(
    private_ip: str,
    instance_id: str,
    instance_type: InstanceType,
    zone: str,
    zone_id: str,
    *provisioning: dict[str, str],
) -> Node:
    """A node: its name from its IP and Region, the well-known labels, then each
    provisioning path's and add-on's labels."""
    name = node_name(private_ip, zone[:-1])
    labels = well_known_labels(name, instance_type, zone, zone_id)
    for extra in provisioning:
        labels |= extra
    return Node(name, instance_id, instance_type, zone, labels)


# The EC2 tags each provisioning path puts on the instances it launches (what DescribeInstances
# shows; lambdas/shared/cluster_tags.py is the product's reading of them, these the sources').


def managed_node_group_tags(cluster: str, nodegroup: str) -> dict[str, str]:
    """An EKS managed node group's instance: ``eks:cluster-name``, ``eks:nodegroup-name`` and
    ``kubernetes.io/cluster/<cluster>: owned``, from the group's Auto Scaling group, propagated
    at launch (the tag keys AWSServiceRoleForAmazonEKSNodegroup lets EKS put on the group,
    https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AWSServiceRoleForAmazonEKSNodegroup.html).
    The ``aws:`` tags beside them (``aws:autoscaling:groupName``, ``aws:ec2launchtemplate:id``)
    are reserved to AWS and left out."""
    return {
        "eks:cluster-name": cluster,
        "eks:nodegroup-name": nodegroup,
        f"kubernetes.io/cluster/{cluster}": "owned",
    }


def karpenter_tags(cluster: str, nodepool: str, nodeclass: str) -> dict[str, str]:
    """A Karpenter instance's static tags (aws/karpenter-provider-aws pkg/cloudprovider/
    cloudprovider.go ``getTags``: ``kubernetes.io/cluster/<cluster>: owned``, the NodePool,
    ``eks:eks-cluster-name`` (pkg/apis/v1 ``EKSClusterNameTagKey``) and the EC2NodeClass),
    over the EC2NodeClass's own ``spec.tags``."""
    return {
        f"kubernetes.io/cluster/{cluster}": "owned",
        "karpenter.sh/nodepool": nodepool,
        "eks:eks-cluster-name": cluster,
        "karpenter.k8s.aws/ec2nodeclass": nodeclass,
    }


def auto_mode_tags(cluster: str, nodepool: str, nodeclass: str = "default") -> dict[str, str]:
    """An EKS Auto Mode instance: the tags AmazonEKSComputePolicy requires of every
    ``ec2:RunInstances`` and ``ec2:CreateFleet`` the cluster role makes (``aws:RequestTag/
    eks:eks-cluster-name`` its own cluster, ``eks:kubernetes-node-pool-name`` and
    ``eks:kubernetes-node-class-name`` set:
    https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AmazonEKSComputePolicy.html).
    Its ``Operator.Managed`` (an EC2 managed instance) moto does not model."""
    return {
        "eks:eks-cluster-name": cluster,
        "eks:kubernetes-node-pool-name": nodepool,
        "eks:kubernetes-node-class-name": nodeclass,
    }


def eksctl_self_managed_tags(cluster: str, nodegroup: str) -> dict[str, str]:
    """An eksctl self-managed (unmanaged) node group's instance: its Auto Scaling group's tags,
    ``PropagateAtLaunch: "true"``: ``Name`` ``<cluster>-<nodegroup>-Node`` and
    ``kubernetes.io/cluster/<cluster>: owned`` (eksctl-io/eksctl pkg/cfn/builder, nodegroup
    test "NodeGroupTags")."""
    return {"Name": f"{cluster}-{nodegroup}-Node", f"kubernetes.io/cluster/{cluster}": "owned"}


def eksctl_stack_tags(cluster: str) -> dict[str, str]:
    """The tags eksctl puts on every CloudFormation stack it makes (eksctl pkg/cfn/manager
    ``NewStackCollection``: ``ClusterNameTag``, ``OldClusterNameTag``), which reach a stack's
    resources where CloudFormation propagates stack tags ("varies by resource type",
    CloudFormation User Guide, "CloudFormation resource tagging")."""
    return {
        "alpha.eksctl.io/cluster-name": cluster,
        "eksctl.cluster.k8s.io/v1alpha1/cluster-name": cluster,
    }


#: A self-managed node launched from a template of one's own that sets no tag: nothing in EC2
#: says whose it is (the kubelet joins the cluster by its bootstrap configuration alone).
UNTAGGED: Final[dict[str, str]] = {}
