"""EBS list prices and performance baselines, us-east-1.

Prices: https://aws.amazon.com/ebs/pricing/ as this project recorded them in 2026-11 (the page
could not be re-read when this was written; check it, and other regions differ). Baselines and
limits: the "Amazon EBS volume types" page of the EBS User Guide
(https://docs.aws.amazon.com/ebs/latest/userguide/ebs-volume-types.html).
"""

import math
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


@dataclass(frozen=True)
class VolumeLimits:
    """What one volume of a type can be made to do: the advice to grow a saturated volume is
    only as good as these ceilings."""

    max_iops: int
    #: None where AWS documents no per-volume throughput ceiling for the type (io2a).
    max_mibps: int | None
    max_size_gib: int
    #: The IOPS one can provision (gp3, gp3a, io1, io2, io2a); 0 where IOPS follow from size
    #: (gp2) or throughput is what is sold (st1, sc1).
    min_iops: int = 0
    #: The throughput one can provision (gp3, gp3a); 0 where it follows from IOPS or size.
    min_mibps: int = 0

    @property
    def provisions_iops(self) -> bool:
        return self.min_iops > 0


#: Per-volume ceilings, as of 2026-11. The provisioned ranges (gp3, io1, io2 IOPS; gp3
#: throughput; every size) are the EC2 API's own, CreateVolume ``Iops``, ``Throughput`` and
#: ``Size`` (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateVolume.html; the
#: same text ships in botocore's EC2 service model, which tests/unit/lambdas/storage_analyzer/
#: test_ebs_limits.py reads to hold this table to it). The other ceilings (gp2 16,000 IOPS and
#: 250 MiB/s; io1 1,000 MiB/s; io2 Block Express 4,000 MiB/s; st1 500 IOPS and 500 MiB/s; sc1
#: 250 IOPS and 250 MiB/s) are the "Amazon EBS volume types" page's table of each type's
#: maximum IOPS and throughput per volume
#: (https://docs.aws.amazon.com/ebs/latest/userguide/ebs-volume-types.html).
EBS_LIMITS: Final[dict[str, VolumeLimits]] = {
    "gp3": VolumeLimits(80_000, 2_000, 65_536, min_iops=3_000, min_mibps=125),
    "gp2": VolumeLimits(16_000, 250, 16_384),
    "io1": VolumeLimits(64_000, 1_000, 16_384, min_iops=100),
    "io2": VolumeLimits(256_000, 4_000, 65_536, min_iops=100),
    # The adaptive types, as the EC2 API documents them (CreateVolume: "General Purpose
    # Adaptive SSD: gp3a", "Provisioned IOPS Adaptive SSD: io2a"; Iops "gp3a: 1,000 - 80,000",
    # "io2a: 100 - 256,000"; Throughput 125 - 2,000 MiB/s "for gp3 and gp3a volumes only";
    # Size "gp3a: 1 - 65,536", "io2a: 4 - 65,536" GiB). The API states no throughput ceiling
    # for io2a, so none is assumed. Neither has a price in EBS_PRICES yet: its findings say
    # the price is unknown rather than $0.
    "gp3a": VolumeLimits(80_000, 2_000, 65_536, min_iops=1_000, min_mibps=125),
    "io2a": VolumeLimits(256_000, None, 65_536, min_iops=100),
    "st1": VolumeLimits(500, 500, 16_384),
    "sc1": VolumeLimits(250, 250, 16_384),
}


#: Magnetic (standard) is priced but has no provisioned ceilings in the table above.
KNOWN_TYPES: Final = frozenset(EBS_LIMITS) | frozenset(EBS_PRICES)


def unknown_type_note(volume_type: str) -> str | None:
    """A type AWS added after this table (or a value no API returns) is named in each of its
    volume's findings, and nothing about it (a limit, a price) is guessed from another type."""
    if volume_type in KNOWN_TYPES:
        return None
    return (
        f"volume type {volume_type!r} is not in this analyzer's tables "
        "(lambdas/storage_analyzer/ebs_prices.py): its price and limits are unknown, "
        "so none is assumed"
    )


def gp2_baseline_iops(size_gib: int) -> int:
    """3 IOPS per GiB, at least 100 and at most gp2's ceiling (16,000)."""
    return min(EBS_LIMITS["gp2"].max_iops, max(100, 3 * size_gib))


def provisioned_iops(volume_type: str, size_gib: int, iops: int | None) -> float:
    limits = EBS_LIMITS.get(volume_type)
    if limits is not None and limits.provisions_iops and iops:
        return float(iops)
    if volume_type == "gp2":
        return float(gp2_baseline_iops(size_gib))
    return 0.0  # HDD volumes are sized by throughput


def provisioned_throughput_mibps(
    volume_type: str, size_gib: int, iops: int | None, throughput: int | None
) -> float:
    tib = size_gib / 1024
    match volume_type:
        case "gp3" | "gp3a":
            return float(throughput or EBS_LIMITS[volume_type].min_mibps)
        case "gp2":
            return 128.0 if size_gib <= 170 else 250.0
        case "io1" | "io2":
            return min(_ceiling(volume_type), (iops or 0) * 0.256)  # 256 KiB per I/O
        case "st1":
            return min(_ceiling("st1"), 250.0 * tib)  # burst rate
        case "sc1":
            return min(_ceiling("sc1"), 80.0 * tib)
    return 0.0


def _ceiling(volume_type: str) -> float:
    """The type's throughput ceiling, where AWS states one (every type but io2a)."""
    ceiling = EBS_LIMITS[volume_type].max_mibps
    return float(ceiling) if ceiling is not None else math.inf
