"""The node slowing a job: from what its GPUs, ranks and nodes said around a fail-slow alarm,
the most likely culprit (rank, pod, node, GPU) and the evidence, or why there is none.

A synchronous job (data parallel, tensor parallel: every step ends in a collective) runs at
the pace of its slowest rank, so when its step time rises every rank's does, and a rank's own
step time cannot name the slow one: the fast ranks wait in the collective. What can is what
differs between the job's GPUs, ranks and nodes in the same minutes:

- a GPU whose clocks are held down for a hardware reason: NVML's clock event (throttle)
  reasons ``nvmlClocksThrottleReasonHwThermalSlowdown`` / ``SwThermalSlowdown`` (heat),
  ``HwPowerBrakeSlowdown`` ("HW Power Brake Slowdown (reducing the core clocks by a factor of 2
  or more) is engaged") and ``HwSlowdown`` (heat, an external power brake or fast-trigger
  protection), https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html;
  the exporter sends the first two as ``gpu_throttled_thermal`` and ``gpu_throttled_power``;
- a GPU whose SM clock is below its peers': the relative score of nvidia-resiliency-ext's
  straggler detection, own performance over the best rank's ("If the relative performance
  score is 0.5, it means that a rank is twice as slow as the fastest rank",
  https://nvidia.github.io/nvidia-resiliency-ext/straggler_det/usage_guide.html), here the
  GPU's clock over the job's fastest GPU's. Its ``Report.identify_stragglers`` flags a rank
  under 0.75 of the fastest section time (nvidia_resiliency_ext/straggler/reporting.py); a
  clock score is taken at ``SLOW_CLOCK_SCORE`` = 0.9, since a GPU at 90% of its peers' clock
  alone slows a synchronous step by the alarm's 10%;
- a GPU whose error counters rise: ECC, PCIe replays (``nvmlDeviceGetPcieReplayCounter``), NVLink
  errors (``nvmlDeviceGetNvLinkErrorCounter``): a link that retries slows every collective;
- one rank waiting for its data while the others do not (its loader, its node's storage);
- a node's CPU saturated (Container Insights' ``node_cpu_utilization``) while the job's other
  nodes are not: data loader workers starved.

What is on half or more of a node's GPUs (or ranks) is the node's, not one GPU's: a power brake
asserted by the node's power supply brakes all eight. When every rank's data wait rose, the
job's data source slowed, and no node is to blame. The culprit is the candidate with the most
evidence when no other has as much; else the page says there is no single culprit.
"""

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from statistics import median
from typing import Final

from gpu_insights_agent.contract.metrics import GpuMetric

#: The alarm kinds whose pages this reads for (cdk/alarms/jobs.py deploys them; the notifier
#: reads their evidence): the fail-slow, and the job's goodput over the hour.
FAIL_SLOW_KIND: Final = "job-step-time-rise"
GOODPUT_LOW_KIND: Final = "job-goodput-low"


class Throttle(StrEnum):
    """The NVML clock event reasons that are a fault, not a busy GPU's power cap."""

    THERMAL = "thermal slowdown"
    POWER_BRAKE = "hardware power brake"
    HW_SLOWDOWN = "hardware slowdown"


#: A GPU's SM clock under this share of the job's fastest GPU's is slow (see the docstring).
SLOW_CLOCK_SCORE: Final = 0.9
#: A rank's data wait this many points of its step time above the job's median is its own.
DATA_WAIT_EXCESS_POINTS: Final = 10.0
#: The job's median data wait this many points above its baseline: the whole job waits.
JOB_DATA_WAIT_RISE_POINTS: Final = 10.0
#: A node's CPU at or above this percent, while the job's median node is this far below it.
CPU_SATURATED_PERCENT: Final = 90.0
CPU_PEER_GAP_POINTS: Final = 20.0
#: The least count in the window that is a rising counter: one uncorrectable ECC error is a
#: fault; a link retries now and then on a healthy GPU, so a replay or two is not.
MIN_RISING: Final = {"ECC errors": 1.0, "PCIe replays": 5.0, "NVLink errors": 5.0}
#: How much each kind of evidence weighs: a hardware reason NVML gives outweighs a symptom.
WEIGHTS: Final = {
    "throttle": 3.0,
    "clock": 2.0,
    "errors": 2.0,
    "data_wait": 3.0,
    "cpu": 2.0,
}
#: Least weight that names a culprit: one symptom alone (a slow clock, rising errors) does.
MIN_CULPRIT_WEIGHT: Final = 2.0

