"""Each EBS finding at its threshold edges, on plain hourly data, and the same findings from
what the datapoint-floor plan (ebs_plan) fetches of that data: every ``analyze_volume`` here
also runs on the data as CloudWatch would return it to the plan, and must agree."""

import math
from dataclasses import replace

import pytest

from lambdas.shared.findings import Finding, Kind, Severity
from lambdas.storage_analyzer.ebs_analysis import (
    EbsThresholds,
    Volume,
    VolumeMetrics,
    _pairwise_sum,
    monthly_cost,
    percentile,
)
from lambdas.storage_analyzer.ebs_analysis import analyze_volume as analyze_hourly
from lambdas.storage_analyzer.ebs_plan import BURSTING_TYPES, could_fire

HOURS = 14 * 24
MIB = 2**20


def as_fetched(
    volume: Volume,
    hourly: VolumeMetrics,
    t: EbsThresholds,
    queue_max: list[float] | None = None,
) -> VolumeMetrics:
    """What the plan's queries return for this hourly data: the read + write totals (metric
    math), the window Maximum or Minimum of the screened series, and those series hourly only
    where their screen could fire. The queue's window Maximum is of the raw samples, so the
    maximum of each hour's Maximum (``queue_max``), which is at least its Average (the
    hourly ``queue_length``); without ``queue_max`` every sample of an hour is its average."""
    burst = hourly.burst_balance if volume.volume_type in BURSTING_TYPES else []
    peaks = queue_max if queue_max is not None else hourly.queue_length
    assert all(p >= a for p, a in zip(peaks, hourly.queue_length, strict=True))
    fetched = VolumeMetrics(
        read_ops=_pairwise_sum(hourly.read_ops, hourly.write_ops),
        read_bytes=_pairwise_sum(hourly.read_bytes, hourly.write_bytes),
        queue_length=[max(peaks)] if peaks else [],
        iops_exceeded=[max(hourly.iops_exceeded)] if hourly.iops_exceeded else [],
        throughput_exceeded=[max(hourly.throughput_exceeded)] if hourly.throughput_exceeded else [],
        burst_balance=[min(burst)] if burst else [],
    )
    hours = {f: getattr(hourly, f) for f in could_fire(volume, fetched, t)}
    return replace(fetched, **hours)


def analyze_volume(
    volume: Volume,
    metrics: VolumeMetrics,
    t: EbsThresholds = EbsThresholds(),  # noqa: B008
) -> list[Finding]:
    findings = analyze_hourly(volume, metrics, t)
    assert analyze_hourly(volume, as_fetched(volume, metrics, t), t) == findings
    return findings


def gp3(iops: int = 3000, throughput: int = 125, size: int = 500) -> Volume:
    return Volume("vol-1", "gp3", size, "in-use", iops, throughput, "i-1")


def steady(
    iops: float, mibps: float = 0.0, hours: int = HOURS, queue: float = 0.5
) -> VolumeMetrics:
    return VolumeMetrics(
        read_ops=[iops * 3600 / 2] * hours,
        write_ops=[iops * 3600 / 2] * hours,
        read_bytes=[mibps * MIB * 3600] * hours,
        write_bytes=[0.0] * hours,
        queue_length=[queue] * hours,
        iops_exceeded=[0.0] * hours,
        throughput_exceeded=[0.0] * hours,
    )


def kinds(volume: Volume, metrics: VolumeMetrics) -> list[Kind]:
    return [f.kind for f in analyze_volume(volume, metrics)]


def test_unattached_volume_is_idle_and_priced() -> None:
    (finding,) = analyze_volume(
        Volume("vol-9", "gp3", 1000, "available", 3000, 125), VolumeMetrics()
    )
    assert finding.kind is Kind.EBS_IDLE_VOLUME
    assert finding.estimated_monthly_waste_usd == pytest.approx(80.0)  # 1,000 GiB x $0.08
    assert finding.evidence["reason"] == "unattached"


def test_idle_edge_is_one_iops_a_day_for_seven_days() -> None:
    assert kinds(gp3(), steady(0.99, hours=7 * 24)) == [Kind.EBS_IDLE_VOLUME]
    assert kinds(gp3(), steady(1.0, hours=7 * 24)) == []  # just over: not idle
    assert kinds(gp3(), steady(0.5, hours=6 * 24)) == []  # six days of data: too little to say


def test_one_busy_day_makes_a_volume_not_idle() -> None:
    metrics = steady(0.1, hours=7 * 24)
    metrics.read_ops[30:40] = [36_000.0] * 10  # ten busy hours on day two
    assert kinds(gp3(), metrics) == []


def test_no_metrics_for_an_attached_volume_is_no_finding() -> None:
    assert analyze_volume(gp3(), VolumeMetrics()) == []


