"""How far a saturated volume can still grow, from its type's ceilings (ebs_prices.EBS_LIMITS).

A volume at its limit is told the room its type has left, in numbers: a gp3 volume at 16,000
IOPS can still be raised to 80,000 without moving its data, which is the cheapest fix there is.
"""

from lambdas.storage_analyzer.ebs_prices import EBS_LIMITS, unknown_type_note

ELSEWHERE = "or stage the training data on instance NVMe or FSx for Lustre."


def _mibps(ceiling: int | None) -> str:
    return f"{ceiling:,} MiB/s" if ceiling is not None else "a throughput AWS states no ceiling for"


def growth_advice(volume_type: str, iops: float, mibps: float, limit: str) -> str:
    """What to do about a volume saturated on ``limit`` ("IOPS" or "throughput") that is
    provisioned for ``iops`` and ``mibps``."""
    gp3 = EBS_LIMITS["gp3"]
    own = EBS_LIMITS.get(volume_type)
    if unknown_type_note(volume_type):
        # Its ceilings are unknown: neither "raise it" nor "move it" can be said in numbers.
        return (
            f"Check how far a {volume_type} volume can be raised in the Amazon EBS User Guide "
            f"(this one gives {iops:,.0f} IOPS and {mibps:,.0f} MiB/s), " + ELSEWHERE
        )
    to_gp3 = (
        f"Move it to gp3, which takes up to {gp3.max_iops:,} IOPS and {_mibps(gp3.max_mibps)} "
        f"whatever its size (this {volume_type} volume gives {iops:,.0f} IOPS and "
        f"{mibps:,.0f} MiB/s), "
    )
    if own is None or not own.provisions_iops:
        return to_gp3 + ELSEWHERE  # gp2, st1, sc1, standard: performance follows size
    # gp3 sells throughput apart from IOPS; io1/io2 throughput follows IOPS to its ceiling.
    sells_mibps = own.min_mibps > 0
    below_mibps = own.max_mibps is None or mibps < own.max_mibps
    needs_iops = limit == "IOPS" or (not sells_mibps and below_mibps)
    room = []
    if iops < own.max_iops and needs_iops:
        room.append(f"IOPS from {iops:,.0f} (up to {own.max_iops:,})")
    if sells_mibps and below_mibps and limit == "throughput":
        up_to = f"up to {own.max_mibps:,}" if own.max_mibps is not None else "no stated ceiling"
        room.append(f"throughput from {mibps:,.0f} MiB/s ({up_to})")
    if room:
        return f"Raise its provisioned {' and '.join(room)}: {volume_type} allows it, " + ELSEWHERE
    return (
        f"It is at {volume_type}'s ceiling ({own.max_iops:,} IOPS, {_mibps(own.max_mibps)} a "
        f"volume): spread the data over more volumes, " + ELSEWHERE
    )