#: The minutes a page reads: the alarm's window (3 minutes by default) and the onset before
#: it; and the minutes before those, the job's own "before". Both modes' readers use them.
EVIDENCE_S: Final = 300
BEFORE_S: Final = 600


class Reduce(StrEnum):
    """How a GPU's samples over the evidence minutes make one figure (PromQL's
    ``<reduce>_over_time``; CloudWatch's statistic ``STATISTIC``)."""

    MAX = "max"
    AVG = "avg"
    SUM = "sum"

    @property
    def statistic(self) -> str:
        return {"max": "Maximum", "avg": "Average", "sum": "Sum"}[self.value]


#: The exporter's flags of a clock event reason NVML gives for a fault
#: (agent/gpu_insights_agent/exporter/gpu_sampler.py sets them from
#: ``nvmlDeviceGetCurrentClocksEventReasons``): any sample flagged in the minutes counts.
THROTTLE_OF: Final = {
    GpuMetric.THROTTLED_THERMAL: Throttle.THERMAL,
    GpuMetric.THROTTLED_POWER: Throttle.POWER_BRAKE,
    GpuMetric.THROTTLED_HW_SLOWDOWN: Throttle.HW_SLOWDOWN,
}
#: The exporter's error counters (new counts each cycle), summed over the minutes, now and
#: before, with their words on the page (``MIN_RISING``'s keys).
ERRORS_OF: Final = {
    GpuMetric.ECC_UNCORRECTED: "ECC errors",
    GpuMetric.PCIE_REPLAYS: "PCIe replays",
    GpuMetric.NVLINK_ERRORS: "NVLink errors",
}
#: Every exporter series a page reads of each of the job's GPUs, and how it is reduced: one
#: table for both modes' readers (lambdas/notifier/fail_slow_page.py with PromQL, and
#: lambdas/notifier/fail_slow_classic.py with GetMetricData).
GPU_EVIDENCE: Final = {
    **dict.fromkeys(THROTTLE_OF, Reduce.MAX),
    GpuMetric.SM_CLOCK: Reduce.AVG,
    **dict.fromkeys(ERRORS_OF, Reduce.SUM),
}


@dataclass(frozen=True)
class GpuEvidence:
    """One of the job's GPUs over the minutes since the slowdown began."""

    node: str
    gpu: str
    #: The fault reasons NVML gave in those minutes.
    throttle: frozenset[Throttle] = frozenset()
    #: Mean SM clock, MHz; None where the exporter does not send it.
    sm_clock_mhz: float | None = None
    #: Errors counted in those minutes, and in as many minutes before them.
    ecc_errors: float = 0.0
    ecc_errors_before: float = 0.0
    pcie_replays: float = 0.0
    pcie_replays_before: float = 0.0
    nvlink_errors: float = 0.0
    nvlink_errors_before: float = 0.0


def gpu_evidence(
    node: str, gpu: str, now: Mapping[GpuMetric, float], before: Mapping[GpuMetric, float]
) -> GpuEvidence:
    """One GPU's evidence from what a reader got of ``GPU_EVIDENCE`` over the evidence minutes
    (``now``) and the minutes before them (``before``: each counter's sum over ``BEFORE_S``);
    a series not read (not published: a fault gauge's zero hours, a GPU without NVLink) is no
    evidence, never a 0 taken as a reading for the clock."""
    scale = EVIDENCE_S / BEFORE_S
    clock = now.get(GpuMetric.SM_CLOCK)
    return GpuEvidence(
        node=node,
        gpu=gpu,
        throttle=frozenset(t for m, t in THROTTLE_OF.items() if now.get(m, 0.0) > 0),
        sm_clock_mhz=clock if clock else None,
        ecc_errors=now.get(GpuMetric.ECC_UNCORRECTED, 0.0),
        ecc_errors_before=before.get(GpuMetric.ECC_UNCORRECTED, 0.0) * scale,
        pcie_replays=now.get(GpuMetric.PCIE_REPLAYS, 0.0),
        pcie_replays_before=before.get(GpuMetric.PCIE_REPLAYS, 0.0) * scale,
        nvlink_errors=now.get(GpuMetric.NVLINK_ERRORS, 0.0),
        nvlink_errors_before=before.get(GpuMetric.NVLINK_ERRORS, 0.0) * scale,
    )


