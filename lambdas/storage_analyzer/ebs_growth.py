"""How far a saturated volume can still grow, from its type's ceilings (ebs_prices.EBS_LIMITS).

A volume at its limit is told the room its type has left, in numbers: a gp3 volume at 16,000
IOPS can still be raised to 80,000 without moving its data, which is the cheapest fix there is.
"""

from lambdas.storage_analyzer.ebs_prices import EBS_LIMITS

ELSEWHERE = "or stage the training data on instance NVMe or FSx for Lustre."


def growth_advice(volume_type: str, iops: float, mibps: float, limit: str) -> str:
    """What to do about a volume saturated on ``limit`` ("IOPS" or "throughput") that is
    provisioned for ``iops`` and ``mibps``."""
    gp3 = EBS_LIMITS["gp3"]
    own = EBS_LIMITS.get(volume_type)
    to_gp3 = (
        f"Move it to gp3, which takes up to {gp3.max_iops:,} IOPS and {gp3.max_mibps:,} MiB/s "
        f"whatever its size (this {volume_type} volume gives {iops:,.0f} IOPS and "
        f"{mibps:,.0f} MiB/s), "
    )
    if own is None or not own.provisions_iops:
        return to_gp3 + ELSEWHERE  # gp2, st1, sc1, standard: performance follows size
    # gp3 sells throughput apart from IOPS; io1/io2 throughput follows IOPS to its ceiling.
    sells_mibps = own.min_mibps > 0
    needs_iops = limit == "IOPS" or (not sells_mibps and mibps < own.max_mibps)
    room = []
    if iops < own.max_iops and needs_iops:
        room.append(f"IOPS from {iops:,.0f} (up to {own.max_iops:,})")
    if sells_mibps and mibps < own.max_mibps and limit == "throughput":
        room.append(f"throughput from {mibps:,.0f} MiB/s (up to {own.max_mibps:,})")
    if room:
        return f"Raise its provisioned {' and '.join(room)}: {volume_type} allows it, " + ELSEWHERE
    return (
        f"It is at {volume_type}'s ceiling ({own.max_iops:,} IOPS, {own.max_mibps:,} MiB/s a "
        f"volume): spread the data over more volumes, " + ELSEWHERE
    )
