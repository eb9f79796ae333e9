"""Training findings for one job, from its hourly metrics, its ranks and its GPUs: pure.

Every rule copes with what real jobs produce: no data, a single step, restarts, clock gaps,
metrics from only some ranks. It gives a correct answer or no finding, never an exception.
"""

import statistics
from dataclasses import dataclass, field
from datetime import UTC, datetime

from lambdas.shared.findings import Finding, Kind, Severity
from lambdas.training_analyzer.gpu_prices import PRICES_AS_OF

ANALYZER = "training"
HOUR = 3600.0


@dataclass
class JobSeries:
    """Hourly values of one job (keys: hour start, epoch seconds); absent hours had no data."""

    job: str
    steps: dict[float, float] = field(default_factory=dict)
    step_time: dict[float, float] = field(default_factory=dict)
    data_wait: dict[float, float] = field(default_factory=dict)
    samples_per_second: dict[float, float] = field(default_factory=dict)
    checkpoint_save: dict[float, float] = field(default_factory=dict)
    checkpoint_saves: dict[float, float] = field(default_factory=dict)
    failures: dict[float, float] = field(default_factory=dict)
    successes: dict[float, float] = field(default_factory=dict)
    # Goodput (lambdas/training_analyzer/goodput): each hour's seconds, summed over the
    # ranks, by what they did (the emitter's ``TIME_METRICS``); the highest step number and
    # each attempt's first (its lowest, and how many ranks' attempts began that hour).
    startup_time: dict[float, float] = field(default_factory=dict)
    compute_time: dict[float, float] = field(default_factory=dict)
    data_wait_time: dict[float, float] = field(default_factory=dict)
    checkpoint_save_time: dict[float, float] = field(default_factory=dict)
    evaluation_time: dict[float, float] = field(default_factory=dict)
    stalled_time: dict[float, float] = field(default_factory=dict)
    idle_time: dict[float, float] = field(default_factory=dict)
    step_number: dict[float, float] = field(default_factory=dict)
    resumed_from: dict[float, float] = field(default_factory=dict)
    resumes: dict[float, float] = field(default_factory=dict)
    #: The same series of each attempt, by its ``attempt`` label, where the emitter's series
    #: carry one (OTel mode: promql_jobs.job_series); empty where they do not (Classic, older
    #: emitters), and goodput then tells attempts apart by the hour each began.
    attempts: dict[str, "JobSeries"] = field(default_factory=dict)


@dataclass(frozen=True)
class RankStats:
    rank: str
    steps: float
    mean_step_time: float
    node: str | None = None
    #: The rank's pod (the emitter's PodName), for the GPU analyzer's exact attribution.
    pod: str | None = None
    #: Seconds of its steps' own work (the emitter's ``compute_seconds``), where read: a rank
    #: that waited in collectives for a slower one shows more work per step (goodput).
    compute_seconds: float | None = None


@dataclass(frozen=True)
class GpuUsage:
    """The job's nodes' GPUs over the job's active hours (percent)."""

    power_utilization: float | None
    sm_active: float | None


@dataclass(frozen=True)
class TrainingThresholds:
    #: Waiting for data above this share of step time (the EKS best-practices guide's 20%).
    data_bound_share: float = 0.20
    #: GPUs under this share of their power limit, or under this SM activity (DCGM's rule
    #: of thumb of 0.8), are not doing the work the job pays for.
    target_power_percent: float = 60.0
    target_sm_active_percent: float = 80.0
    #: A checkpoint save slower than this, or taking this share of the interval between saves.
    checkpoint_seconds: float = 300.0
    checkpoint_share: float = 0.10
    #: Throughput down by more than this against the job's own baseline.
    regression_share: float = 0.15
    #: A rank this much slower than the median of its peers, with this many peers.
    straggler_ratio: float = 1.2
    min_ranks: int = 3
    min_steps: float = 10.0
    min_hours: int = 5


