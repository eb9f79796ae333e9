"""EBS list prices and performance baselines, us-east-1.

Prices: https://aws.amazon.com/ebs/pricing/ as this project recorded them in 2026-11 (the page
could not be re-read when this was written; check it, and other regions differ). Baselines:
the "Amazon EBS volume types" page of the EBS User Guide.
"""

from dataclasses import dataclass
from typing import Final

PRICES_AS_OF: Final = "us-east-1 list prices as recorded 2026-11"


@dataclass(frozen=True)
class VolumePrice:
    per_gib_month: float
    #: Provisioned IOPS above what is included, per IOPS-month.
    per_iops_month: float = 0.0
    #: Provisioned throughput above what is included, per MiB/s-month.
    per_mibps_month: float = 0.0
    included_iops: int = 0
    included_mibps: float = 0.0


EBS_PRICES: Final[dict[str, VolumePrice]] = {
    "gp3": VolumePrice(0.08, 0.005, 0.040, included_iops=3000, included_mibps=125),
    "gp2": VolumePrice(0.10),
    "io1": VolumePrice(0.125, 0.065),
    "io2": VolumePrice(0.125, 0.065),
    "st1": VolumePrice(0.045),
    "sc1": VolumePrice(0.015),
    "standard": VolumePrice(0.05),
}


def gp2_baseline_iops(size_gib: int) -> int:
    """3 IOPS per GiB, at least 100 and at most 16,000."""
    return min(16_000, max(100, 3 * size_gib))


def provisioned_iops(volume_type: str, size_gib: int, iops: int | None) -> float:
    if volume_type in {"gp3", "io1", "io2"} and iops:
        return float(iops)
    if volume_type == "gp2":
        return float(gp2_baseline_iops(size_gib))
    return 0.0  # HDD volumes are sized by throughput


def provisioned_throughput_mibps(
    volume_type: str, size_gib: int, iops: int | None, throughput: int | None
) -> float:
    tib = size_gib / 1024
    match volume_type:
        case "gp3":
            return float(throughput or 125)
        case "gp2":
            return 128.0 if size_gib <= 170 else 250.0
        case "io1" | "io2":
            return min(1000.0, (iops or 0) * 0.256)  # 256 KiB per I/O
        case "st1":
            return min(500.0, 250.0 * tib)  # burst rate
        case "sc1":
            return min(250.0, 80.0 * tib)
    return 0.0
