"""Per job, its GPU memory used against its GPUs' capacity: the peak, and the P95 of its GPUs'
hourly peaks over the window (how high the job goes in all but its 5% highest hours), a
warning where that P95 is near capacity (an out-of-memory risk), and a priced note where the
peak with headroom fits a MIG profile of its GPU, named, with the monthly saving at the
deployment's price of a GPU-hour.

The P95 is over hourly peaks, not raw samples: CloudWatch stores Container Insights' minute
samples, and the hourly Maximum is what one read of a fleet's series returns in full batches
(GetMetricData's percentile statistics are not available on statistic sets, which is how the
agent compacts high-frequency samples). A P95 of hourly peaks is at least the P95 of samples,
so the warning errs toward saying so."""

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final

from lambdas.shared.findings import Finding, Kind, Severity
from lambdas.training_analyzer.gpu_hours.findings import HOURS_PER_MONTH
from lambdas.training_analyzer.gpu_memory.mig import model_of, smallest_fit

ANALYZER: Final = "training"
#: The gpu_memory_near_capacity_percent setting: a job whose P95 is at or above this share of
#: its GPUs' memory is at risk of running out.
NEAR_CAPACITY_PERCENT: Final = 85.0
#: The gpu_memory_headroom_percent setting: the margin above a job's peak that a smaller
#: profile must still hold.
HEADROOM_PERCENT: Final = 10.0
GIB: Final = 2**30


class Verdict(StrEnum):
    NEAR_CAPACITY = "near capacity"
    OVERSIZED = "oversized"
    RIGHT_SIZED = "right-sized"


@dataclass(frozen=True)
class GpuMemory:
    """One pod's memory on one GPU device over the window (bytes)."""

    namespace: str
    job: str
    pod: str
    device: str
    hourly_peaks: tuple[float, ...]
    capacity_bytes: float
    #: The instance type of the pod's node, where the node is known.
    instance_type: str | None = None
    #: NVML's name of the device, where the series carries it (OTel mode).
    gpu_name: str | None = None


@dataclass(frozen=True)
class MemoryThresholds:
    near_capacity_percent: float = NEAR_CAPACITY_PERCENT
    headroom_percent: float = HEADROOM_PERCENT


@dataclass(frozen=True)
class JobMemory:
    namespace: str
    job: str
    gpus: int
    gpu_hours: float
    peak_bytes: float
    p95_bytes: float
    capacity_bytes: float
    model: str | None
    verdict: Verdict
    profile: str | None = None
    monthly_saving_usd: float | None = None


def p95(values: Sequence[float]) -> float:
    """The nearest-rank 95th percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def judge(
    gpus: Sequence[GpuMemory],
    *,
    thresholds: MemoryThresholds,
    gpu_hour_usd: float,
    window_hours: float,
) -> JobMemory:
    """One job's GPUs (all of one namespace and job, at least one hourly peak) judged."""
    peaks = [v for g in gpus for v in g.hourly_peaks]
    capacity = min(g.capacity_bytes for g in gpus)
    instance = next((g.instance_type for g in gpus if g.instance_type), None)
    name = next((g.gpu_name for g in gpus if g.gpu_name), None)
    model = model_of(instance, capacity, name)
    peak, high = max(peaks), p95(peaks)
    gpu_hours = float(len(peaks))
    base = JobMemory(
        namespace=gpus[0].namespace,
        job=gpus[0].job,
        gpus=len({(g.pod, g.device) for g in gpus}),
        gpu_hours=gpu_hours,
        peak_bytes=peak,
        p95_bytes=high,
        capacity_bytes=capacity,
        model=model,
        verdict=Verdict.RIGHT_SIZED,
    )
    if high >= thresholds.near_capacity_percent / 100 * capacity:
        return replace(base, verdict=Verdict.NEAR_CAPACITY)
    need = peak * (1 + thresholds.headroom_percent / 100)
    profile = smallest_fit(model, capacity, need) if model else None
    if profile is None:
        return base
    monthly_gpu_hours = gpu_hours / window_hours * HOURS_PER_MONTH
    saving = monthly_gpu_hours * (1 - profile.gpu_share) * gpu_hour_usd
    return replace(base, verdict=Verdict.OVERSIZED, profile=profile.name, monthly_saving_usd=saving)