@dataclass(frozen=True)
class RankEvidence:
    """One rank: where it runs and its data wait, percent of its step time, now and before."""

    rank: str
    pod: str
    node: str
    gpu: str
    data_wait_share: float
    data_wait_share_before: float


@dataclass(frozen=True)
class Culprit:
    """The most likely culprit: a GPU (``gpu`` set), a node (``gpu`` empty) or one rank."""

    node: str
    gpu: str = ""
    rank: str = ""
    pod: str = ""
    evidence: tuple[str, ...] = ()
    weight: float = 0.0


@dataclass(frozen=True)
class Verdict:
    """The culprit, or None with why there is no single one."""

    culprit: Culprit | None
    #: Without a culprit: what slowed the whole job, as far as the series say.
    whole_job: str = ""
    #: The runners-up, best first, for the page's "also" line.
    others: tuple[Culprit, ...] = field(default=())

    def lines(self) -> list[str]:
        """The page's lines: the culprit and its evidence, or the whole job's reason."""
        c = self.culprit
        if c is None:
            return [f"No single culprit: {self.whole_job}"]
        where = [f"node {c.node}"]
        if c.gpu:
            where.append(f"GPU {c.gpu}")
        if c.rank:
            where.insert(0, f"rank {c.rank}")
        if c.pod:
            where.insert(1 if c.rank else 0, f"pod {c.pod}")
        return [f"Most likely culprit: {', '.join(where)}", *(f"- {e}" for e in c.evidence)]


@dataclass
class _Candidate:
    node: str
    gpu: str = ""
    rank: str = ""
    pod: str = ""
    evidence: dict[str, str] = field(default_factory=dict)

    @property
    def weight(self) -> float:
        return sum(WEIGHTS[kind] for kind in self.evidence)

    @property
    def data_wait_only(self) -> bool:
        return set(self.evidence) == {"data_wait"}

    def culprit(self) -> Culprit:
        return Culprit(
            node=self.node,
            gpu=self.gpu,
            rank=self.rank,
            pod=self.pod,
            evidence=tuple(self.evidence.values()),
            weight=self.weight,
        )


def clock_scores(gpus: Sequence[GpuEvidence]) -> dict[tuple[str, str], float]:
    """Each GPU's SM clock over the job's fastest GPU's (1 is the fastest), for the GPUs whose
    clock is known: nvidia-resiliency-ext's relative score, read from clocks."""
    clocks = {(g.node, g.gpu): g.sm_clock_mhz for g in gpus if g.sm_clock_mhz}
    if not clocks:
        return {}
    fastest = max(v for v in clocks.values() if v is not None)
    return {key: (value or 0.0) / fastest for key, value in clocks.items()}


def _rising(what: str, now: float, before: float) -> bool:
    return now >= MIN_RISING[what] and now > before