def test_saturation_edge_is_ninety_percent_for_a_tenth_of_hours() -> None:
    volume = gp3(iops=3000, throughput=125)
    metrics = steady(500, mibps=10)
    hot = math.ceil(HOURS * 0.1)  # 34 of 336 hours
    metrics.read_bytes[:hot] = [0.9 * 125 * MIB * 3600] * hot
    (finding,) = [
        f for f in analyze_volume(volume, metrics) if f.kind is Kind.EBS_THROUGHPUT_SATURATED
    ]
    assert finding.evidence["saturated_hours"] == hot
    assert finding.severity is Severity.WARNING
    metrics.read_bytes[hot - 1] = 0.89 * 125 * MIB * 3600  # one hour fewer: under 10%
    assert Kind.EBS_THROUGHPUT_SATURATED not in kinds(volume, metrics)


def test_a_saturated_gp3_volume_is_told_how_far_it_can_still_grow() -> None:
    """gp3 takes up to 80,000 IOPS and 2,000 MiB/s (EC2 API, CreateVolume; held to botocore's
    model in test_ebs_limits): a volume at 16,000 IOPS, or at 1,000 MiB/s, is not at its
    ceiling; one at both ceilings is told so."""
    (iops,) = analyze_volume(gp3(iops=16_000), steady(15_000, mibps=10))
    assert iops.kind is Kind.EBS_THROUGHPUT_SATURATED
    assert iops.recommendation.startswith("Raise its provisioned IOPS from 16,000 (up to 80,000)")
    assert (iops.evidence["type_max_iops"], iops.evidence["type_max_throughput_mibps"]) == (
        80_000,
        2_000,
    )
    (mibps,) = analyze_volume(gp3(iops=3000, throughput=1000), steady(100, mibps=950))
    assert mibps.recommendation.startswith(
        "Raise its provisioned throughput from 1,000 MiB/s (up to 2,000)"
    )
    (top,) = analyze_volume(gp3(iops=80_000, throughput=2000), steady(79_000, mibps=1990))
    assert top.recommendation.startswith("It is at gp3's ceiling (80,000 IOPS, 2,000 MiB/s")


def test_a_saturated_gp2_or_io2_volume_is_told_its_way_up() -> None:
    gp2 = Volume("vol-2", "gp2", 1000, "in-use")  # 3,000 IOPS baseline, 250 MiB/s
    (moved,) = analyze_volume(gp2, steady(2950, mibps=10))
    assert moved.recommendation.startswith(
        "Move it to gp3, which takes up to 80,000 IOPS and 2,000 MiB/s whatever its size "
        "(this gp2 volume gives 3,000 IOPS and 250 MiB/s)"
    )
    io2 = Volume("vol-3", "io2", 1000, "in-use", 64_000, None, "i-1")
    (raised,) = analyze_volume(io2, steady(63_000, mibps=10))
    advice = raised.recommendation
    assert advice.startswith("Raise its provisioned IOPS from 64,000 (up to 256,000)")
    # io2 throughput follows IOPS up to 4,000 MiB/s (256 KiB an I/O), not io1's 1,000
    assert raised.evidence["provisioned_throughput_mibps"] == 4000.0


def test_a_single_exceeded_check_is_saturation() -> None:
    metrics = steady(500, mibps=10)
    metrics.iops_exceeded[100] = 1.0
    (finding,) = analyze_volume(gp3(), metrics)
    assert finding.kind is Kind.EBS_THROUGHPUT_SATURATED
    assert finding.evidence["hours_limit_exceeded"] == 1


def test_gp2_out_of_burst_credits_is_saturation() -> None:
    volume = Volume("vol-2", "gp2", 100, "in-use")
    metrics = steady(50, mibps=5)
    metrics.burst_balance = [100.0] * 100 + [9.0]
    (finding,) = analyze_volume(volume, metrics)
    assert finding.kind is Kind.EBS_THROUGHPUT_SATURATED
    assert finding.evidence["min_burst_balance_percent"] == 9.0


def test_overprovisioned_iops_are_priced_above_the_gp3_baseline() -> None:
    volume = gp3(iops=16_000, throughput=125)
    metrics = steady(4000, mibps=20)
    (finding,) = analyze_volume(volume, metrics)
    assert finding.kind is Kind.EBS_OVERPROVISIONED_IOPS
    assert finding.evidence["recommended_iops"] == 4800  # p99 4,000 plus 20%
    assert finding.estimated_monthly_waste_usd == pytest.approx((16_000 - 4800) * 0.005)


