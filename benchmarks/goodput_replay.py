"""Goodput replay with a known truth: one data-parallel job run rank by rank through the real
emitter (emitter.training) on a virtual clock, its documents stored as CloudWatch stores them
(each hour's Sum, Maximum, Minimum and SampleCount over every rank's windows: the training
analyzer's ``JOB_METRICS``), and its goodput computed by the analyzer's own code
(lambdas/training_analyzer/goodput/jobs.py); against the seconds the scenario planted, kept
for each category as it runs. Prints each category's error in points of the job's total.

The scenario: its pods wait for GPUs; the first attempt pulls its image, builds the model,
steps (2 s of work, 0.3 s of data wait) with a checkpoint save every 30 minutes and an
evaluation every hour, one rank's data source stalls for a while (the others wait on it in
the step's collectives), then a collective hangs until the job is killed; its pods are
rescheduled (pending again), the second attempt restores the last checkpoint, redoes the steps
after it, and runs to the end. The hung attempt's last, unflushed window (under a minute) is
what the emitter cannot report: the error it leaves is measured, not hidden.
"""

import math
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from gpu_insights_agent.emitter.training import TrainingMetrics
from lambdas.training_analyzer.analysis import JobSeries, RankStats
from lambdas.training_analyzer.aws import JOB_METRICS
from lambdas.training_analyzer.goodput.jobs import HOUR, Badput, JobGoodput, job_goodput

START: Final = 1_800_000_000.0 - 1_800_000_000.0 % HOUR
FLUSH_S: Final = 60.0
WORK_S: Final = 2.0
WAIT_S: Final = 0.3
#: The target: every category within this many points of the truth.
GOAL_POINTS: Final = 2.0


@dataclass(frozen=True)
class Scenario:
    ranks: int = 8
    hours: float = 8.0
    pending_s: float = 1200.0
    image_pull_s: float = 240.0
    build_s: float = 300.0
    checkpoint_every_s: float = 1800.0
    checkpoint_s: float = 60.0
    evaluate_every_s: float = 3600.0
    evaluation_s: float = 120.0
    #: When (seconds into the first attempt's steps) rank 0's data stalls, for how long, and
    #: by how much a step.
    stall_at_s: float = 3000.0
    stall_for_s: float = 1200.0
    stall_extra_s: float = 1.2
    #: When the first attempt's collective hangs (seconds into its steps), and for how long.
    hang_at_s: float = 9000.0
    hang_s: float = 1500.0
    reschedule_s: float = 300.0
    restore_s: float = 180.0
    #: Seconds between the second attempt's last step and its close.
    teardown_s: float = 30.0


@dataclass
class Truth:
    seconds: dict[Badput | str, float] = field(default_factory=lambda: defaultdict(float))
    #: Each held pod interval (start, end), for the GPU-hours the pods held by hour.
    held: list[tuple[float, float]] = field(default_factory=list)


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class _Keep:
    def __init__(self) -> None:
        self.documents: list[dict[str, Any]] = []

    def send(self, documents: Any) -> None:
        self.documents.extend(documents)


