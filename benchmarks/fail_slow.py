"""The node slowing a job, found in minutes: a 64-GPU job on 8 nodes replayed with planted
faults, through the real training emitter (its ``throughput_ratio``), the fail-slow alarm's
definition (``job-step-time-rise``: cdk/alarms/jobs.py) and the culprit ranking the page uses
(lambdas/shared/fail_slow.py), its GPUs' evidence built from the exporter's series by the same
table both pages read (``fail_slow.GPU_EVIDENCE``, ``gpu_evidence``).

The job is synchronous (every step ends in a collective): a step takes the slowest rank's
compute and data wait, then the collective's time. Each run trains 40 minutes healthy, plants
one fault at a random second, and runs 16 minutes more. The faults:

- ``thermal-gpu``: one GPU's clocks held to 65-85% by NVML's thermal slowdown reason;
- ``power-brake-node``: every GPU of one node halved by the hardware power brake ("reducing
  the core clocks by a factor of 2 or more", NVML's clock event reasons; HW Slowdown is set
  with it, as an external power brake asserts both);
- ``degrading-link``: one GPU's NVLink (or PCIe) link retrying more each minute, the job's
  collectives slowing with it;
- ``rank-data-stall``: one rank waiting 0.25-0.5 s for each batch;
- ``job-data-source``: every rank's data wait up 0.2-0.4 s (no single culprit: the data source);
- ``cpu-starved-node``: one node's CPU at 97%, its ranks' loaders slowed;
- ``healthy``: no fault (a control: any page is a false one).

Around them, the noise a real fleet has: step times jittering 1.5% a minute, clocks a few MHz
apart, a PCIe replay now and then on any GPU, node CPUs between 35% and 55%.

Figures: detection latency after onset (p50, p95: the alarm's state change, the end of its
third breaching minute), and culprit precision (culprits named that were the planted one, of
all named) and recall (faults whose page named the planted culprit, or for the data source said
there is none, of all faults planted). The OTel page reads all of it; the Classic page reads
what Classic publishes (lambdas/notifier/fail_slow_classic.py): no SM clock, each rank's data
wait from its newest document only and the job's before, so its figures are printed beside.
"""

import random
import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Final

from cdk.alarms.jobs import JOB_STEP_TIME_RISE, JobAlarmSettings, job_kind_specs
from cdk.alarms.model import AlarmSpec
from cli.demo.jobs import Clock, Collect
from gpu_insights_agent.contract.metrics import GpuMetric, TrainingMetric
from gpu_insights_agent.emitter.training import TrainingMetrics
from lambdas.shared.fail_slow import (
    THROTTLE_OF,
    GpuEvidence,
    RankEvidence,
    Throttle,
    Verdict,
    gpu_evidence,
    rank_culprits,
    same_place,
)

NODES: Final = 8
GPUS_PER_NODE: Final = 8
CLOCK_MHZ: Final = 1980.0
COMPUTE_S: Final = 0.8
COLLECTIVE_S: Final = 0.4
DATA_WAIT_S: Final = 0.02
SAMPLES_PER_STEP: Final = 32
HEALTHY_MINUTES: Final = 40
AFTER_MINUTES: Final = 16
#: Minutes before the alarm's window the page compares with (the job's own "before").
BEFORE_MINUTES: Final = 10
KINDS: Final = (
    "thermal-gpu",
    "power-brake-node",
    "degrading-link",
    "rank-data-stall",
    "job-data-source",
    "cpu-starved-node",
    "healthy",
)
SEEDS: Final = 20
#: The issue's targets (docs/goodput.md).
TARGET_P95_MINUTES: Final = 5.0
TARGET_SHARE: Final = 0.95


@dataclass
class Fault:
    """What is planted, from ``onset`` (seconds from the run's start), and where."""

    kind: str
    onset: float
    node: str = ""
    gpu: str = ""
    rank: str = ""
    severity: float = 0.0
    link: str = "nvlink"

    def active(self, t: float) -> bool:
        return self.kind != "healthy" and t >= self.onset


@dataclass
class Minute:
    """One minute of the job: each rank's compute and data wait, the collective, and what the
    exporter and Container Insights see of each GPU and node."""

    compute: list[float]
    data_wait: list[float]
    collective: float
    clock: list[float]
    throttle: list[frozenset[Throttle]]
    link_errors: list[tuple[float, float]]  # (PCIe replays, NVLink errors)
    cpu: list[float]
    jitter: float

    @property
    def step_s(self) -> float:
        return (
            max(c + d for c, d in zip(self.compute, self.data_wait, strict=True)) + self.collective
        )


