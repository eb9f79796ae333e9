"""The exporter's DaemonSet against the nodes each provisioning path really makes (the label
sets of cli/demo/realistic/nodes.py, each with its sources): every NVIDIA GPU node is selected,
whatever provisioned it and whether or not NVIDIA's feature discovery runs, and no other node
is, judged as the Kubernetes scheduler judges node affinity (cdk/node_config/node_affinity.py).
EKS Auto Mode and arm64 GPU nodes are left out on purpose (the exporter sees no GPU there, or
its image does not run); preflight says so."""

import pytest

from cdk.node_config.manifest import exporter_manifests, gpu_node_terms
from cdk.node_config.node_affinity import selects, term_matches
from cli.demo.realistic import nodes as ec2

ZONE, ZONE_ID = "us-west-2a", "usw2-az1"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
GPU_PRESENT = "nvidia.com/gpu.present"
GPU_COUNT = "nvidia.com/gpu.count"
NFD_VENDOR = "feature.node.kubernetes.io/pci-10de.present"
NFD_3D = "feature.node.kubernetes.io/pci-0302_10de.present"
KARPENTER = "karpenter.k8s.aws/instance-gpu-manufacturer"


def _node(instance_type: ec2.InstanceType, *provisioning: dict[str, str]) -> dict[str, str]:
    return ec2.node(
        "10.0.4.9", "i-0c1d2e3f4a5b6c7d8", instance_type, ZONE, ZONE_ID, *provisioning
    ).labels


MANAGED = ec2.managed_node_group_labels("gpu", "ami-0123456789abcdef0")
KARPENTER_GPU = ec2.karpenter_labels("gpu", "default", ec2.P5_48XLARGE)

#: Every NVIDIA GPU node the exporter must reach, and the marks that select it.
GPU_NODES: dict[str, tuple[dict[str, str], set[str]]] = {
    "managed node group, accelerated AMI, device plugin only": (
        _node(ec2.P5_48XLARGE, MANAGED),
        {INSTANCE_TYPE},
    ),
    "managed node group on Capacity Blocks, device plugin only": (
        _node(ec2.G5_12XLARGE, ec2.managed_node_group_labels("g5", "ami-0", "CAPACITY_BLOCK")),
        {INSTANCE_TYPE},
    ),
    "managed node group with the GPU Operator": (
        _node(ec2.P4D_24XLARGE, MANAGED, ec2.gpu_operator_labels(ec2.P4D_24XLARGE)),
        {GPU_PRESENT, GPU_COUNT, NFD_VENDOR, INSTANCE_TYPE},
    ),
    "managed node group with GPU feature discovery alone": (
        _node(ec2.P5_48XLARGE, MANAGED, ec2.gpu_feature_discovery_labels(ec2.P5_48XLARGE)),
        {GPU_COUNT, INSTANCE_TYPE},
    ),
    "managed node group with NFD's default labels": (
        _node(
            ec2.G5_12XLARGE, MANAGED, ec2.node_feature_discovery_labels(gpu_operator_config=False)
        ),
        {NFD_3D, INSTANCE_TYPE},
    ),
    "Karpenter": (_node(ec2.P5_48XLARGE, KARPENTER_GPU), {KARPENTER, INSTANCE_TYPE}),
    "Karpenter with the GPU Operator": (
        _node(ec2.P5_48XLARGE, KARPENTER_GPU, ec2.gpu_operator_labels(ec2.P5_48XLARGE)),
        {KARPENTER, GPU_PRESENT, GPU_COUNT, NFD_VENDOR, INSTANCE_TYPE},
    ),
    "self-managed by eksctl": (
        _node(ec2.P4D_24XLARGE, ec2.eksctl_labels("ml", "p4d-self")),
        {INSTANCE_TYPE},
    ),
    "self-managed, well-known labels alone": (_node(ec2.G5_12XLARGE), {INSTANCE_TYPE}),
}

#: GPU nodes left out on purpose: "kubernetes.io/arch" (the image is linux/amd64 only) and
#: "eks.amazonaws.com/compute-type" (Auto Mode gives unprivileged containers no GPU).
LEFT_OUT: dict[str, tuple[dict[str, str], str]] = {
    "EKS Auto Mode": (
        _node(ec2.G5_12XLARGE, ec2.auto_mode_labels("gpu", ec2.G5_12XLARGE)),
        "eks.amazonaws.com/compute-type",
    ),
    "arm64 managed node group": (_node(ec2.G5G_XLARGE, MANAGED), "kubernetes.io/arch"),
    "arm64 from Karpenter": (
        _node(ec2.G5G_XLARGE, ec2.karpenter_labels("gpu", "arm", ec2.G5G_XLARGE)),
        "kubernetes.io/arch",
    ),
}

