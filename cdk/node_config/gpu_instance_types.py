"""The EC2 instance types with NVIDIA GPUs: the one table of them. The exporter's DaemonSet
selects nodes of these types (cdk/node_config/manifest.py) whatever else labels them, and
preflight checks the cluster's GPU nodes against it.

Where the table comes from (tests/unit/cdk/node_config/test_gpu_instance_types.py holds it to
both, so neither can drift without a failing test):

- the instance types the ``amazon-cloudwatch-observability`` add-on schedules its DCGM exporter
  on (aws-observability/helm-charts, charts/amazon-cloudwatch-observability/values.yaml,
  ``dcgmExporter.affinity``, "NVIDIA GPU instance types"), less the ``g4ad`` sizes that list
  carries: their GPU is AMD's ("G4ad instances feature the latest AMD Radeon Pro V520 GPUs",
  https://aws.amazon.com/ec2/instance-types/g4/), where NVML finds nothing;
- every instance type EC2's DescribeInstanceTypes describes with an NVIDIA GPU
  (``GpuInfo.Gpus[].Manufacturer``), which adds the types the chart has not listed yet (g6f,
  gr6f, g7, g7e, p5.4xlarge).

A SageMaker HyperPod node of an EKS cluster carries its type with the ``ml.`` prefix in
``node.kubernetes.io/instance-type`` (the chart lists ``ml.p5.48xlarge`` and the others so).
"""

from typing import Final

_UP_TO_24XLARGE: Final = (
    "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge",
)  # fmt: skip

#: family -> sizes, for every family with NVIDIA GPUs.
_SIZES: Final[dict[str, tuple[str, ...]]] = {
    "g3": ("4xlarge", "8xlarge", "16xlarge"),
    "g3s": ("xlarge",),
    "g4dn": ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "metal"),
    "g5": (*_UP_TO_24XLARGE, "48xlarge"),
    "g5g": ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge", "metal"),
    "g6": (*_UP_TO_24XLARGE, "48xlarge"),
    "g6e": (*_UP_TO_24XLARGE, "48xlarge"),
    "g6f": ("large", "xlarge", "2xlarge", "4xlarge"),
    "g7": ("2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge"),
    "g7e": ("2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge"),
    "gr6": ("4xlarge", "8xlarge"),
    "gr6f": ("4xlarge",),
    "p2": ("xlarge", "8xlarge", "16xlarge"),
    "p3": ("2xlarge", "8xlarge", "16xlarge"),
    "p3dn": ("24xlarge",),
    "p4d": ("24xlarge",),
    "p4de": ("24xlarge",),
    "p5": ("4xlarge", "48xlarge"),
    "p5e": ("48xlarge",),
    "p5en": ("48xlarge",),
    "p6-b200": ("48xlarge",),
    "p6-b300": ("48xlarge",),
    "p6e-gb200": ("36xlarge",),
}  # fmt: skip

#: Every EC2 instance type with NVIDIA GPUs.
NVIDIA_GPU_INSTANCE_TYPES: Final[frozenset[str]] = frozenset(
    f"{family}.{size}" for family, sizes in _SIZES.items() for size in sizes
)
#: How SageMaker HyperPod names an instance type on its EKS nodes.
HYPERPOD_PREFIX: Final = "ml."


def node_instance_types() -> list[str]:
    """The values of ``node.kubernetes.io/instance-type`` a node with NVIDIA GPUs may carry:
    each type, and its SageMaker HyperPod name."""
    types = sorted(NVIDIA_GPU_INSTANCE_TYPES)
    return [*types, *(f"{HYPERPOD_PREFIX}{t}" for t in types)]


def is_nvidia_gpu_instance_type(instance_type: str) -> bool:
    return instance_type.removeprefix(HYPERPOD_PREFIX) in NVIDIA_GPU_INSTANCE_TYPES