def node_name(n: int) -> str:
    return f"ip-10-0-8-{10 + n}.ec2.internal"


def plant(kind: str, rng: random.Random) -> Fault:
    onset = HEALTHY_MINUTES * 60 + rng.uniform(0, 60)
    n, g = rng.randrange(NODES), rng.randrange(GPUS_PER_NODE)
    rank = n * GPUS_PER_NODE + g
    if kind in ("rank-data-stall",) and rank == 0:  # rank 0 is the emitter's; any other
        rank, g = 1, 1
    return Fault(
        kind=kind,
        onset=onset,
        node=node_name(n),
        gpu=str(g),
        rank=str(rank),
        severity=rng.random(),
        link=rng.choice(("nvlink", "pcie")),
    )


def minute(m: int, fault: Fault, rng: random.Random) -> Minute:
    """The job's minute ``m`` with ``fault`` planted (active from its onset's minute on)."""
    gpus = NODES * GPUS_PER_NODE
    compute = [COMPUTE_S] * gpus
    data_wait = [DATA_WAIT_S + rng.uniform(0, 0.01) for _ in range(gpus)]
    clock = [CLOCK_MHZ - rng.choice((0, 0, 15)) for _ in range(gpus)]
    throttle: list[frozenset[Throttle]] = [frozenset()] * gpus
    errors = [(float(rng.random() < 0.02), 0.0) for _ in range(gpus)]
    cpu = [rng.uniform(35, 55) for _ in range(NODES)]
    collective = COLLECTIVE_S
    t = m * 60.0
    if fault.active(t + 60):  # in effect for at least part of the minute
        since = max(0.0, (t - fault.onset) / 60)
        share = min(1.0, (t + 60 - fault.onset) / 60)  # the part of the minute it is on
        node = [node_name(n) for n in range(NODES)].index(fault.node)
        gpu = node * GPUS_PER_NODE + int(fault.gpu)
        on_node = range(node * GPUS_PER_NODE, (node + 1) * GPUS_PER_NODE)
        if fault.kind == "thermal-gpu":
            factor = 0.65 + 0.2 * fault.severity
            compute[gpu] = COMPUTE_S / (1 - share * (1 - factor))
            clock[gpu] = CLOCK_MHZ * (1 - share * (1 - factor))
            throttle[gpu] = frozenset({Throttle.THERMAL})
        elif fault.kind == "power-brake-node":
            for i in on_node:
                compute[i] = COMPUTE_S / (1 - share * 0.5)
                clock[i] = CLOCK_MHZ * (1 - share * 0.5)
                throttle[i] = frozenset({Throttle.POWER_BRAKE, Throttle.HW_SLOWDOWN})
        elif fault.kind == "degrading-link":
            collective = COLLECTIVE_S * min(2.0, 1 + 0.5 * (since + share))
            count = (40 + 40 * fault.severity) * (1 + since) * share
            errors[gpu] = (count, 0.0) if fault.link == "pcie" else (0.0, count)
        elif fault.kind == "rank-data-stall":
            data_wait[int(fault.rank)] += share * (0.25 + 0.25 * fault.severity)
        elif fault.kind == "job-data-source":
            extra = share * (0.2 + 0.2 * fault.severity)
            data_wait = [d + extra for d in data_wait]
        elif fault.kind == "cpu-starved-node":
            cpu[node] = 97.0
            for i in on_node:
                data_wait[i] += share * (0.2 + 0.15 * fault.severity)
    return Minute(
        compute=compute,
        data_wait=data_wait,
        collective=collective,
        clock=clock,
        throttle=throttle,
        link_errors=errors,
        cpu=cpu,
        jitter=rng.gauss(0, 0.015),
    )