#: Nodes that are not NVIDIA GPU nodes: no exporter there.
OTHER_NODES: dict[str, dict[str, str]] = {
    "managed CPU node group": _node(ec2.M7I_2XLARGE, MANAGED),
    "Karpenter CPU node": _node(
        ec2.M7I_2XLARGE, ec2.karpenter_labels("cpu", "default", ec2.M7I_2XLARGE)
    ),
    "Karpenter arm64 CPU node": _node(
        ec2.C7G_4XLARGE, ec2.karpenter_labels("cpu", "default", ec2.C7G_4XLARGE)
    ),
    "self-managed CPU node": _node(ec2.M7I_2XLARGE, ec2.eksctl_labels("ml", "cpu")),
    "CPU node the GPU Operator labelled before": _node(
        ec2.M7I_2XLARGE, MANAGED, ec2.GPU_OPERATOR_NO_GPU_LABELS
    ),
    "Auto Mode CPU node": _node(
        ec2.M7I_2XLARGE, ec2.auto_mode_labels("general-purpose", ec2.M7I_2XLARGE)
    ),
    "AMD GPU node from Karpenter": _node(
        ec2.G4AD_XLARGE, ec2.karpenter_labels("gpu", "default", ec2.G4AD_XLARGE)
    ),
    "AMD GPU node in a managed node group": _node(ec2.G4AD_XLARGE, MANAGED),
}


def _marks(labels: dict[str, str], terms: list[dict] | None = None) -> set[str]:  # type: ignore[type-arg]
    """The GPU marks (each term's first expression) of the terms that select the node."""
    return {
        t["matchExpressions"][0]["key"]
        for t in terms or gpu_node_terms()
        if term_matches(t, labels)
    }


def _daemon_set_terms(**kwargs: object) -> list[dict]:  # type: ignore[type-arg]
    (*_, daemon_set) = exporter_manifests(image="123.dkr.ecr/x:1", cluster_name="ml-prod", **kwargs)  # type: ignore[arg-type]
    affinity = daemon_set["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    required = affinity["requiredDuringSchedulingIgnoredDuringExecution"]
    terms: list[dict] = required["nodeSelectorTerms"]  # type: ignore[type-arg]
    return terms


@pytest.mark.parametrize("path", list(GPU_NODES))
def test_every_nvidia_gpu_node_is_selected_whatever_provisioned_it(path: str) -> None:
    labels, marks = GPU_NODES[path]
    terms = _daemon_set_terms()
    assert selects(terms, labels)
    assert _marks(labels, terms) == marks


def test_a_managed_node_group_with_only_the_device_plugin_has_no_gpu_label_but_is_reached() -> None:
    """The case the rule was missing: nothing but its instance type says the node has GPUs."""
    labels, _ = GPU_NODES["managed node group, accelerated AMI, device plugin only"]
    without_types = [
        t for t in _daemon_set_terms() if t["matchExpressions"][0]["key"] != INSTANCE_TYPE
    ]
    assert not selects(without_types, labels)
    assert selects(_daemon_set_terms(), labels)


@pytest.mark.parametrize("path", list(LEFT_OUT))
def test_auto_mode_and_arm64_gpu_nodes_are_left_out_by_their_requirement(path: str) -> None:
    labels, requirement = LEFT_OUT[path]
    terms = _daemon_set_terms()
    assert not selects(terms, labels)
    # Each is a GPU node by some mark; only the requirement keeps the exporter off it.
    relaxed = [
        {"matchExpressions": [e for e in t["matchExpressions"] if e["key"] != requirement]}
        for t in terms
    ]
    assert selects(relaxed, labels)


@pytest.mark.parametrize("path", list(OTHER_NODES))
def test_no_node_without_an_nvidia_gpu_is_selected(path: str) -> None:
    labels = OTHER_NODES[path]
    assert not selects(_daemon_set_terms(), labels)
    assert _marks(labels) == set()


def test_gpu_node_labels_add_a_mark_beside_the_built_in_ones() -> None:
    labels = {
        **_node(ec2.M7I_2XLARGE, ec2.eksctl_labels("ml", "inference")),
        "example.com/gpu": "l4",
    }
    assert not selects(_daemon_set_terms(), labels)
    terms = _daemon_set_terms(gpu_node_labels=["example.com/gpu=l4"])
    assert selects(terms, labels)
    assert len(terms) == len(gpu_node_terms()) + 1
    assert terms[-1]["matchExpressions"][1:] == terms[0]["matchExpressions"][1:]
