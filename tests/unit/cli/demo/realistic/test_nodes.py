"""Node names and labels by provisioning path: which GPU labels each path gives a node."""

import pytest

from cli.demo.realistic import nodes

GPU_PRESENT = "nvidia.com/gpu.present"
NFD_NVIDIA = "feature.node.kubernetes.io/pci-10de.present"


def test_node_names_are_the_private_ip_dns_names() -> None:
    assert nodes.node_name("10.0.2.21", "us-east-1") == "ip-10-0-2-21.ec2.internal"
    assert nodes.node_name("10.0.2.21", "eu-west-1") == "ip-10-0-2-21.eu-west-1.compute.internal"


def _gpu_labels(labels: dict[str, str]) -> set[str]:
    return {k for k in labels if "gpu" in k or k.startswith("feature.node.kubernetes.io/")}


def test_a_managed_node_group_on_the_accelerated_ami_has_no_gpu_label() -> None:
    # The device plugin alone labels nothing: none of the labels a GPU node selector looks for.
    node = nodes.node(
        "10.0.2.21", "i-0a1b2c3d4e5f60718", nodes.P5_48XLARGE, "us-east-1a", "use1-az4",
        nodes.managed_node_group_labels("gpu-p5", "ami-0123456789abcdef0", "CAPACITY_BLOCK"),
    )  # fmt: skip
    assert _gpu_labels(node.labels) == set()
    assert node.labels["eks.amazonaws.com/nodegroup"] == "gpu-p5"
    assert node.labels["eks.amazonaws.com/capacityType"] == "CAPACITY_BLOCK"
    assert node.labels["node.kubernetes.io/instance-type"] == "p5.48xlarge"
    assert node.labels["kubernetes.io/hostname"] == node.name == "ip-10-0-2-21.ec2.internal"
    with pytest.raises(ValueError, match="'RESERVED'"):
        nodes.managed_node_group_labels("gpu-p5", "ami-0", "RESERVED")


def test_with_the_gpu_operator_the_node_says_it_has_gpus() -> None:
    labels = nodes.gpu_operator_labels(nodes.P5_48XLARGE)
    assert labels[GPU_PRESENT] == "true"
    assert labels[NFD_NVIDIA] == "true"
    assert labels["nvidia.com/gpu.count"] == "8"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    # GPU feature discovery alone sets no gpu.present; NFD's own default is class and vendor.
    assert GPU_PRESENT not in nodes.gpu_feature_discovery_labels(nodes.P5_48XLARGE)
    assert nodes.node_feature_discovery_labels(gpu_operator_config=False) == {
        "feature.node.kubernetes.io/pci-0302_10de.present": "true"
    }


def test_karpenter_and_auto_mode_label_the_instances_gpus_under_their_own_prefix() -> None:
    karpenter = nodes.karpenter_labels("gpu", "default", nodes.P5_48XLARGE)
    assert karpenter["karpenter.sh/nodepool"] == "gpu"
    assert karpenter["karpenter.k8s.aws/instance-gpu-name"] == "h100"
    assert karpenter["karpenter.k8s.aws/instance-gpu-manufacturer"] == "nvidia"
    assert karpenter["karpenter.k8s.aws/instance-gpu-count"] == "8"
    assert karpenter["karpenter.k8s.aws/instance-gpu-memory"] == "81920"
    assert karpenter["karpenter.k8s.aws/instance-family"] == "p5"
    auto = nodes.auto_mode_labels("gpu", nodes.G5_12XLARGE, "spot")
    assert auto["eks.amazonaws.com/compute-type"] == "auto"
    assert auto["eks.amazonaws.com/instance-gpu-name"] == "a10g"
    assert auto["eks.amazonaws.com/instance-gpu-count"] == "4"
    assert auto["karpenter.sh/capacity-type"] == "spot"
    assert not any(k.startswith("karpenter.k8s.aws/") for k in auto)
    assert GPU_PRESENT not in karpenter
    assert GPU_PRESENT not in auto


def test_a_self_managed_node_has_the_well_known_labels_and_its_own() -> None:
    node = nodes.node(
        "10.0.3.7", "i-0b", nodes.P4D_24XLARGE, "us-west-2b", "usw2-az2",
        nodes.eksctl_labels("ml", "p4d-self"),
    )  # fmt: skip
    assert node.name == "ip-10-0-3-7.us-west-2.compute.internal"
    assert node.labels["topology.kubernetes.io/region"] == "us-west-2"
    assert node.labels["topology.k8s.aws/zone-id"] == "usw2-az2"
    assert node.labels["alpha.eksctl.io/nodegroup-name"] == "p4d-self"
    assert _gpu_labels(node.labels) == set()