@dataclass(frozen=True)
class JobData:
    series: JobSeries
    ranks: list[RankStats] = field(default_factory=list)
    gpu: GpuUsage | None = None
    #: Samples per second of earlier runs of the same JobName, where known.
    baseline_samples_per_second: float | None = None
    gpu_hour_usd: float = 6.88
    #: Storage findings ("kind resource") about the data sources the settings name for it.
    related_storage: tuple[str, ...] = ()
    #: Hours the analysis covered, to turn waste seen into waste per month.
    lookback_hours: float = 14 * 24
    #: When that window ended (epoch seconds), for the sentences that price it; None: unsaid.
    window_end: float | None = None
    #: Hours the job ran as its goodput measures them (its ranks' seconds over its ranks),
    #: where the emitter splits its time: over its failures, the goodput tables' time between
    #: failures (goodput/jobs.py ``mtbf_hours``).
    running_hours: float | None = None


@dataclass(frozen=True)
class JobCost:
    active_hours: int
    gpus: int
    gpu_hours: float
    dollars: float


def active_hours(series: JobSeries) -> list[float]:
    return sorted(hour for hour, steps in series.steps.items() if steps > 0)


def job_cost(data: JobData) -> JobCost:
    hours = len(active_hours(data.series))
    gpus = max(1, len({r.rank for r in data.ranks}))
    gpu_hours = hours * gpus
    return JobCost(hours, gpus, gpu_hours, gpu_hours * data.gpu_hour_usd)


def _weighted(values: dict[float, float], weights: dict[float, float]) -> float | None:
    total = sum(weights.get(hour, 0.0) for hour in values)
    if total <= 0:
        return None
    return sum(v * weights.get(hour, 0.0) for hour, v in values.items()) / total


def _finding(
    data: JobData,
    kind: Kind,
    severity: Severity,
    summary: str,
    evidence: dict[str, object],
    recommendation: str,
    waste: float | None = None,
    related: tuple[str, ...] = (),
) -> Finding:
    cost = job_cost(data)
    evidence = {
        "active_hours": cost.active_hours,
        "gpus": cost.gpus,
        "gpu_hours": cost.gpu_hours,
        **evidence,
    }
    monthly = None
    if waste is not None:
        evidence["gpu_hour_usd"] = data.gpu_hour_usd
        evidence["prices"] = PRICES_AS_OF
        evidence["waste_in_lookback_usd"] = round(waste, 2)
        # What the same pattern costs over a month (730 hours) of the lookback's pace.
        monthly = waste * 730 / data.lookback_hours
    return Finding(
        kind=kind,
        resource=f"job/{data.series.job}",
        severity=severity,
        summary=summary,
        evidence=evidence,
        recommendation=recommendation,
        estimated_monthly_waste_usd=monthly,
        analyzer=ANALYZER,
        related=related,
    )


def lookback_words(hours: float) -> str:
    """The window a finding's dollars cover, as a person says it ("2-day", "36-hour")."""
    days = hours / 24
    return f"{days:,.0f}-day" if days == int(days) else f"{hours:,.0f}-hour"


