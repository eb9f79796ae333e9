"""GPU power limits per EC2 instance type, for the low-power alarm where only Container
Insights runs (it reports power draw, not the limit the exporter reads from NVML).

Each figure is the GPU's maximum board power from NVIDIA's datasheet for that GPU, and the
GPU model and count from the EC2 accelerated-computing instance pages.
"""

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class GpuPower:
    gpu: str
    gpus: int
    watts_per_gpu: float
    source: str


_A100 = "NVIDIA A100 Tensor Core GPU datasheet: SXM4, 400 W max TDP"
_H100 = "NVIDIA H100 Tensor Core GPU datasheet: SXM5, up to 700 W"
_H200 = "NVIDIA H200 Tensor Core GPU datasheet: SXM, up to 700 W"
_B200 = "NVIDIA HGX B200 specifications: 1,000 W per GPU"
_A10G = "EC2 G5 A10G: 300 W enforced power limit as NVML reports it on g5 instances"
_L4 = "NVIDIA L4 datasheet: 72 W max thermal design power"
_L40S = "NVIDIA L40S datasheet: 350 W max power consumption"
_T4 = "NVIDIA T4 datasheet: 70 W max power"
_V100 = "NVIDIA V100 datasheet: SXM2, 300 W max power"


def _sizes(gpu: str, watts: float, source: str, counts: dict[str, int]) -> dict[str, GpuPower]:
    return {name: GpuPower(gpu, n, watts, source) for name, n in counts.items()}


GPU_POWER: Final[dict[str, GpuPower]] = {
    **_sizes("A100", 400, _A100, {"p4d.24xlarge": 8, "p4de.24xlarge": 8}),
    **_sizes("H100", 700, _H100, {"p5.48xlarge": 8, "p5.4xlarge": 1}),
    **_sizes("H200", 700, _H200, {"p5e.48xlarge": 8, "p5en.48xlarge": 8}),
    **_sizes("B200", 1000, _B200, {"p6-b200.48xlarge": 8}),
    **_sizes(
        "A10G",
        300,
        _A10G,
        {
            "g5.xlarge": 1,
            "g5.2xlarge": 1,
            "g5.4xlarge": 1,
            "g5.8xlarge": 1,
            "g5.16xlarge": 1,
            "g5.12xlarge": 4,
            "g5.24xlarge": 4,
            "g5.48xlarge": 8,
        },
    ),
    **_sizes(
        "L4",
        72,
        _L4,
        {
            "g6.xlarge": 1,
            "g6.2xlarge": 1,
            "g6.4xlarge": 1,
            "g6.8xlarge": 1,
            "g6.16xlarge": 1,
            "g6.12xlarge": 4,
            "g6.24xlarge": 4,
            "g6.48xlarge": 8,
        },
    ),
    **_sizes(
        "L40S",
        350,
        _L40S,
        {
            "g6e.xlarge": 1,
            "g6e.2xlarge": 1,
            "g6e.4xlarge": 1,
            "g6e.8xlarge": 1,
            "g6e.16xlarge": 1,
            "g6e.12xlarge": 4,
            "g6e.24xlarge": 4,
            "g6e.48xlarge": 8,
        },
    ),
    **_sizes(
        "T4",
        70,
        _T4,
        {
            "g4dn.xlarge": 1,
            "g4dn.2xlarge": 1,
            "g4dn.4xlarge": 1,
            "g4dn.8xlarge": 1,
            "g4dn.16xlarge": 1,
            "g4dn.12xlarge": 4,
            "g4dn.metal": 8,
        },
    ),
    **_sizes(
        "V100",
        300,
        _V100,
        {"p3.2xlarge": 1, "p3.8xlarge": 4, "p3.16xlarge": 8, "p3dn.24xlarge": 8},
    ),
}


class UnknownInstanceTypeError(ValueError):
    """An instance type the power table does not know."""


def gpu_power(instance_type: str) -> GpuPower:
    try:
        return GPU_POWER[instance_type]
    except KeyError:
        known = ", ".join(sorted(GPU_POWER))
        raise UnknownInstanceTypeError(
            f"no GPU power figure for instance type {instance_type!r}; known: {known}"
        ) from None
