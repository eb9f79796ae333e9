"""GPU memory right-sizing with the numbers DCGM reports: an H100 80GB's framebuffer is
81,559 MiB (nvidia-smi's "81559MiB" on a p5.48xlarge; Container Insights publishes it in bytes,
contract.metrics ``CI_POD_GPU_MEMORY_TOTAL_METRIC``)."""

from collections.abc import Sequence

import pytest

from lambdas.shared.findings import Kind, Severity
from lambdas.training_analyzer.gpu_hours.findings import HOURS_PER_MONTH
from lambdas.training_analyzer.gpu_memory.analysis import (
    GIB,
    GpuMemory,
    MemoryThresholds,
    Verdict,
    judge_jobs,
    memory_findings,
    p95,
)

MIB = 2**20
H100 = 81_559 * MIB
PRICE = 6.88


def _gpus(
    job: str, peaks: Sequence[float], gpus: int = 1, itype: str | None = "p5.48xlarge"
) -> list[GpuMemory]:
    return [
        GpuMemory("ml", job, f"{job}-{g}", f"nvidia{g}", tuple(peaks), H100, itype)
        for g in range(gpus)
    ]


def test_a_job_at_71_gib_of_an_h100_is_near_capacity() -> None:
    # 24 hours: 20 at 70 GiB, 4 at 71 GiB: P95 71 GiB, 89% of 79.6 GiB, over the 85% line.
    (job,) = judge_jobs(
        _gpus("llama-ft", [70 * GIB] * 20 + [71 * GIB] * 4, gpus=8),
        gpu_hour_usd=PRICE,
        window_hours=24,
    )
    assert job.verdict is Verdict.NEAR_CAPACITY
    assert (job.gpus, job.gpu_hours) == (8, 192.0)
    (finding,) = memory_findings([job])
    assert finding.kind is Kind.TRAINING_GPU_MEMORY_NEAR_CAPACITY
    assert finding.severity is Severity.WARNING
    assert finding.resource == "job/llama-ft"
    assert finding.evidence["p95_gib"] == 71.0
    assert finding.evidence["capacity_gib"] == 79.65
    assert finding.evidence["p95_percent_of_capacity"] == 89.1
    assert finding.estimated_monthly_waste_usd is None


def test_a_job_peaking_at_9_gib_of_an_h100_fits_a_1g_10gb() -> None:
    # 9 GiB + 10% headroom = 9.9 GiB; 1g.10gb holds 1/8 of 81,559 MiB = 9.96 GiB.
    (job,) = judge_jobs(_gpus("bert-eval", [8 * GIB] * 23 + [9 * GIB]), gpu_hour_usd=PRICE,
                        window_hours=24)  # fmt: skip
    assert (job.verdict, job.profile, job.model) == (Verdict.OVERSIZED, "1g.10gb", "H100 80GB")
    # One GPU all day: 730 GPU-hours a month, 6/7 of each freed at $6.88.
    assert job.monthly_saving_usd == pytest.approx(HOURS_PER_MONTH * 6 / 7 * PRICE)
    (finding,) = memory_findings([job])
    assert finding.kind is Kind.TRAINING_GPU_MEMORY_OVERSIZED
    assert finding.severity is Severity.INFO
    assert finding.estimated_monthly_waste_usd == pytest.approx(4304.91, abs=0.01)
    assert "1g.10gb" in finding.summary


def test_headroom_decides_the_profile() -> None:
    # 9.5 GiB needs 10.45 GiB with 10% headroom: past 1g.10gb, into 1g.20gb (19.9 GiB).
    (job,) = judge_jobs(_gpus("j", [9.5 * GIB]), gpu_hour_usd=PRICE, window_hours=24)
    assert job.profile == "1g.20gb"
    # An H100 80GB holds four 1g.20gb (NVIDIA's MIG User Guide, "Supported MIG Profiles",
    # "Number of Instances Available"): the job frees three quarters of its GPU, not 6/7.
    assert job.monthly_saving_usd == pytest.approx(730 / 24 * 3 / 4 * PRICE)
    (tight,) = judge_jobs(
        _gpus("j", [9.5 * GIB]), gpu_hour_usd=PRICE, window_hours=24,
        thresholds=MemoryThresholds(headroom_percent=4),
    )  # fmt: skip
    assert tight.profile == "1g.10gb"


def test_a_job_between_is_right_sized_and_has_no_finding() -> None:
    # 50 GiB peak: past 4g.40gb's 39.8 GiB, under 85% of 79.6 GiB.
    (job,) = judge_jobs(_gpus("j", [50 * GIB]), gpu_hour_usd=PRICE, window_hours=24)
    assert job.verdict is Verdict.RIGHT_SIZED
    assert memory_findings([job]) == []


def test_a_gpu_without_mig_is_never_oversized() -> None:
    # g6e: L40S, 48 GB, no MIG; a job at 4 GiB of it is not priced as if it had profiles.
    gpus = [GpuMemory("ml", "small", "p", "nvidia0", (4 * GIB,), 46_068 * MIB, "g6e.xlarge")]
    (job,) = judge_jobs(gpus, gpu_hour_usd=1.86, window_hours=24)
    assert (job.verdict, job.model) == (Verdict.RIGHT_SIZED, None)


def test_an_unknown_node_is_named_by_its_capacity() -> None:
    # No node known: 143,771 MiB is an H200's, whose smallest profile is 1g.18gb.
    gpus = [GpuMemory("ml", "j", "p", "nvidia0", (12 * GIB,), 143_771 * MIB, None)]
    (job,) = judge_jobs(gpus, gpu_hour_usd=7.91, window_hours=24)
    assert (job.model, job.profile) == ("H200 141GB", "1g.18gb")


def test_near_capacity_threshold_is_the_setting() -> None:
    gpus = _gpus("j", [71 * GIB])
    (loose,) = judge_jobs(
        gpus, gpu_hour_usd=PRICE, window_hours=24,
        thresholds=MemoryThresholds(near_capacity_percent=90),
    )  # fmt: skip
    assert loose.verdict is Verdict.RIGHT_SIZED


def test_p95_is_nearest_rank() -> None:
    assert p95([float(v) for v in range(1, 101)]) == 95.0
    assert p95([3.0]) == 3.0