def _gpu_evidence(gpus: Sequence[GpuEvidence]) -> dict[tuple[str, str], dict[str, str]]:
    """What each GPU shows, by kind (``WEIGHTS``)."""
    scores = clock_scores(gpus)
    fastest = max((g.sm_clock_mhz or 0.0 for g in gpus), default=0.0)
    found: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for g in gpus:
        key = (g.node, g.gpu)
        if g.throttle:
            reasons = ", ".join(sorted(str(t) for t in g.throttle))
            found[key]["throttle"] = f"NVML clock event reason: {reasons}"
        score = scores.get(key)
        if score is not None and score < SLOW_CLOCK_SCORE:
            found[key]["clock"] = (
                f"SM clock {g.sm_clock_mhz:.0f} MHz, {score:.2f} of the job's fastest GPU "
                f"({fastest:.0f} MHz)"
            )
        errors = [
            f"{what} {now:g} (before {before:g})"
            for what, now, before in (
                ("ECC errors", g.ecc_errors, g.ecc_errors_before),
                ("PCIe replays", g.pcie_replays, g.pcie_replays_before),
                ("NVLink errors", g.nvlink_errors, g.nvlink_errors_before),
            )
            if _rising(what, now, before)
        ]
        if errors:
            found[key]["errors"] = "rising: " + ", ".join(errors)
    return found


def _data_wait_ranks(
    ranks: Sequence[RankEvidence], job: tuple[float, float] | None = None
) -> tuple[float, float, list[RankEvidence]]:
    """The job's median data wait now and before, and the ranks waiting far more than it;
    without ranks, the job's own data wait (``job``: now, before) where it was read."""
    if not ranks:
        return (*(job or (0.0, 0.0)), [])
    now = median(r.data_wait_share for r in ranks)
    before = median(r.data_wait_share_before for r in ranks)
    waiting = [r for r in ranks if r.data_wait_share - now >= DATA_WAIT_EXCESS_POINTS]
    return now, before, waiting


def _saturated_nodes(cpu_percent: dict[str, float]) -> dict[str, str]:
    """Nodes whose CPU is saturated while the job's median node is well below it."""
    if not cpu_percent:
        return {}
    typical = median(cpu_percent.values())
    return {
        node: f"node CPU {value:.0f}% (the job's median node {typical:.0f}%)"
        for node, value in cpu_percent.items()
        if value >= CPU_SATURATED_PERCENT and value - typical >= CPU_PEER_GAP_POINTS
    }


class _Candidates:
    """Every GPU, rank and node that shows evidence, each with what it shows."""

    def __init__(self, gpus: Sequence[GpuEvidence], ranks: Sequence[RankEvidence]) -> None:
        self.found: dict[tuple[str, str, str], _Candidate] = {}
        self.rank_of_gpu = {(r.node, r.gpu): r for r in ranks}
        self.gpus_of_node: dict[str, int] = defaultdict(int)
        for g in gpus:
            self.gpus_of_node[g.node] += 1
        self.ranks_of_node: dict[str, int] = defaultdict(int)
        for r in ranks:
            self.ranks_of_node[r.node] += 1

    def add(
        self, kind: str, words: str, node: str, gpu: str = "", rank: RankEvidence | None = None
    ) -> None:
        """``rank``: the rank the evidence is its own (its series may name no GPU, as the
        emitter's OTLP and EMF ones do not); else the rank on the GPU, where one is named."""
        if rank is None and gpu:
            rank = self.rank_of_gpu.get((node, gpu))
        key = (node, gpu, rank.rank if rank else "")
        if key not in self.found:
            self.found[key] = _Candidate(
                node=node, gpu=gpu, rank=rank.rank if rank else "", pod=rank.pod if rank else ""
            )
        self.found[key].evidence[kind] = words

    def node_wide(self, node: str, sharing: int, of_node: dict[str, int]) -> bool:
        """Half or more of the node's GPUs (or ranks) share it: the node's, not one's."""
        return of_node[node] > 1 and 2 * sharing >= of_node[node]

    def ranked(self) -> list[_Candidate]:
        return sorted(self.found.values(), key=lambda c: (-c.weight, c.node, c.gpu, c.rank))