def judge_jobs(
    gpus: Iterable[GpuMemory],
    *,
    thresholds: MemoryThresholds = MemoryThresholds(),
    gpu_hour_usd: float,
    window_hours: float,
) -> list[JobMemory]:
    """Every job with memory samples in the window, by namespace and job."""
    by_job: dict[tuple[str, str], list[GpuMemory]] = defaultdict(list)
    for gpu in gpus:
        if gpu.hourly_peaks and gpu.capacity_bytes > 0:
            by_job[(gpu.namespace, gpu.job)].append(gpu)
    return [
        judge(g, thresholds=thresholds, gpu_hour_usd=gpu_hour_usd, window_hours=window_hours)
        for _, g in sorted(by_job.items())
    ]


def _gib(value: float) -> float:
    return round(value / GIB, 2)


def _evidence(job: JobMemory, thresholds: MemoryThresholds) -> dict[str, object]:
    return {
        "namespace": job.namespace,
        "gpus": job.gpus,
        "gpu_hours": job.gpu_hours,
        "peak_gib": _gib(job.peak_bytes),
        "p95_gib": _gib(job.p95_bytes),
        "capacity_gib": _gib(job.capacity_bytes),
        "p95_percent_of_capacity": round(100 * job.p95_bytes / job.capacity_bytes, 1),
        "gpu_model": job.model,
        "verdict": str(job.verdict),
        "profile": job.profile,
        "near_capacity_percent": thresholds.near_capacity_percent,
        "headroom_percent": thresholds.headroom_percent,
    }


def memory_findings(
    jobs: Iterable[JobMemory],
    thresholds: MemoryThresholds = MemoryThresholds(),
) -> list[Finding]:
    """A warning per job near capacity, a priced note per job that fits a MIG profile."""
    findings = []
    for job in jobs:
        peak, high, cap = _gib(job.peak_bytes), _gib(job.p95_bytes), _gib(job.capacity_bytes)
        if job.verdict is Verdict.NEAR_CAPACITY:
            findings.append(
                Finding(
                    kind=Kind.TRAINING_GPU_MEMORY_NEAR_CAPACITY,
                    resource=f"job/{job.job}",
                    severity=Severity.WARNING,
                    summary=(
                        f"Job {job.job} uses {high} GiB of its GPUs' {cap} GiB in its P95 hour "
                        f"(peak {peak} GiB): at risk of CUDA out of memory."
                    ),
                    evidence=_evidence(job, thresholds),
                    recommendation=(
                        "Lower the per-GPU batch size or sequence length, enable activation "
                        "checkpointing or sharded optimizer states, or move to a GPU with "
                        "more memory."
                    ),
                    analyzer=ANALYZER,
                )
            )
        elif job.verdict is Verdict.OVERSIZED:
            findings.append(
                Finding(
                    kind=Kind.TRAINING_GPU_MEMORY_OVERSIZED,
                    resource=f"job/{job.job}",
                    severity=Severity.INFO,
                    summary=(
                        f"Job {job.job} peaks at {peak} GiB of its GPUs' {cap} GiB: it fits a "
                        f"MIG {job.profile} of its {job.model}."
                    ),
                    evidence=_evidence(job, thresholds),
                    recommendation=(
                        f"Run it on a MIG {job.profile} instance (nvidia.com/mig-{job.profile} "
                        "with the GPU Operator's mixed strategy), if its compute fits too: "
                        "the rest of the GPU runs other work."
                    ),
                    estimated_monthly_waste_usd=job.monthly_saving_usd,
                    analyzer=ANALYZER,
                )
            )
    return findings
