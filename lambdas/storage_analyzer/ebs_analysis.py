"""EBS findings from one volume's description and hourly metrics: pure, no AWS.

Metrics are hourly (period 3600): operations and bytes are sums over the hour, so rates are
hourly averages; the IOPS/throughput-exceeded checks are hourly maxima of CloudWatch's
per-minute 0/1 checks, which is what catches minute-long saturation that an average hides.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from lambdas.shared.findings import Finding, Kind, Severity
from lambdas.storage_analyzer.ebs_growth import growth_advice
from lambdas.storage_analyzer.ebs_prices import (
    EBS_LIMITS,
    EBS_PRICES,
    PRICES_AS_OF,
    provisioned_iops,
    provisioned_throughput_mibps,
    unknown_type_note,
)

HOUR = 3600.0
MIB = 2**20
ANALYZER = "storage"


@dataclass(frozen=True)
class Volume:
    volume_id: str
    volume_type: str
    size_gib: int
    state: str  # "in-use", "available", ...
    iops: int | None = None
    throughput_mibps: int | None = None
    attached_to: str | None = None
    #: When it was created and when its attachment began, epoch seconds: DescribeVolumes'
    #: ``CreateTime`` ("The time stamp when volume creation was initiated") and
    #: ``Attachments[].AttachTime`` ("The time stamp when the attachment initiated"), EC2 API
    #: Reference, Volume and VolumeAttachment
    #: (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_Volume.html,
    #: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_VolumeAttachment.html).
    created: float | None = None
    attached_at: float | None = None
    #: The PersistentVolumeClaim the EBS CSI driver made it for, from its tags
    #: ``kubernetes.io/created-for/pvc/namespace`` and ``.../pvc/name`` (lambdas/storage_analyzer
    #: /aws.py); None for a volume no claim made.
    claim_namespace: str | None = None
    claim_name: str | None = None
    #: False for a detached volume found only by the CSI driver's tags, which name no cluster
    #: unless the driver runs with ``k8s-tag-cluster-id`` (aws.py): it may be another cluster's.
    cluster_confirmed: bool = True

    @property
    def in_use_since(self) -> float | None:
        """Since when the volume has been what it is now: attached since its attachment
        began, unattached since it was created; None when neither time is known."""
        times = [t for t in (self.created, self.attached_at) if t is not None]
        return max(times) if times else None


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def _epoch(stamp: Any) -> float:
    return stamp.timestamp() if isinstance(stamp, datetime) else float(stamp)


@dataclass
class VolumeMetrics:
    """Hourly values; a list per metric, missing hours simply absent."""

    read_ops: list[float] = field(default_factory=list)
    write_ops: list[float] = field(default_factory=list)
    read_bytes: list[float] = field(default_factory=list)
    write_bytes: list[float] = field(default_factory=list)
    queue_length: list[float] = field(default_factory=list)
    iops_exceeded: list[float] = field(default_factory=list)
    throughput_exceeded: list[float] = field(default_factory=list)
    burst_balance: list[float] = field(default_factory=list)
    #: The timestamps of the series that metric math FILLs (ebs_plan.FILLED), by field: FILL
    #: gives every hour of the window a value, the hours before the volume was created or
    #: attached too, so those fields are cut to the hours since (``since``).
    filled_at: dict[str, list[Any]] = field(default_factory=dict)

    def since(self, epoch: float) -> tuple["VolumeMetrics", int]:
        """These metrics from ``epoch`` on (only the FILLed fields have hours before the volume
        existed), and how many hours were cut."""
        cut: dict[str, Any] = {}
        dropped = 0
        for name, stamps in self.filled_at.items():
            first = next((i for i, t in enumerate(stamps) if _epoch(t) >= epoch), len(stamps))
            if first:
                cut[name] = getattr(self, name)[first:]
                dropped = max(dropped, first)
        return (replace(self, **cut) if cut else self), dropped


@dataclass(frozen=True)
class EbsThresholds:
    #: Trusted Advisor's rule: under 1 IOPS a day on average over 7 days is idle.
    idle_iops: float = 1.0
    idle_days: int = 7
    #: A volume is saturated in an hour at this share of what it is provisioned for ...
    saturation_share: float = 0.9
    #: ... and worth a finding when that is true for this share of its hours.
    saturated_hours_share: float = 0.1
    #: Recommend provisioning the p99 plus this headroom.
    headroom: float = 1.2
    #: Ignore overprovisioning that wastes less than this a month.
    min_waste_usd: float = 1.0
    #: AWS's guidance for SSD volumes is a queue of about 1 per 1,000 IOPS; a p95 queue
    #: this many times that is a volume the workload is waiting on.
    queue_factor: float = 4.0
    #: Burst credits under this percent: a gp2/st1/sc1 volume throttled to its baseline.
    burst_floor_percent: float = 10.0
    #: A detached volume created less than this long ago is not advised for deletion: one the
    #: CSI driver made for a pod still pending, or detached while its pod moves node, is
    #: attached again within minutes. EC2 records no detach time (DescribeVolumes has only
    #: ``CreateTime`` and current attachments), so the grace runs from creation.
    detached_grace_hours: float = 24.0


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def _pairwise_sum(a: list[float], b: list[float]) -> list[float]:
    if len(a) == len(b):
        return [x + y for x, y in zip(a, b, strict=True)]
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    return [x + (shorter[i] if i < len(shorter) else 0.0) for i, x in enumerate(longer)]


def monthly_cost(volume: Volume) -> float | None:
    """None where the type has no price in EBS_PRICES: unknown, never $0."""
    price = EBS_PRICES.get(volume.volume_type)
    if price is None:
        return None
    cost = volume.size_gib * price.per_gib_month
    if volume.iops:
        cost += max(0, volume.iops - price.included_iops) * price.per_iops_month
    if volume.throughput_mibps:
        cost += max(0.0, volume.throughput_mibps - price.included_mibps) * price.per_mibps_month
    return cost


def _per_month(cost: float | None) -> str:
    return f"${cost:.2f} a month" if cost is not None else "an unknown price a month"


def _finding(
    volume: Volume,
    kind: Kind,
    severity: Severity,
    summary: str,
    evidence: dict[str, object],
    recommendation: str,
    waste: float | None = None,
) -> Finding:
    note = unknown_type_note(volume.volume_type)
    evidence = {
        "volume_type": volume.volume_type,
        **({"volume_type_unknown": note} if note else {}),
        "size_gib": volume.size_gib,
        "state": volume.state,
        **({"attached_to": volume.attached_to} if volume.attached_to else {}),
        **evidence,
    }
    if waste is not None:
        evidence["prices"] = PRICES_AS_OF
    return Finding(
        kind=kind,
        resource=volume.volume_id,
        severity=severity,
        summary=summary,
        evidence=evidence,
        recommendation=recommendation,
        estimated_monthly_waste_usd=waste,
        analyzer=ANALYZER,
    )


def analyze_volume(
    volume: Volume,
    metrics: VolumeMetrics,
    t: EbsThresholds = EbsThresholds(),
    now: float | None = None,
) -> list[Finding]:
    """The volume's findings at ``now`` (the window's end), judged only on the hours since it
    was created and attached: a volume attached three days ago has three days of history, not
    a window of FILLed zeros, so it is too new for the idle rule's seven days and is not
    called idle."""
    if volume.state == "available":
        return _detached(volume, t, now)
    since, cut = volume.in_use_since, 0
    if since is not None:
        metrics, cut = metrics.since(since)
    findings = _judged(volume, metrics, t)
    if not cut or since is None:
        return findings
    # Say which hours were judged: the volume is younger (or newly attached) in the window.
    judged = {"in_use_since": iso(since), "hours_before_in_use": cut}
    return [replace(f, evidence={**f.evidence, **judged}) for f in findings]


def _detached(volume: Volume, t: EbsThresholds, now: float | None) -> list[Finding]:
    """A volume attached to nothing: past its grace, priced whole. A volume the CSI driver
    made for a claim goes with the claim: the advice is to delete the claim (its
    PersistentVolume's reclaim policy then deletes or keeps the volume), as deleting the volume
    under a bound claim leaves a claim whose volume is gone."""
    if (
        now is not None
        and volume.created is not None
        and now - volume.created < t.detached_grace_hours * HOUR
    ):
        return []  # made moments ago: a pod pending or rescheduled, not an orphan
    cost = monthly_cost(volume)
    evidence: dict[str, object] = {"reason": "unattached"}
    if volume.created is not None:
        evidence["created"] = iso(volume.created)
    if not volume.cluster_confirmed:
        evidence["cluster"] = (
            "unconfirmed: made by the EBS CSI driver, which tags no cluster unless run with "
            "k8s-tag-cluster-id"
        )
    summary = (
        f"{volume.volume_id} ({volume.size_gib} GiB {volume.volume_type}) is attached "
        f"to nothing and costs {_per_month(cost)}."
    )
    advice = "Snapshot it if the data matters, then delete it."
    if volume.claim_name is not None:
        claim = f"{volume.claim_namespace}/{volume.claim_name}"
        evidence["claim"] = claim
        summary = (
            f"{volume.volume_id} ({volume.size_gib} GiB {volume.volume_type}), the volume of "
            f"claim {claim}, is attached to nothing and costs {_per_month(cost)}."
        )
        advice = (
            f"If no pod will mount it again, snapshot it if the data matters, then delete the "
            f"claim (kubectl delete pvc -n {volume.claim_namespace} {volume.claim_name}): the "
            f"volume goes with its reclaim policy (Delete) or stays for you to delete (Retain)."
        )
    if not volume.cluster_confirmed:
        # Every cluster in the account sees such a volume: the reader is told before acting.
        summary = summary.removesuffix(".") + (
            "; the EBS CSI driver recorded no cluster for it, so it may be another cluster's."
        )
        advice = (
            "Check which cluster made it (its CSIVolumeName tag is the PersistentVolume's "
            "name) before acting. " + advice
        )
    return [
        _finding(volume, Kind.EBS_IDLE_VOLUME, Severity.WARNING, summary, evidence, advice, cost)
    ]


def _judged(volume: Volume, metrics: VolumeMetrics, t: EbsThresholds) -> list[Finding]:
    iops = [ops / HOUR for ops in _pairwise_sum(metrics.read_ops, metrics.write_ops)]
    if not iops:
        return []  # attached but no metrics: nothing can be said either way
    findings: list[Finding] = []
    findings += _idle(volume, iops, t)
    if findings:
        return findings  # an idle volume is neither saturated nor worth resizing
    throughput = [b / HOUR / MIB for b in _pairwise_sum(metrics.read_bytes, metrics.write_bytes)]
    findings += _saturation(volume, iops, throughput, metrics, t)
    findings += _overprovisioned(volume, iops, throughput, t)
    findings += _queue(volume, metrics.queue_length, t)
    return findings


def _idle(volume: Volume, iops: list[float], t: EbsThresholds) -> list[Finding]:
    hours_per_day = 24
    days = [iops[i : i + hours_per_day] for i in range(0, len(iops), hours_per_day)]
    daily = [sum(day) / len(day) for day in days if len(day) == hours_per_day]
    if len(daily) < t.idle_days or max(daily) >= t.idle_iops:
        return []  # busy, or in use fewer whole days than the rule needs: too new to judge
    cost = monthly_cost(volume)
    return [
        _finding(
            volume,
            Kind.EBS_IDLE_VOLUME,
            Severity.WARNING,
            f"{volume.volume_id} averaged under {t.idle_iops:g} IOPS every day for {len(daily)} "
            f"days: it is attached but unused, at {_per_month(cost)}.",
            {"busiest_day_average_iops": round(max(daily), 3), "days": len(daily)},
            "Detach and delete it (after a snapshot), or move its data to S3.",
            cost,
        )
    ]


def _saturation(
    volume: Volume,
    iops: list[float],
    throughput: list[float],
    metrics: VolumeMetrics,
    t: EbsThresholds,
) -> list[Finding]:
    prov_iops = provisioned_iops(volume.volume_type, volume.size_gib, volume.iops)
    prov_mibps = provisioned_throughput_mibps(
        volume.volume_type, volume.size_gib, volume.iops, volume.throughput_mibps
    )
    hours = len(iops)
    hot_iops = sum(v >= t.saturation_share * prov_iops for v in iops) if prov_iops else 0
    hot_mibps = sum(v >= t.saturation_share * prov_mibps for v in throughput) if prov_mibps else 0
    exceeded = sum(v > 0 for v in metrics.iops_exceeded) + sum(
        v > 0 for v in metrics.throughput_exceeded
    )
    low_credit = [b for b in metrics.burst_balance if b < t.burst_floor_percent]
    share = max(hot_iops, hot_mibps) / hours
    if share < t.saturated_hours_share and not exceeded and not low_credit:
        return []
    limit = "throughput" if hot_mibps >= hot_iops else "IOPS"
    ceiling = EBS_LIMITS.get(volume.volume_type)
    return [
        _finding(
            volume,
            Kind.EBS_THROUGHPUT_SATURATED,
            Severity.CRITICAL if share >= 0.5 else Severity.WARNING,
            f"{volume.volume_id} ran at {t.saturation_share:.0%} or more of its provisioned "
            f"{limit} in {share:.0%} of hours"
            + (f", and hit its limit in {exceeded} hour(s)" if exceeded else "")
            + (", with burst credits nearly gone" if low_credit else "")
            + ": whatever reads it waits.",
            {
                "provisioned_iops": prov_iops,
                "provisioned_throughput_mibps": prov_mibps,
                "p99_iops": round(percentile(iops, 0.99), 1),
                "p99_throughput_mibps": round(percentile(throughput, 0.99), 1),
                "saturated_hours": max(hot_iops, hot_mibps),
                "hours": hours,
                "hours_limit_exceeded": exceeded,
                "min_burst_balance_percent": min(metrics.burst_balance)
                if metrics.burst_balance
                else None,
                "type_max_iops": ceiling.max_iops if ceiling else None,
                "type_max_throughput_mibps": ceiling.max_mibps if ceiling else None,
            },
            growth_advice(volume.volume_type, prov_iops, prov_mibps, limit),
        )
    ]


def _overprovisioned(
    volume: Volume, iops: list[float], throughput: list[float], t: EbsThresholds
) -> list[Finding]:
    price = EBS_PRICES.get(volume.volume_type)
    if price is None:
        return []
    findings = []
    if volume.iops and price.per_iops_month and volume.iops > price.included_iops:
        p99 = percentile(iops, 0.99)
        needed = max(float(price.included_iops), math.ceil(p99 * t.headroom))
        waste = max(0.0, volume.iops - needed) * price.per_iops_month
        if waste >= t.min_waste_usd:
            findings.append(
                _finding(
                    volume,
                    Kind.EBS_OVERPROVISIONED_IOPS,
                    Severity.INFO,
                    f"{volume.volume_id} pays for {volume.iops:,} IOPS; its p99 is {p99:,.0f}.",
                    {
                        "provisioned_iops": volume.iops,
                        "p99_iops": round(p99, 1),
                        "included_iops": price.included_iops,
                        "recommended_iops": int(needed),
                    },
                    f"Lower its IOPS to {int(needed):,} (p99 plus {t.headroom - 1:.0%} headroom).",
                    waste,
                )
            )
    if (
        volume.throughput_mibps
        and price.per_mibps_month
        and volume.throughput_mibps > price.included_mibps
    ):
        p99 = percentile(throughput, 0.99)
        needed = max(price.included_mibps, math.ceil(p99 * t.headroom))
        waste = max(0.0, volume.throughput_mibps - needed) * price.per_mibps_month
        if waste >= t.min_waste_usd:
            findings.append(
                _finding(
                    volume,
                    Kind.EBS_OVERPROVISIONED_THROUGHPUT,
                    Severity.INFO,
                    f"{volume.volume_id} pays for {volume.throughput_mibps} MiB/s; its p99 is "
                    f"{p99:,.1f} MiB/s.",
                    {
                        "provisioned_throughput_mibps": volume.throughput_mibps,
                        "p99_throughput_mibps": round(p99, 1),
                        "included_throughput_mibps": price.included_mibps,
                        "recommended_throughput_mibps": int(needed),
                    },
                    f"Lower its throughput to {int(needed)} MiB/s.",
                    waste,
                )
            )
    return findings


def queue_limit(volume: Volume, t: EbsThresholds) -> float:
    """The p95 queue length above which requests wait on this volume."""
    prov_iops = provisioned_iops(volume.volume_type, volume.size_gib, volume.iops) or 1000.0
    return t.queue_factor * max(1.0, prov_iops / 1000)


def _queue(volume: Volume, queue: list[float], t: EbsThresholds) -> list[Finding]:
    if not queue:
        return []
    prov_iops = provisioned_iops(volume.volume_type, volume.size_gib, volume.iops) or 1000.0
    limit = queue_limit(volume, t)
    p95 = percentile(queue, 0.95)
    if p95 <= limit:
        return []
    return [
        _finding(
            volume,
            Kind.EBS_HIGH_QUEUE_LENGTH,
            Severity.WARNING,
            f"{volume.volume_id} kept a p95 queue of {p95:.1f} I/Os against about "
            f"{limit / t.queue_factor:.0f} its {prov_iops:,.0f} IOPS can serve: requests wait.",
            {
                "p95_queue_length": round(p95, 2),
                "queue_limit": limit,
                "provisioned_iops": prov_iops,
            },
            "Provision more IOPS, or spread the reads over more volumes or a parallel file system.",
        )
    ]
