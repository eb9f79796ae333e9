"""The MIG profiles of the GPUs EC2 offers with MIG, and which instance families carry them.

Profiles from NVIDIA's Multi-Instance GPU User Guide, "Supported MIG Profiles"
(https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html): on the
A100-SXM4-40GB, 1g.5gb (1/8 of the memory, 1/7 of the SMs), 1g.10gb (2/8, 1/7), 2g.10gb (2/8,
2/7), 3g.20gb (4/8, 3/7), 4g.20gb (4/8, 4/7), 7g.40gb (all); "For A100-SXM4-80GB, the profile
names will change according to the memory proportion - for example, 1g.10gb, 1g.10gb+me,
1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb respectively"; the H100 80GB and H200 141GB tables
have the same slices under their own names (1g.10gb ... 7g.80gb; 1g.18gb, 1g.35gb, 2g.35gb,
3g.71gb, 4g.71gb, 7g.141gb). A profile's memory is its fraction of the device's, so it is
computed from the capacity Container Insights reports, not from the rounded name.

Instance families: p4d (8 x A100 40GB), p4de (8 x A100 80GB), p5 (H100 80GB), p5e and p5en
(H200 141GB) (https://aws.amazon.com/ec2/instance-types/p4/, .../p5/).
"""

from dataclasses import dataclass
from typing import Final

#: Compute slices of a whole GPU: the guide's "7g" is the whole of it.
SLICES: Final = 7


@dataclass(frozen=True)
class MigProfile:
    name: str
    #: Compute slices (the ``g``), of ``SLICES``.
    slices: int
    #: Memory, in eighths of the device's.
    eighths: int
    #: The guide's "Number of Instances Available": how many of it one GPU holds.
    instances: int

    def memory_bytes(self, capacity_bytes: float) -> float:
        return capacity_bytes * self.eighths / 8

    @property
    def gpu_share(self) -> float:
        """The share of a GPU's hour it takes: one of the instances a GPU holds of it. Its
        memory, not only its compute slices, bounds how many fit: an H100 80GB holds seven
        1g.10gb but only four 1g.20gb (a quarter of the memory each), so a 1g.20gb takes a
        quarter of the GPU, not 1/7."""
        return 1 / self.instances


#: (slices, eighths of memory, instances a GPU holds) of the six profiles, smallest first, as
#: the guide's tables list them for the A100 and H100 ("Fraction of SMs", "Fraction of Memory",
#: "Number of Instances Available": 1g.5gb 7, 1g.10gb 4, 2g.10gb 3, 3g.20gb 2, 4g.20gb 1,
#: 7g.40gb 1 on the A100-SXM4-40GB; the same on the 80 GB A100, the H100 and the H200).
_LAYOUT: Final = ((1, 1, 7), (1, 2, 4), (2, 2, 3), (3, 4, 2), (4, 4, 1), (7, 8, 1))


def _profiles(*names: str) -> tuple[MigProfile, ...]:
    return tuple(MigProfile(n, *layout) for n, layout in zip(names, _LAYOUT, strict=True))


_MIG_80GB: Final = _profiles("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")
#: GPU model -> its MIG profiles, smallest first.
MIG_PROFILES: Final[dict[str, tuple[MigProfile, ...]]] = {
    "A100 40GB": _profiles("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
    "A100 80GB": _MIG_80GB,
    "H100 80GB": _MIG_80GB,
    "H200 141GB": _profiles("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
    #: A device known by its memory alone: the two 80 GB models share their profiles' names.
    "A100 80GB or H100 80GB": _MIG_80GB,
}
#: Nominal memory (GiB) -> the models a device of that memory alone may be.
_BY_MEMORY: Final = {40: "A100 40GB", 80: "A100 80GB or H100 80GB", 141: "H200 141GB"}
#: Instance family -> the MIG-capable GPU model it carries.
MIG_FAMILIES: Final[dict[str, str]] = {
    "p4d": "A100 40GB",
    "p4de": "A100 80GB",
    "p5": "H100 80GB",
    "p5e": "H200 141GB",
    "p5en": "H200 141GB",
}
#: A device whose capacity is within this share of a model's nominal memory (read as GiB:
#: DCGM reports 40960 MiB on an A100 40GB, 81559 MiB on an H100 80GB, 143771 MiB on an H200)
#: is that model's.
_NOMINAL_TOLERANCE: Final = 0.05
_GIB: Final = 2**30


#: NVML's name of a device (dcgm-exporter's ``modelName`` label) -> the MIG-capable model it is,
#: by the part of the name that says so: "NVIDIA A100-SXM4-40GB" and "...-80GB" (the GPU
#: Operator's ``nvidia.com/gpu.product`` on a p4d, cli/demo/realistic/nodes.py), "NVIDIA H100 80GB
#: HBM3" (NVML on a p5) and "NVIDIA H200" (NVML on an H200, the recorded trace of
#: tests/unit/agent/exporter/test_real_gpu_trace.py). Any other name (A10G, L4, L40S, T4,
#: V100 on EC2) has no MIG.
MIG_NAMES: Final = (
    ("A100-SXM4-40GB", "A100 40GB"),
    ("A100-SXM4-80GB", "A100 80GB"),
    ("H100 80GB", "H100 80GB"),
    ("H200", "H200 141GB"),
)


def family_of(instance_type: str) -> str:
    """``p5`` of ``p5.48xlarge`` (and of SageMaker's ``ml.p5.48xlarge``)."""
    return instance_type.removeprefix("ml.").split(".", 1)[0]


def model_of(
    instance_type: str | None, capacity_bytes: float, gpu_name: str | None = None
) -> str | None:
    """The MIG-capable GPU model of a device: by its NVML name where known (OTel mode's DCGM
    series carry it), else its node's instance family (a family without MIG has none), else
    the model whose nominal memory its capacity is (within 5%, in GiB: DCGM reports the
    framebuffer less what the driver reserves)."""
    if gpu_name:
        return next((model for part, model in MIG_NAMES if part in gpu_name), None)
    if instance_type:
        return MIG_FAMILIES.get(family_of(instance_type))
    for gib, model in _BY_MEMORY.items():
        if abs(capacity_bytes - gib * _GIB) <= _NOMINAL_TOLERANCE * gib * _GIB:
            return model
    return None


def smallest_fit(model: str, capacity_bytes: float, need_bytes: float) -> MigProfile | None:
    """The smallest profile (fewest slices, then least memory) of ``model`` whose memory
    holds ``need_bytes``, short of the whole GPU; None where only the whole GPU does."""
    for profile in MIG_PROFILES.get(model, ()):
        if profile.slices < SLICES and profile.memory_bytes(capacity_bytes) >= need_bytes:
            return profile
    return None