def throughput_ratios(minutes: list[Minute]) -> list[tuple[float, float]]:
    """(window start, ``throughput_ratio``) of the job's rank 0 through the real emitter: in a
    synchronous job every rank steps at the job's pace, so the fastest rank's (the alarm's MAX)
    is any rank's. Rank 0 waits for its own batches, and the rest of the step for the others."""
    clock, sink = Clock(0.0), Collect()
    metrics = TrainingMetrics(
        job_name="llm-64",
        cluster_name="bench",
        sink=sink,
        clock=clock,
        wall_clock=clock,
        heartbeat=False,
        samples_per_step=SAMPLES_PER_STEP,
        queue_capacity=4096,
    )
    end = len(minutes) * 60.0

    def batches() -> Iterator[int]:
        while clock.now < end:
            m = minutes[int(clock.now // 60)]
            clock.now += m.data_wait[0] * (1 + m.jitter)
            yield SAMPLES_PER_STEP

    for _ in metrics.steps(batches()):
        m = minutes[min(int(clock.now // 60), len(minutes) - 1)]
        clock.now += (m.step_s - m.data_wait[0]) * (1 + m.jitter)
    metrics.close(succeeded=True)
    ratio = str(TrainingMetric.THROUGHPUT_RATIO)
    return [(d["_aws"]["Timestamp"] / 1000, float(d[ratio])) for d in sink.documents if ratio in d]


def alarm_at(ratios: list[tuple[float, float]], spec: AlarmSpec) -> float | None:
    """When the alarm goes to ALARM: the end of the window that makes ``datapoints_to_alarm``
    breaching one-minute datapoints in a row (each window's value stamped at its start)."""
    run = 0
    for start, value in ratios:
        run = run + 1 if spec.comparison.breaches(value, spec.threshold) else 0
        if run >= spec.datapoints_to_alarm:
            return start + spec.period_s
    return None


def _series(window: list[Minute], i: int, *, clock: bool = True) -> dict[GpuMetric, float]:
    """GPU ``i``'s exporter series over ``window`` as a page reads them (``GPU_EVIDENCE``):
    each fault reason's flag at its largest, the SM clock's mean, the counters' sums."""
    reasons: frozenset[Throttle] = frozenset().union(*(m.throttle[i] for m in window))
    series = {metric: float(reason in reasons) for metric, reason in THROTTLE_OF.items()}
    series[GpuMetric.PCIE_REPLAYS] = sum(m.link_errors[i][0] for m in window)
    series[GpuMetric.NVLINK_ERRORS] = sum(m.link_errors[i][1] for m in window)
    if clock:
        series[GpuMetric.SM_CLOCK] = statistics.fmean(m.clock[i] for m in window)
    return series


def evidence(
    minutes: list[Minute], alarm_s: float, window_minutes: int, *, classic: bool = False
) -> tuple[list[GpuEvidence], list[RankEvidence], dict[str, float]]:
    """What the notifier reads at the alarm's time: the alarm's window, and the minutes before
    it for the "before" figures (``BEFORE_S`` of fail_slow.py: twice the window's five). The
    Classic page reads no SM clock (a property of the exporter's line there)."""
    last = int(alarm_s // 60)
    now = minutes[max(0, last - window_minutes) : last]
    before = minutes[max(0, last - window_minutes - BEFORE_MINUTES) : last - window_minutes]
    # gpu_evidence scales the minutes before to the evidence's (its BEFORE_S over EVIDENCE_S).
    to_before = 2 * len(now) / max(1, len(before))
    gpus, ranks = [], []
    for i in range(NODES * GPUS_PER_NODE):
        node, gpu = node_name(i // GPUS_PER_NODE), str(i % GPUS_PER_NODE)
        earlier = {m: v * to_before for m, v in _series(before, i, clock=False).items()}
        gpus.append(gpu_evidence(node, gpu, _series(now, i, clock=not classic), earlier))
        ranks.append(
            RankEvidence(
                rank=str(i),
                pod=f"llm-64-worker-{i}",
                node=node,
                gpu=gpu,
                data_wait_share=statistics.fmean(100 * m.data_wait[i] / m.step_s for m in now),
                data_wait_share_before=statistics.fmean(
                    100 * m.data_wait[i] / m.step_s for m in before
                ),
            )
        )
    cpu = {node_name(n): statistics.fmean(m.cpu[n] for m in now) for n in range(NODES)}
    return gpus, ranks, cpu


@dataclass
class Run:
    fault: Fault
    alarm_s: float | None
    verdict: Verdict | None
    #: The Classic page's verdict on the same minutes.
    classic: Verdict | None = None

    @property
    def latency_s(self) -> float | None:
        if self.alarm_s is None or self.alarm_s < self.fault.onset:
            return None
        return self.alarm_s - self.fault.onset

    @property
    def named_right(self) -> bool:
        """The page named the planted culprit (for the data source: no single one)."""
        if self.verdict is None:
            return False
        c, f = self.verdict.culprit, self.fault
        if f.kind == "job-data-source":
            return c is None and "data source" in self.verdict.whole_job
        if f.kind in ("power-brake-node", "cpu-starved-node"):
            return same_place(c, f.node)
        if f.kind == "rank-data-stall":
            return same_place(c, f.node, rank=f.rank)
        return same_place(c, f.node, gpu=f.gpu)


def run(kind: str, seed: int, spec: AlarmSpec) -> Run:
    rng = random.Random(f"{kind}/{seed}")
    fault = plant(kind, rng)
    minutes = [minute(m, fault, rng) for m in range(HEALTHY_MINUTES + AFTER_MINUTES)]
    alarm_s = alarm_at(throughput_ratios(minutes), spec)
    if alarm_s is None:
        return Run(fault, None, None)
    gpus, ranks, cpu = evidence(minutes, alarm_s, spec.evaluation_periods)
    # Classic: no SM clock; each rank's data wait in its newest document (the alarm window's
    # last minute), the job's series (its ranks' mean) before; no GPU on a rank's document.
    classic_gpus, _, _ = evidence(minutes, alarm_s, spec.evaluation_periods, classic=True)
    last = minutes[int(alarm_s // 60) - 1]
    job_before = statistics.fmean(r.data_wait_share_before for r in ranks)
    classic_ranks = [
        replace(
            r,
            gpu="",
            data_wait_share=100 * last.data_wait[int(r.rank)] / last.step_s,
            data_wait_share_before=job_before,
        )
        for r in ranks
    ]
    return Run(
        fault,
        alarm_s,
        rank_culprits(gpus, ranks, cpu),
        rank_culprits(classic_gpus, classic_ranks, cpu),
    )


@dataclass
class Figures:
    runs: list[Run] = field(default_factory=list)

    @property
    def classic(self) -> "Figures":
        """The same runs as the Classic page judges them."""
        return Figures([replace(r, verdict=r.classic) for r in self.runs])

    @property
    def faulted(self) -> list[Run]:
        return [r for r in self.runs if r.fault.kind != "healthy"]

    @property
    def latencies_min(self) -> list[float]:
        return sorted(r.latency_s / 60 for r in self.faulted if r.latency_s is not None)

    def percentile(self, q: float) -> float:
        values = self.latencies_min
        if not values:
            return float("nan")
        return values[min(len(values) - 1, max(0, round(q * len(values) + 0.5) - 1))]

    @property
    def named(self) -> list[Run]:
        """Pages that named a culprit (false pages on the controls included)."""
        return [r for r in self.runs if r.verdict is not None and r.verdict.culprit is not None]

    @property
    def precision(self) -> float:
        named = self.named
        return sum(r.named_right for r in named) / len(named) if named else float("nan")

    @property
    def recall(self) -> float:
        faulted = self.faulted
        return sum(r.named_right for r in faulted) / len(faulted) if faulted else float("nan")

    @property
    def false_pages(self) -> int:
        return sum(
            1
            for r in self.runs
            if r.alarm_s is not None and (r.fault.kind == "healthy" or r.latency_s is None)
        )

    def by_kind(self, kind: str) -> tuple[int, int]:
        runs = [r for r in self.runs if r.fault.kind == kind]
        if kind == "healthy":
            return sum(r.alarm_s is None for r in runs), len(runs)
        return sum(r.named_right for r in runs), len(runs)


def replay(seeds: int = SEEDS) -> Figures:
    spec = next(
        s for s in job_kind_specs("bench", JobAlarmSettings(), "0") if s.key == JOB_STEP_TIME_RISE
    )
    figures = Figures()
    for kind in KINDS:
        for seed in range(seeds):
            figures.runs.append(run(kind, seed, spec))
    return figures


def main(seeds: int = SEEDS) -> Figures:
    figures = replay(seeds)
    print(
        f"fail-slow: a {NODES * GPUS_PER_NODE}-GPU job on {NODES} nodes, {len(KINDS) - 1} faults "
        f"and a healthy control, {seeds} runs each"
    )
    print(
        f"  detection after onset   p50 {figures.percentile(0.5):.1f} min, "
        f"p95 {figures.percentile(0.95):.1f} min (target {TARGET_P95_MINUTES:g})"
    )
    print(
        f"  culprit precision {figures.precision:.1%}, recall {figures.recall:.1%} "
        f"(target {TARGET_SHARE:.0%}); false pages {figures.false_pages}"
    )
    classic = figures.classic
    print(
        f"  Classic page (no SM clock; each rank's last window): "
        f"precision {classic.precision:.1%}, recall {classic.recall:.1%}"
    )
    for kind in KINDS:
        right, total = figures.by_kind(kind)
        what = "no page" if kind == "healthy" else "culprit right"
        line = f"  {kind:<18} {what} {right} of {total}"
        if kind != "healthy":
            line += f" (Classic {classic.by_kind(kind)[0]})"
        print(line)
    return figures


if __name__ == "__main__":
    main()