def _utc(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M")


def lookback_phrase(data: JobData) -> str:
    """ "its 1-day lookback (2026-11-29 00:00 to 2026-11-30 00:00 UTC)": the window named by
    its hours (the handler's: the lookback's whole UTC days before the run's,
    handler.training_window), so a reader can tell which days a figure covers."""
    words = f"its {lookback_words(data.lookback_hours)} lookback"
    if data.window_end is None:
        return words
    start = data.window_end - data.lookback_hours * 3600
    return f"{words} ({_utc(start)} to {_utc(data.window_end)} UTC)"


def stepped_words(cost: JobCost) -> str:
    """ "the 34 GPU-hours it stepped (2 GPUs x 17 hours)": GPU-hours that are stepping hours
    times ranks, said so, as they are not the hours the job held its GPUs."""
    gpus = f"{cost.gpus} GPU{'s' if cost.gpus != 1 else ''}"
    hours = f"{cost.active_hours} hour{'s' if cost.active_hours != 1 else ''}"
    return f"the {cost.gpu_hours:,.0f} GPU-hours it stepped ({gpus} x {hours})"


def analyze_job(data: JobData, t: TrainingThresholds = TrainingThresholds()) -> list[Finding]:
    findings: list[Finding] = []
    for rule in (_data_bound, _underutilized, _slow_checkpoint, _regression, _failures, _straggler):
        findings += rule(data, t)
    return findings


def _data_bound(data: JobData, t: TrainingThresholds) -> list[Finding]:
    s = data.series
    step = _weighted(s.step_time, s.steps)
    wait = _weighted(s.data_wait, s.steps)
    if not step or wait is None or step <= 0:
        return []
    share = min(1.0, wait / step)
    if share <= t.data_bound_share:
        return []
    cost = job_cost(data)
    return [
        _finding(
            data,
            Kind.TRAINING_DATA_BOUND,
            Severity.CRITICAL if share > 0.5 else Severity.WARNING,
            f"{s.job} waits for data {share:.0%} of each step ({wait:.3f} s of {step:.3f} s): "
            f"${cost.dollars * share:,.0f} of {stepped_words(cost)} in {lookback_phrase(data)} "
            "went to waiting.",
            {
                "data_wait_share": round(share, 3),
                "mean_step_seconds": round(step, 4),
                "mean_data_wait_seconds": round(wait, 4),
                "threshold": t.data_bound_share,
            },
            "Add DataLoader workers and prefetching, move decoding off the step, stage the "
            "dataset closer (instance NVMe, FSx for Lustre, Mountpoint cache), and check the "
            "storage findings for the sources it reads.",
            cost.dollars * share,
            data.related_storage,
        )
    ]


def _underutilized(data: JobData, t: TrainingThresholds) -> list[Finding]:
    """GPUs under their targets for reasons the other rules do not name: a data-bound job's
    GPUs idle because they wait for data, and its finding already prices that time and says
    what to do, so it is not priced twice."""
    gpu = data.gpu
    if gpu is None or (gpu.power_utilization is None and gpu.sm_active is None):
        return []
    if _data_bound(data, t):
        return []
    low_power = gpu.power_utilization is not None and gpu.power_utilization < t.target_power_percent
    low_sm = gpu.sm_active is not None and gpu.sm_active < t.target_sm_active_percent
    if not (low_power or low_sm):
        return []
    busy = gpu.sm_active if gpu.sm_active is not None else gpu.power_utilization
    idle_share = max(0.0, 1 - (busy or 0.0) / 100)
    cost = job_cost(data)
    return [
        _finding(
            data,
            Kind.TRAINING_GPU_UNDERUTILIZED,
            Severity.WARNING,
            f"{data.series.job}'s GPUs ran at "
            + (
                f"{gpu.power_utilization:.0f}% of their power limit"
                if gpu.power_utilization is not None
                else ""
            )
            + (" and " if gpu.power_utilization is not None and gpu.sm_active is not None else "")
            + (f"{gpu.sm_active:.0f}% SM activity" if gpu.sm_active is not None else "")
            + f": about ${cost.dollars * idle_share:,.0f} of {stepped_words(cost)} idle in "
            f"{lookback_phrase(data)}.",
            {
                "power_utilization_percent": gpu.power_utilization,
                "sm_active_percent": gpu.sm_active,
                "target_power_percent": t.target_power_percent,
                "target_sm_active_percent": t.target_sm_active_percent,
            },
            "Raise the batch size or use fewer GPUs, check for host-side bottlenecks "
            "(data loading, CPU preprocessing, synchronous logging), and profile the step.",
            cost.dollars * idle_share,
        )
    ]


def _slow_checkpoint(data: JobData, t: TrainingThresholds) -> list[Finding]:
    s = data.series
    if not s.checkpoint_save:
        return []
    # Every rank reports its saves: count the job's, not each rank's.
    ranks = max(1, len({r.rank for r in data.ranks}))
    saves = (sum(s.checkpoint_saves.values()) / ranks) or float(len(s.checkpoint_save))
    mean_save = statistics.fmean(s.checkpoint_save.values())
    hours = job_cost(data).active_hours
    interval = hours * HOUR / saves if saves and hours else None
    share = mean_save / interval if interval else 0.0
    if mean_save <= t.checkpoint_seconds and share <= t.checkpoint_share:
        return []
    cost = job_cost(data)
    lost = min(1.0, share) if share else 0.0
    return [
        _finding(
            data,
            Kind.TRAINING_SLOW_CHECKPOINT,
            Severity.WARNING,
            f"{s.job} takes {mean_save:,.0f} s to save a checkpoint"
            + (
                f", {share:.0%} of the {interval / 60:,.0f} minutes between saves"
                if interval
                else ""
            )
            + ": the GPUs stall meanwhile.",
            {
                "mean_checkpoint_save_seconds": round(mean_save, 1),
                "saves": saves,
                "interval_seconds": round(interval, 1) if interval else None,
                "share_of_interval": round(share, 3),
                "threshold_seconds": t.checkpoint_seconds,
                "threshold_share": t.checkpoint_share,
            },
            "Save asynchronously (torch.distributed.checkpoint async save), write sharded "
            "checkpoints from every rank in parallel, and write to fast local storage first.",
            cost.dollars * lost if lost else None,
        )
    ]


def _regression(data: JobData, t: TrainingThresholds) -> list[Finding]:
    s = data.series
    hours = [h for h in active_hours(s) if h in s.samples_per_second]
    if len(hours) < t.min_hours and data.baseline_samples_per_second is None:
        return []
    values = [s.samples_per_second[h] for h in hours]
    if not values:
        return []
    window = max(1, len(values) // 5)
    if data.baseline_samples_per_second is not None:
        baseline, source = data.baseline_samples_per_second, "earlier runs of the job"
    else:
        baseline, source = statistics.median(values[:window]), "its own first hours"
    recent = statistics.median(values[-window:])
    if baseline <= 0 or recent >= baseline * (1 - t.regression_share):
        return []
    drop = 1 - recent / baseline
    return [
        _finding(
            data,
            Kind.TRAINING_THROUGHPUT_REGRESSION,
            Severity.CRITICAL if drop > 0.5 else Severity.WARNING,
            f"{s.job} now trains {recent:,.0f} samples/s, {drop:.0%} below {source} "
            f"({baseline:,.0f} samples/s).",
            {
                "baseline_samples_per_second": round(baseline, 2),
                "recent_samples_per_second": round(recent, 2),
                "drop": round(drop, 3),
                "baseline": source,
                "threshold": t.regression_share,
            },
            "Compare with the last good run: code, data pipeline, node type, and the "
            "storage and GPU findings for the same hours (throttling, a lost GPU).",
        )
    ]


def _failures(data: JobData, t: TrainingThresholds) -> list[Finding]:
    del t
    failures = sum(data.series.failures.values())
    if failures < 1:
        return []
    hours = job_cost(data).active_hours
    ran = data.running_hours or hours
    mtbf = ran / failures if ran else None
    unit = "hours it ran" if data.running_hours else "active hours"
    return [
        _finding(
            data,
            Kind.TRAINING_JOB_FAILURES,
            Severity.CRITICAL if failures >= 3 else Severity.WARNING,
            f"{data.series.job} failed {failures:.0f} time(s)"
            + (f", one failure every {mtbf:,.1f} {unit}" if mtbf else "")
            + ".",
            {
                "failures": failures,
                "successes": sum(data.series.successes.values()),
                "mean_hours_between_failures": round(mtbf, 2) if mtbf else None,
            },
            "Read the failed pods' logs and the XID findings for their nodes; checkpoint "
            "often enough that a restart loses little.",
        )
    ]


def _straggler(data: JobData, t: TrainingThresholds) -> list[Finding]:
    ranks = [r for r in data.ranks if r.steps >= t.min_steps and r.mean_step_time > 0]
    if len(ranks) < t.min_ranks:
        return []
    slowest = max(ranks, key=lambda r: r.mean_step_time)
    peers = statistics.median(r.mean_step_time for r in ranks if r is not slowest)
    if peers <= 0 or slowest.mean_step_time < peers * t.straggler_ratio:
        return []
    ratio = slowest.mean_step_time / peers
    where = f" on {slowest.node}" if slowest.node else ""
    return [
        _finding(
            data,
            Kind.TRAINING_STRAGGLER,
            Severity.WARNING,
            f"Rank {slowest.rank} of {data.series.job}{where} steps in "
            f"{slowest.mean_step_time:.3f} s, "
            f"{ratio:.2f}x its peers' median: every rank waits for it at each synchronisation.",
            {
                "rank": slowest.rank,
                "node": slowest.node,
                "rank_step_seconds": round(slowest.mean_step_time, 4),
                "peer_median_step_seconds": round(peers, 4),
                "ratio": round(ratio, 3),
                "ranks": len(ranks),
            },
            "Check that node's GPU findings (throttling, XIDs), its network, and whether its "
            "data shard is larger; cordon it if it stays slow.",
        )
    ]