def _add_gpus(candidates: _Candidates, gpus: Sequence[GpuEvidence]) -> None:
    per_gpu = _gpu_evidence(gpus)
    by_node_kind: dict[tuple[str, str], list[str]] = defaultdict(list)
    for (node, gpu), kinds in per_gpu.items():
        for kind in kinds:
            by_node_kind[(node, kind)].append(gpu)
    for (node, gpu), kinds in per_gpu.items():
        for kind, words in kinds.items():
            sharing = len(by_node_kind[(node, kind)])
            if candidates.node_wide(node, sharing, candidates.gpus_of_node):
                of = candidates.gpus_of_node[node]
                candidates.add(kind, f"{sharing} of the node's {of} GPUs: {words}", node)
            else:
                candidates.add(kind, words, node, gpu)


def _add_ranks(candidates: _Candidates, waiting: Sequence[RankEvidence], job_wait: float) -> None:
    waiting_by_node: dict[str, list[RankEvidence]] = defaultdict(list)
    for r in waiting:
        waiting_by_node[r.node].append(r)
    for node, node_ranks in waiting_by_node.items():
        if candidates.node_wide(node, len(node_ranks), candidates.ranks_of_node):
            worst = max(node_ranks, key=lambda r: r.data_wait_share)
            candidates.add(
                "data_wait",
                f"{len(node_ranks)} of the node's {candidates.ranks_of_node[node]} ranks wait "
                f"for data, up to {worst.data_wait_share:.0f}% of the step (the job's median "
                f"{job_wait:.0f}%)",
                node,
            )
            continue
        for r in node_ranks:
            candidates.add(
                "data_wait",
                f"rank {r.rank}'s data wait {r.data_wait_share:.0f}% of the step (the job's "
                f"median {job_wait:.0f}%)",
                r.node,
                r.gpu,
                r,
            )


def rank_culprits(
    gpus: Sequence[GpuEvidence],
    ranks: Sequence[RankEvidence],
    node_cpu_percent: dict[str, float] | None = None,
    job_data_wait: tuple[float, float] | None = None,
) -> Verdict:
    """The most likely culprit of a job's slowdown, from its GPUs', ranks' and nodes' series
    at the alarm's time, or no single one with what slowed the whole job. ``job_data_wait``:
    the job's data wait share now and before, for a reader that has no rank's (Classic's
    series are per job)."""
    candidates = _Candidates(gpus, ranks)
    _add_gpus(candidates, gpus)
    job_wait, job_wait_before, waiting = _data_wait_ranks(ranks, job_data_wait)
    _add_ranks(candidates, waiting, job_wait)
    for node, words in _saturated_nodes(node_cpu_percent or {}).items():
        candidates.add("cpu", words, node)
    ranked = candidates.ranked()
    whole_job_wait = job_wait - job_wait_before >= JOB_DATA_WAIT_RISE_POINTS
    best = ranked[0] if ranked else None
    if best is None or best.weight < MIN_CULPRIT_WEIGHT:
        best = None
    tied = [c for c in ranked if best is not None and c.weight == best.weight]
    if best is not None and len(tied) == 1 and not (whole_job_wait and best.data_wait_only):
        return Verdict(culprit=best.culprit(), others=tuple(c.culprit() for c in ranked[1:4]))
    if whole_job_wait:
        reason = (
            f"every rank waits longer for its data (the job's median data wait "
            f"{job_wait:.0f}% of the step, {job_wait_before:.0f}% before): the data source "
            "(storage, the dataset's bucket, its network) slowed for the whole job"
        )
    elif len(tied) > 1:
        reason = f"{len(tied)} candidates show as much evidence: " + "; ".join(
            f"node {c.node}{' GPU ' + c.gpu if c.gpu else ''}" for c in tied[:4]
        )
    else:
        reason = (
            "no GPU, rank or node stands out from the others: the whole job slowed "
            "(its network, its code, or its input)"
        )
    return Verdict(culprit=None, whole_job=reason, others=tuple(c.culprit() for c in ranked[:3]))


def same_place(named: Culprit | None, node: str, gpu: str = "", rank: str = "") -> bool:
    """Whether a named culprit is the one planted: the node, and the GPU or rank where the
    truth names one (a node-wide fault named on one of its GPUs is the node, too)."""
    if named is None:
        return False
    if named.node != node:
        return False
    if gpu and named.gpu != gpu:
        return False
    return not rank or named.rank == rank