class _Rank:
    """One rank's two attempts; the truth kept as the scenario plants it."""

    def __init__(self, s: Scenario, rank: int, sink: _Keep) -> None:
        self.s, self.rank, self.sink = s, rank, sink
        self.truth = Truth()
        self.clock = _Clock(START)
        self.began = START
        #: The data stall is the first attempt's.
        self.stalls = True

    def emitter(self) -> TrainingMetrics:
        return TrainingMetrics(
            job_name="bench-goodput", cluster_name="bench", rank=self.rank, flush_s=FLUSH_S,
            sink=self.sink, clock=self.clock, wall_clock=self.clock, heartbeat=False,
        )  # fmt: skip

    def stalled(self) -> bool:
        s, since = self.s, self.clock.now - self.began
        return self.stalls and s.stall_at_s <= since < s.stall_at_s + s.stall_for_s

    def batches(self, until: float) -> Iterator[int]:
        while self.clock.now < until:
            wait = WAIT_S + (self.s.stall_extra_s if self.stalled() and self.rank == 0 else 0.0)
            self.clock.now += wait
            self.truth.seconds[Badput.DATA_LOADING] += wait
            yield 1

    def wait_for_pods(self, seconds: float) -> float:
        self.clock.now += seconds
        self.truth.seconds[Badput.WAITING_FOR_GPUS] += seconds
        return self.clock.now

    def save(self, m: TrainingMetrics) -> None:
        with m.checkpoint_save():
            self.clock.now += self.s.checkpoint_s
        self.truth.seconds[Badput.CHECKPOINT_SAVE] += self.s.checkpoint_s

    def first(self) -> int:
        """Steps to the hang, then the hang until the kill; the step of its last checkpoint."""
        s, t, clock = self.s, self.truth.seconds, self.clock
        pod_start = self.wait_for_pods(s.pending_s)
        clock.now += s.image_pull_s
        m = self.emitter()
        clock.now += s.build_s
        t[Badput.STARTUP] += s.image_pull_s + s.build_s
        self.began = clock.now
        stepped: list[float] = []  # each completed step's work
        saved = 0
        next_save, next_eval = clock.now + s.checkpoint_every_s, clock.now + s.evaluate_every_s
        for _ in m.steps(self.batches(self.began + s.hang_at_s)):
            blocked = s.stall_extra_s if self.stalled() and self.rank != 0 else 0.0
            clock.now += WORK_S + blocked
            t[Badput.WAITING_ON_SLOWEST_RANK] += blocked
            stepped.append(WORK_S)
            if clock.now >= next_save:
                self.save(m)
                saved, next_save = len(stepped), clock.now + s.checkpoint_every_s
            if clock.now >= next_eval:
                with m.evaluating():
                    clock.now += s.evaluation_s
                t[Badput.EVALUATION] += s.evaluation_s
                next_eval = clock.now + s.evaluate_every_s
        # The hang: the next batch comes, its collective never returns; the heartbeat
        # publishes each window while it lasts, and the job is killed.
        for _ in m.steps(self.batches(math.inf)):
            end = clock.now + s.hang_s
            while clock.now < end:
                clock.now = min(end, clock.now + FLUSH_S / 4)
                m.heartbeat()
            t[Badput.HUNG] += s.hang_s
            break
        self.truth.held.append((pod_start, clock.now))
        # Kept: the steps up to the last checkpoint; the next attempt redoes the rest.
        t["productive"] += sum(stepped[:saved])
        t[Badput.PROGRESS_LOST] += sum(stepped[saved:])
        return saved

    def second(self, saved: int) -> None:
        """Rescheduled (pending again), restored from the checkpoint, to the end."""
        s, t, clock = self.s, self.truth.seconds, self.clock
        pod_start = self.wait_for_pods(s.reschedule_s)
        clock.now += s.image_pull_s
        m = self.emitter()
        with m.checkpoint_restore():
            clock.now += s.restore_s
        m.resume_from_step(saved)
        t[Badput.RECOVERY] += s.image_pull_s + s.restore_s
        self.began, self.stalls = clock.now, False
        next_save = clock.now + s.checkpoint_every_s
        for _ in m.steps(self.batches(START + s.hours * HOUR)):
            clock.now += WORK_S
            t["productive"] += WORK_S
            if clock.now >= next_save:
                self.save(m)
                next_save = clock.now + s.checkpoint_every_s
        clock.now += s.teardown_s
        t[Badput.HELD_NO_STEPS] += s.teardown_s
        m.close(succeeded=True)
        self.truth.held.append((pod_start, clock.now))


def _run_rank(s: Scenario, rank: int, sink: _Keep) -> Truth:
    r = _Rank(s, rank, sink)
    r.second(r.first())
    return r.truth