def test_iops_used_up_to_the_headroom_are_not_waste() -> None:
    metrics = steady(5000)
    assert kinds(gp3(iops=6000), metrics) == []  # 5,000 x 1.2 = 6,000: nothing to give back
    # Just over: 6,200 provisioned wastes 200 IOPS = $1.00, the smallest finding worth making.
    assert kinds(gp3(iops=6200), metrics) == [Kind.EBS_OVERPROVISIONED_IOPS]


def test_overprovisioned_throughput() -> None:
    (finding,) = analyze_volume(gp3(throughput=1000), steady(2000, mibps=100))
    assert finding.kind is Kind.EBS_OVERPROVISIONED_THROUGHPUT
    assert finding.evidence["recommended_throughput_mibps"] == 125  # the included baseline
    assert finding.estimated_monthly_waste_usd == pytest.approx((1000 - 125) * 0.04)


def test_queue_length_against_a_queue_per_thousand_iops() -> None:
    assert kinds(gp3(iops=3000), steady(2000, queue=12.0)) == []  # limit 4 x 3 = 12
    assert kinds(gp3(iops=3000), steady(2000, queue=12.5)) == [Kind.EBS_HIGH_QUEUE_LENGTH]


def test_gaps_in_metrics_do_not_break_the_analysis() -> None:
    metrics = steady(2000, queue=1.0)
    metrics.write_ops = metrics.write_ops[: HOURS // 2]  # half the write series missing
    assert analyze_volume(gp3(), metrics) == []


def test_percentile_and_cost_helpers() -> None:
    assert percentile([], 0.99) == 0.0
    assert percentile(list(range(1, 101)), 0.99) == 99
    assert monthly_cost(gp3(iops=4000, throughput=225, size=100)) == pytest.approx(8 + 5 + 4)
    assert EbsThresholds().idle_days == 7


def test_a_queue_burst_within_an_hour_sends_the_volume_to_the_second_pass_and_no_finding() -> None:
    """CloudWatch's window Maximum of the queue is the largest raw sample: a burst to 30 in
    every busy hour, whose averages stay at 2, trips the screen (limit 12 at 3,000 IOPS), so
    the hourly averages are fetched, and their p95 (2) is within the limit: no finding, as on
    the hourly data."""
    volume = gp3()
    hourly = steady(1500, 60, queue=2.0)
    bursts = [30.0 if h % 24 == 9 else 3.0 for h in range(HOURS)]
    fetched = as_fetched(volume, hourly, EbsThresholds(), queue_max=bursts)
    assert could_fire(volume, as_fetched(volume, hourly, EbsThresholds()), EbsThresholds()) == []
    assert fetched.queue_length == hourly.queue_length  # the second pass: hourly averages
    assert Kind.EBS_HIGH_QUEUE_LENGTH not in [f.kind for f in analyze_hourly(volume, fetched)]
    assert analyze_hourly(volume, fetched) == analyze_hourly(volume, hourly)


def _filled(hours: int = HOURS, iops: float = 0.0) -> VolumeMetrics:
    """The plan's FILLed totals over the window: a value every hour, before the volume too."""
    stamps = [h * 3600.0 for h in range(hours)]
    return VolumeMetrics(
        read_ops=[iops * 3600] * hours,
        read_bytes=[0.0] * hours,
        filled_at={"read_ops": stamps, "read_bytes": stamps},
    )


@pytest.mark.parametrize(
    ("attached_hour", "idle_days"),
    [(None, 14), (0, 14), (HOURS - 7 * 24, 7), (HOURS - 7 * 24 + 1, None), (HOURS - 3 * 24, None)],
)
def test_a_volume_is_idle_only_on_seven_whole_days_since_it_was_attached(
    attached_hour: int | None, idle_days: int | None
) -> None:
    attached = None if attached_hour is None else attached_hour * 3600.0
    volume = replace(gp3(), created=0.0 if attached is not None else None, attached_at=attached)
    found = analyze_hourly(volume, _filled())
    if idle_days is None:
        assert found == []  # too new to call idle, whatever its zeros before
        return
    assert [f.kind for f in found] == [Kind.EBS_IDLE_VOLUME]
    assert found[0].evidence["days"] == idle_days
    assert found[0].summary.startswith(
        f"vol-1 averaged under 1 IOPS every day for {idle_days} days"
    )
    cut = found[0].evidence.get("hours_before_in_use")
    assert cut == (attached_hour or None)


def test_a_newly_attached_volume_is_judged_on_its_own_hours() -> None:
    """A 3,000-IOPS gp3 volume attached a day ago, at 2,900 IOPS every hour since: saturated in
    all of its hours, not in the 7% that FILL's thirteen days of zeros before it would leave."""
    volume = replace(gp3(), created=0.0, attached_at=(HOURS - 24) * 3600.0)
    metrics = _filled(iops=2_900)
    metrics.read_ops[: HOURS - 24] = [0.0] * (HOURS - 24)
    (found,) = analyze_hourly(volume, metrics)
    assert (found.kind, found.severity) == (Kind.EBS_THROUGHPUT_SATURATED, Severity.CRITICAL)
    assert (found.evidence["saturated_hours"], found.evidence["hours"]) == (24, 24)
    assert found.evidence["hours_before_in_use"] == HOURS - 24
    unknown = replace(volume, created=None, attached_at=None)  # judged on the whole window
    assert analyze_hourly(unknown, metrics) == []


def test_an_unattached_volume_says_when_it_was_made() -> None:
    volume = Volume("vol-2", "gp3", 100, "available", created=86_400.0)
    (found,) = analyze_hourly(volume, VolumeMetrics())
    assert found.evidence["created"] == "1970-01-02T00:00:00+00:00"


def test_a_detached_volume_within_its_grace_is_not_advised_and_a_claims_names_the_claim() -> None:
    """Made 23 hours before the window's end: a pod pending or moving, no finding; at 25
    hours, the finding names the claim the CSI driver made it for and advises deleting it."""
    end = 1_790_000_000.0
    hour = 3600.0

    def detached(age_hours: float) -> Volume:
        return Volume(
            "vol-7", "gp3", 100, "available", 3000, 125, created=end - age_hours * hour,
            claim_namespace="research", claim_name="old-run",
        )  # fmt: skip

    assert analyze_hourly(detached(23), VolumeMetrics(), now=end) == []
    (finding,) = analyze_hourly(detached(25), VolumeMetrics(), now=end)
    assert finding.evidence["claim"] == "research/old-run"
    assert "kubectl delete pvc -n research old-run" in finding.recommendation
    assert "claim research/old-run" in finding.summary


def test_a_volume_no_cluster_is_recorded_for_says_so_where_a_person_reads() -> None:
    """The EBS CSI driver tags no cluster unless run with k8s-tag-cluster-id, so every cluster
    in the account finds its detached volumes: the summary and the advice say it, not only the
    evidence, before anyone deletes another cluster's volume."""
    unconfirmed = Volume("vol-8", "gp3", 100, "available", 3000, 125, cluster_confirmed=False)
    (finding,) = analyze_hourly(unconfirmed, VolumeMetrics())
    assert "may be another cluster's" in finding.summary
    assert finding.recommendation.startswith("Check which cluster made it")
    (own,) = analyze_hourly(Volume("vol-9", "gp3", 100, "available", 3000, 125), VolumeMetrics())
    assert "another cluster" not in own.summary + own.recommendation


def test_a_volume_type_the_tables_do_not_know_is_named_never_priced_at_zero() -> None:
    """A type AWS adds later (botocore's VolumeType enum took gp3a and io2a in 2026-12) must
    not crash the run, be priced $0, or be advised from another type's ceilings."""
    (idle,) = analyze_volume(Volume("vol-7", "gp4x", 1000, "available", 3000, 125), VolumeMetrics())
    assert idle.estimated_monthly_waste_usd is None
    assert "costs an unknown price a month" in idle.summary
    assert "'gp4x' is not in this analyzer's tables" in str(idle.evidence["volume_type_unknown"])
    busy = Volume("vol-8", "gp4x", 500, "in-use", 3000, 500, "i-1")
    metrics = replace(steady(3000, mibps=500), iops_exceeded=[1.0] + [0.0] * (HOURS - 1))
    (saturated,) = analyze_volume(busy, metrics)
    assert saturated.kind is Kind.EBS_THROUGHPUT_SATURATED
    assert saturated.evidence["type_max_iops"] is None
    assert "Move it to gp3" not in saturated.recommendation
    assert saturated.recommendation.startswith("Check how far a gp4x volume can be raised")


def test_the_adaptive_types_provision_as_the_ec2_api_documents_them() -> None:
    """gp3a sells IOPS from 1,000 and throughput like gp3; io2a IOPS to 256,000 with no
    throughput ceiling stated: their limits are known, their prices not yet (unknown, not $0)."""
    gp3a = Volume("vol-a", "gp3a", 500, "in-use", 1000, 125, "i-1")
    (saturated,) = analyze_volume(gp3a, steady(990))
    assert saturated.evidence["provisioned_iops"] == 1000.0
    assert saturated.recommendation.startswith(
        "Raise its provisioned IOPS from 1,000 (up to 80,000): gp3a allows it"
    )
    assert "volume_type_unknown" not in saturated.evidence
    io2a = Volume("vol-b", "io2a", 500, "available", 256_000, None)
    (idle,) = analyze_volume(io2a, VolumeMetrics())
    assert idle.estimated_monthly_waste_usd is None
    assert monthly_cost(io2a) is None