def _hourly(documents: list[dict[str, Any]]) -> JobSeries:
    """The documents as CloudWatch stores them hour by hour: each ``JOB_METRICS`` statistic
    over every rank's windows that hour."""
    values: dict[tuple[str, float], list[float]] = defaultdict(list)
    for d in documents:
        hour = d["_aws"]["Timestamp"] / 1000 // HOUR * HOUR
        for directive in d["_aws"]["CloudWatchMetrics"]:
            for metric in directive["Metrics"]:
                values[(metric["Name"], hour)].append(float(d[metric["Name"]]))
    series = JobSeries(job="bench-goodput")
    stats: dict[str, Callable[[list[float]], float]] = {
        "Sum": sum, "Maximum": max, "Minimum": min, "SampleCount": len,
        "Average": lambda v: sum(v) / len(v),
    }  # fmt: skip
    for name, metric, stat in JOB_METRICS:
        hourly = {h: float(stats[stat](v)) for (m, h), v in values.items() if m == str(metric)}
        setattr(series, name, hourly)
    return series


def _ranks(documents: list[dict[str, Any]]) -> list[RankStats]:
    """Each rank's steps and work seconds, as the rank query reads them."""
    steps: dict[str, float] = defaultdict(float)
    work: dict[str, float] = defaultdict(float)
    for d in documents:
        if "steps" in d:
            steps[str(d["Rank"])] += d["steps"]
        work[str(d["Rank"])] += d.get("compute_seconds", 0.0)
    return [RankStats(rank=r, steps=n, mean_step_time=0.0, compute_seconds=work[r])
            for r, n in sorted(steps.items())]  # fmt: skip


def _held_by_hour(intervals: list[tuple[float, float]]) -> dict[float, float]:
    held: dict[float, float] = defaultdict(float)
    for start, end in intervals:
        hour = start // HOUR * HOUR
        while hour < end:
            held[hour] += max(0.0, min(end, hour + HOUR) - max(start, hour))
            hour += HOUR
    return held


@dataclass(frozen=True)
class Replay:
    truth: dict[str, float]
    measured: dict[str, float]
    goodput_truth: float
    goodput_measured: float
    errors: dict[str, float]
    result: JobGoodput


def run(s: Scenario = Scenario()) -> Replay:
    sink = _Keep()
    truth: dict[str, float] = defaultdict(float)
    held: list[tuple[float, float]] = []
    pending = 0.0
    for rank in range(s.ranks):
        rank_truth = _run_rank(s, rank, sink)
        for k, v in rank_truth.seconds.items():
            truth[str(k)] += v
        held += rank_truth.held
        pending += rank_truth.seconds[Badput.WAITING_FOR_GPUS]
    result = job_goodput(
        _hourly(sink.documents),
        gpus=s.ranks,
        ranks=_ranks(sink.documents),
        pending_gpu_seconds=pending,
        held_gpu_seconds=_held_by_hour(held),
    )
    if result is None:
        raise RuntimeError("the replay's job reported no seconds")
    measured = {k: v * HOUR for k, v in result.split.gpu_hours().items()}
    total = sum(truth.values())
    names = ["productive", *(str(b) for b in Badput)]
    errors = {k: 100 * abs(measured.get(k, 0.0) - truth.get(k, 0.0)) / total for k in names}
    goodput_truth = truth["productive"] / total
    return Replay(
        truth={k: truth.get(k, 0.0) for k in names},
        measured={k: measured.get(k, 0.0) for k in names},
        goodput_truth=goodput_truth,
        goodput_measured=result.goodput or 0.0,
        errors=errors,
        result=result,
    )


def main(s: Scenario = Scenario()) -> Replay:
    r = run(s)
    print(f"goodput replay: {s.ranks} GPUs, {s.hours:g} hours, 2 attempts (a hang, a restart "
          "from a checkpoint), a data stall on one rank, pending pods")  # fmt: skip
    print(f"  goodput: truth {r.goodput_truth:.2%}, measured {r.goodput_measured:.2%}, "
          f"error {100 * abs(r.goodput_measured - r.goodput_truth):.2f} points")  # fmt: skip
    for name in r.truth:
        truth, measured = r.truth[name] / HOUR, r.measured[name] / HOUR
        print(f"  {name:<25} truth {truth:8.2f} GPU-h  measured {measured:8.2f} GPU-h  "
              f"error {r.errors[name]:.2f} points")  # fmt: skip
    print(f"  largest error {max(r.errors.values()):.2f} points (goal {GOAL_POINTS:g})")
    sys.stdout.flush()
    return r


if __name__ == "__main__":
    main()
