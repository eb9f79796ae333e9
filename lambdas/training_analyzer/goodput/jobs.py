"""Goodput of one training job and of each of its attempts: pure, on the hourly series the
training analyzer already reads (analysis.JobSeries), in both Container Insights modes.

Goodput is the GPU-time the job's ranks spent on the work of steps that were kept, divided by
the GPU-time the job held or waited for; the rest is badput, named by cause (``Badput``). The
categories' GPU-seconds add up exactly to the job's total, since each comes from a split that
adds up: the emitter splits each rank's window by what the rank did (``TIME_METRICS``:
startup, compute, data wait, checkpoint save, evaluation, stalled, idle; they add up to the
window), and this module splits compute three ways (kept, redone after a restart, waiting in
collectives for a slower rank). Google's ML Goodput Measurement names the same buckets
(AI-Hypercomputer/ml-goodput-measurement, ``BadputType``: TPU initialization, training prep,
program startup, data loading, checkpoint save and restore, wasted progress from disruption,
infrastructure recovery from disruption, other) and is the model here, as is Meta's effective
training time ratio (Llama 3's report, 90% and more on 16,384 GPUs); docs/goodput.md defines
each category, its source and what the product cannot see.

A rank is one GPU (one process per GPU, as torchrun launches them), so a rank's seconds are
GPU-seconds.
"""

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, Final

from lambdas.training_analyzer.analysis import JobSeries, RankStats
from lambdas.training_analyzer.aws import COMBINED, JOB_METRICS, combined

HOUR: Final = 3600.0
#: Google's ideal step time: the mean of the steps at or below the median + 3 x MAD
#: (ml-goodput-measurement, goodput_utils.py ``compute_ideal_step_time``).
IDEAL_STEP_MADS: Final = 3.0


class Badput(StrEnum):
    """Where a job's GPU-time went that was not kept steps' work (docs/goodput.md)."""

    WAITING_FOR_GPUS = "waiting_for_gpus"
    STARTUP = "startup"
    DATA_LOADING = "data_loading"
    CHECKPOINT_SAVE = "checkpoint_save"
    EVALUATION = "evaluation"
    HUNG = "hung"
    PROGRESS_LOST = "progress_lost"
    RECOVERY = "recovery"
    WAITING_ON_SLOWEST_RANK = "waiting_on_slowest_rank"
    HELD_NO_STEPS = "held_no_steps"


#: What each badput is, in a person's words (findings, the report).
BADPUT_WORDS: Final[dict[Badput, str]] = {
    Badput.WAITING_FOR_GPUS: "waiting for GPUs (pods pending)",
    Badput.STARTUP: "startup (pod start to first step, checkpoint restore included)",
    Badput.DATA_LOADING: "data loading",
    Badput.CHECKPOINT_SAVE: "checkpoint saves",
    Badput.EVALUATION: "evaluation",
    Badput.HUNG: "hung (steps past due until they ended or the job was killed)",
    Badput.PROGRESS_LOST: "progress lost (steps redone after a restart)",
    Badput.RECOVERY: "recovery (a restarted attempt's time to its first step)",
    Badput.WAITING_ON_SLOWEST_RANK: "waiting on the slowest rank",
    Badput.HELD_NO_STEPS: "held with no steps",
}


@dataclass(frozen=True)
class Split:
    """GPU-seconds: the productive ones and each badput's; ``total`` is their sum."""

    productive: float
    badput: Mapping[Badput, float]

    @property
    def total(self) -> float:
        return self.productive + sum(self.badput.values())

    @property
    def goodput(self) -> float | None:
        """Productive ÷ total, None for a job that held nothing."""
        total = self.total
        return self.productive / total if total > 0 else None

    def largest(self) -> tuple[Badput, float] | None:
        """The badput with the most GPU-seconds (the first by name on a tie), if any."""
        found = [(b, s) for b, s in self.badput.items() if s > 0]
        return min(found, key=lambda bs: (-bs[1], bs[0])) if found else None

    def gpu_hours(self) -> dict[str, float]:
        """``productive`` and every badput, in GPU-hours."""
        return {"productive": self.productive / HOUR} | {
            str(b): s / HOUR for b, s in sorted(self.badput.items())
        }

    @classmethod
    def from_gpu_hours(cls, hours: Mapping[str, float]) -> "Split":
        """``gpu_hours()`` read back; a name that is no badput is a ``ValueError``."""
        badput = {Badput(k): float(v) * HOUR for k, v in hours.items() if k != "productive"}
        return cls(float(hours.get("productive", 0.0)) * HOUR, badput)


def add(splits: Iterable[Split]) -> Split:
    productive = 0.0
    badput = dict.fromkeys(Badput, 0.0)
    for split in splits:
        productive += split.productive
        for b, s in split.badput.items():
            badput[b] += s
    return Split(productive, badput)


@dataclass(frozen=True)
class AttemptGoodput:
    """One attempt: the hours from the one it began in to the one before the next began."""

    index: int
    first_hour: float
    #: The step it resumed from (None: it was running when the window began).
    resumed_from: float | None
    split: Split
    #: Its ``attempt`` labels (the emitter's Attempt: one where the launcher numbers attempts,
    #: one per rank where each process drew its own), where its series carried them; empty
    #: where attempts were told apart by the hour each began.
    labels: tuple[str, ...] = ()


#: The figures ``JobGoodput`` carries besides its splits, as they are in its JSON.
_RATES: Final = (
    "failures",
    "restarts",
    "steps_redone",
    "mtbf_hours",
    "mean_checkpoint_save_s",
    "checkpoint_interval_s",
    "optimal_checkpoint_interval_s",
    "ideal_step_s",
    "step_time_deviation",
)


@dataclass(frozen=True)
class JobGoodput:
    job: str
    gpus: int
    split: Split
    attempts: tuple[AttemptGoodput, ...]
    #: Failures in the window: its ``job_failed`` count, or its restarts where more.
    failures: int
    restarts: int
    steps_redone: float
    #: Hours the job ran (its ranks' seconds ÷ its ranks) per failure.
    mtbf_hours: float | None
    mean_checkpoint_save_s: float | None
    checkpoint_interval_s: float | None
    #: Young's optimal interval between checkpoints, √(2 x save time x MTBF).
    optimal_checkpoint_interval_s: float | None
    #: Google's ideal step (work only) and the job's mean step against it, as a share.
    ideal_step_s: float | None
    step_time_deviation: float | None

    @property
    def goodput(self) -> float | None:
        return self.split.goodput

    @property
    def total_gpu_hours(self) -> float:
        return self.split.total / HOUR

    @property
    def productive_gpu_hours(self) -> float:
        """The GPU-hours of kept steps' work: the funnel's productive stage for this job."""
        return self.split.productive / HOUR

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> "JobGoodput":
        """``to_json()`` read back (a shard's part, the day's goodput file)."""
        return cls(
            job=str(document["job"]),
            gpus=int(document["gpus"]),
            split=Split.from_gpu_hours(document["gpu_hours"]),
            attempts=tuple(
                AttemptGoodput(
                    int(a["index"]),
                    float(a["first_hour"]),
                    a["resumed_from"],
                    Split.from_gpu_hours(a["gpu_hours"]),
                    tuple(str(label) for label in a.get("labels", ())),
                )
                for a in document["attempts"]
            ),
            **{name: document[name] for name in _RATES},
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "gpus": self.gpus,
            "goodput": self.goodput,
            "total_gpu_hours": self.total_gpu_hours,
            "gpu_hours": self.split.gpu_hours(),
            "attempts": [
                {
                    "index": a.index,
                    "first_hour": a.first_hour,
                    "resumed_from": a.resumed_from,
                    "goodput": a.split.goodput,
                    "gpu_hours": a.split.gpu_hours(),
                    "labels": list(a.labels),
                }
                for a in self.attempts
            ],
            **{name: getattr(self, name) for name in _RATES},
        }


def within(series: JobSeries, start: float, end: float) -> JobSeries:
    """``series`` with only its hours in [start, end) (a day's goodput out of a lookback's)."""
    kept = JobSeries(job=series.job)
    for f in fields(series):
        if f.name not in ("job", "attempts"):
            hourly = getattr(series, f.name).items()
            setattr(kept, f.name, {h: v for h, v in hourly if start <= h < end})
    for label, attempt in series.attempts.items():
        mine = within(attempt, start, end)
        if _hours(mine):
            kept.attempts[label] = mine
    return kept


def optimal_checkpoint_interval(save_s: float, mtbf_s: float) -> float:
    """Young's first-order optimum, √(2 x δ x M) for a checkpoint that takes δ seconds to
    write and a mean time between failures of M seconds (J. W. Young, "A first order
    approximation to the optimum checkpoint interval", Communications of the ACM 17(9),
    1974, 530-531; J. T. Daly, "A higher order estimate of the optimum checkpoint interval
    for restart dumps", Future Generation Computer Systems 22(3), 2006, 303-312, which keeps
    it as the first-order term for δ much below M)."""
    return math.sqrt(2 * save_s * mtbf_s)


def ideal_step_time(step_times: Sequence[float]) -> float | None:
    """The mean of the step times at or below their median + 3 x MAD (Google's ideal step
    time), None for none."""
    if not step_times:
        return None
    median = statistics.median(step_times)
    mad = statistics.median(abs(t - median) for t in step_times)
    normal = [t for t in step_times if t <= median + IDEAL_STEP_MADS * mad]
    return statistics.fmean(normal)


def slowest_rank_share(ranks: Sequence[RankStats]) -> float:
    """The share of the ranks' work seconds spent waiting for a slower rank: a rank whose
    steps took more work than the fastest rank's spent the difference blocked in the step's
    collectives (the fastest rank's work per step is what a step needs). 0 below two ranks
    with their work read."""
    read = [r for r in ranks if r.compute_seconds is not None and r.steps > 0]
    if len(read) < 2:
        return 0.0
    fastest = min((r.compute_seconds or 0.0) / r.steps for r in read)
    work = sum(r.compute_seconds or 0.0 for r in read)
    if work <= 0:
        return 0.0
    waited = sum(max(0.0, (r.compute_seconds or 0.0) - r.steps * fastest) for r in read)
    return min(1.0, waited / work)


@dataclass
class _Hour:
    startup: float = 0.0
    compute: float = 0.0
    data_wait: float = 0.0
    checkpoint: float = 0.0
    evaluation: float = 0.0
    stalled: float = 0.0
    idle: float = 0.0
    steps: float = 0.0

    @property
    def seen(self) -> float:
        return (
            self.startup + self.compute + self.data_wait + self.checkpoint + self.evaluation
            + self.stalled + self.idle
        )  # fmt: skip


def _hours(series: JobSeries) -> dict[float, _Hour]:
    hours: dict[float, _Hour] = {}
    for name, values in (
        ("startup", series.startup_time),
        ("compute", series.compute_time),
        ("data_wait", series.data_wait_time),
        ("checkpoint", series.checkpoint_save_time),
        ("evaluation", series.evaluation_time),
        ("stalled", series.stalled_time),
        ("idle", series.idle_time),
        ("steps", series.steps),
    ):
        for hour, value in values.items():
            if value > 0:
                setattr(hours.setdefault(hour, _Hour()), name, value)
    return hours


@dataclass
class _Attempt:
    index: int
    first_hour: float
    resumed_from: float | None
    #: It restarted the attempt before it (``_restarted``); else it began a new run of the
    #: job name: its startup is startup, and its step number may start over.
    restart: bool = False
    hours: list[float] = field(default_factory=list)
    #: Its own series where the emitter's carry the attempt (``_labelled``): each hour's
    #: seconds are then its own, whoever else ran that hour. None: the job's hours.
    own: JobSeries | None = None
    labels: tuple[str, ...] = ()
    #: The hour of its first step, and what its time before it is (``job_goodput``).
    first_step: float | None = None
    begin: Badput = Badput.STARTUP
    compute: float = 0.0
    lost: float = 0.0
    badput: dict[Badput, float] = field(default_factory=lambda: dict.fromkeys(Badput, 0.0))


def _restarted(series: JobSeries, before: float, start: float, resumed: float | None) -> bool:
    """Whether the attempt that began in hour ``start`` restarted the one that began in
    ``before``: that one did not succeed, and either failed (``job_failed``), stalled, or this
    one resumed from a checkpoint (a step after 0). A process that starts from step 0 after
    no sign of a failure is a new run of the job name."""

    def between(values: Mapping[float, float]) -> bool:
        return any(v > 0 for h, v in values.items() if before <= h <= start)

    if between(series.successes):
        return False
    return between(series.failures) or between(series.stalled_time) or bool(resumed)


def _attempts(series: JobSeries, order: Sequence[float]) -> list[_Attempt]:
    """The one running when the window began (unless the first began in its first hour),
    then one for each hour an attempt began in, each with its hours."""
    marks = sorted(h for h, n in series.resumes.items() if n > 0)
    starts = marks if marks and marks[0] <= order[0] else [order[0], *marks]
    attempts = []
    for i, start in enumerate(starts):
        resumed = series.resumed_from.get(start) if start in marks else None
        attempts.append(
            _Attempt(
                i,
                start,
                resumed,
                restart=i > 0 and _restarted(series, starts[i - 1], start, resumed),
            )
        )
    for hour in order:
        attempts[max(0, sum(1 for s in starts if s <= hour) - 1)].hours.append(hour)
    return attempts


def _merged(job: str, parts: Sequence[JobSeries]) -> JobSeries:
    """The series of one attempt's labels as one (each statistic as ``COMBINED`` adds it)."""
    merged = JobSeries(job=job)
    for name, _, stat in JOB_METRICS:
        if stat in COMBINED:
            setattr(merged, name, combined(stat, (getattr(p, name) for p in parts)))
    return merged


def _labelled(series: JobSeries, hours: Mapping[float, _Hour]) -> list[_Attempt] | None:
    """The attempts by the emitter's ``attempt`` label, in the order they began: the labels
    whose series began in the same hour are one attempt (a launcher's number is every rank's;
    a process that found none drew its own, one per rank). Each attempt's seconds are its
    own, to the second, in the hours two attempts shared. None where the series carry no
    label, or where the labelled seconds are not all the job's (ranks of an older emitter
    beside newer ones): the job's attempts are then told apart by the hour (``_attempts``)."""
    began: dict[float, list[str]] = {}
    for label, attempt in series.attempts.items():
        seen = _hours(attempt)
        if seen:
            began.setdefault(min(seen), []).append(label)
    if not began:
        return None
    groups = sorted(began.items())
    own = [_merged(series.job, [series.attempts[x] for x in labels]) for _, labels in groups]
    labelled = sum(h.seen for o in own for h in _hours(o).values())
    if not math.isclose(labelled, sum(h.seen for h in hours.values()), abs_tol=1e-6):
        return None
    attempts = []
    for i, ((first, labels), mine) in enumerate(zip(groups, own, strict=True)):
        resumed = min(mine.resumed_from.values()) if mine.resumed_from else None
        restart = i > 0 and _restarted(own[i - 1], -math.inf, math.inf, resumed)
        attempts.append(
            _Attempt(
                i, first, resumed, restart=restart, hours=sorted(_hours(mine)), own=mine,
                labels=tuple(sorted(labels)),
            )
        )  # fmt: skip
    return attempts


def job_goodput(
    series: JobSeries,
    *,
    gpus: int,
    ranks: Sequence[RankStats] = (),
    pending_gpu_seconds: float = 0.0,
    held_gpu_seconds: Mapping[float, float] | None = None,
) -> JobGoodput | None:
    """The job's goodput over its series' hours; None where the emitter reported no seconds
    (an emitter older than these metrics, or no run in the window). ``gpus``: its ranks.
    ``pending_gpu_seconds``: GPU-seconds its pods waited unscheduled. ``held_gpu_seconds``:
    per hour, the GPU-seconds its pods held (the GPU-hour attribution's), where known; the
    part no emitter saw (the pod started, the process not yet) is classed by when it was."""
    hours = _hours(series)
    if not hours or not any(h.seen > 0 for h in hours.values()):
        return None
    gpus = max(1, gpus)
    stepped = sum(h.steps for h in hours.values()) > 0
    attempts = _labelled(series, hours) or _attempts(series, sorted(hours))
    for index, current in enumerate(attempts):
        mine = hours if current.own is None else _hours(current.own)
        current.begin = Badput.RECOVERY if current.restart else Badput.STARTUP
        current.first_step = min((x for x in current.hours if mine[x].steps > 0), default=None)
        for hour in current.hours:
            h = mine[hour]
            # In the hour an attempt began, the stall and idle time are the one that ended
            # (where the hour's seconds are the job's, not the attempt's own).
            shared = current.own is None and index > 0 and hour == current.first_hour
            ended = attempts[index - 1] if shared else current
            current.badput[current.begin if stepped else Badput.HELD_NO_STEPS] += h.startup
            current.badput[Badput.DATA_LOADING] += h.data_wait
            current.badput[Badput.CHECKPOINT_SAVE] += h.checkpoint
            current.badput[Badput.EVALUATION] += h.evaluation
            ended.badput[Badput.HUNG] += h.stalled
            ended.badput[Badput.HELD_NO_STEPS] += h.idle
            current.compute += h.compute
    for hour, h in hours.items():
        # Held by its pods, seen by no emitter: the attempt of the hour (the last to begin by
        # then), before its first step its start.
        unseen = max(0.0, (held_gpu_seconds or {}).get(hour, 0.0) - h.seen)
        owner = ([a for a in attempts if a.first_hour <= hour] or attempts)[-1]
        early = owner.first_step is None or hour <= owner.first_step
        owner.badput[owner.begin if early and stepped else Badput.HELD_NO_STEPS] += unseen
    redone = sum(
        _progress_lost(series, hours, run, gpus) if run[0].own is None else _lost(run, gpus)
        for run in _runs(attempts)
    )
    slowest = slowest_rank_share(ranks)
    splits = []
    for a in attempts:
        lost = min(a.compute, a.lost)
        waiting = (a.compute - lost) * slowest
        a.badput[Badput.PROGRESS_LOST] += lost
        a.badput[Badput.WAITING_ON_SLOWEST_RANK] += waiting
        productive = Split(a.compute - lost - waiting, a.badput)
        splits.append(AttemptGoodput(a.index, a.first_hour, a.resumed_from, productive, a.labels))
    pending = Split(0.0, {Badput.WAITING_FOR_GPUS: max(0.0, pending_gpu_seconds)})
    total = add([*(s.split for s in splits), pending])
    restarts = sum(1 for a in attempts if a.restart)
    return _with_rates(series, hours, gpus, total, tuple(splits), redone, restarts)


def _runs(attempts: Sequence[_Attempt]) -> list[list[_Attempt]]:
    """The attempts by run: a run's first attempt, then its restarts."""
    runs: list[list[_Attempt]] = []
    for a in attempts:
        if a.restart and runs:
            runs[-1].append(a)
        else:
            runs.append([a])
    return runs


def _with_rates(
    series: JobSeries,
    hours: Mapping[float, _Hour],
    gpus: int,
    total: Split,
    attempts: tuple[AttemptGoodput, ...],
    redone: float,
    restarts: int,
) -> JobGoodput:
    """The job's goodput with its failure rate, checkpoint interval (and Young's) and step
    time against Google's ideal."""
    wall_hours = sum(h.seen for h in hours.values()) / gpus / HOUR
    failures = max(round(sum(series.failures.values())), restarts)
    mtbf = wall_hours / failures if failures and wall_hours > 0 else None
    saves = sum(series.checkpoint_saves.values()) / gpus
    save_s = sum(h.checkpoint for h in hours.values()) / gpus / saves if saves > 0 else None
    per_step = [h.compute / h.steps for h in hours.values() if h.steps > 0 and h.compute > 0]
    ideal = ideal_step_time(per_step)
    steps = sum(h.steps for h in hours.values())
    mean_step = sum(h.compute for h in hours.values()) / steps if steps > 0 else None
    return JobGoodput(
        job=series.job,
        gpus=gpus,
        split=total,
        attempts=attempts,
        failures=failures,
        restarts=restarts,
        steps_redone=redone,
        mtbf_hours=mtbf,
        mean_checkpoint_save_s=save_s,
        checkpoint_interval_s=wall_hours * HOUR / saves if saves > 0 else None,
        optimal_checkpoint_interval_s=(
            optimal_checkpoint_interval(save_s, mtbf * HOUR) if save_s and mtbf else None
        ),
        ideal_step_s=ideal,
        step_time_deviation=(mean_step / ideal - 1) if ideal and mean_step else None,
    )


def _lost(run: Sequence[_Attempt], gpus: int) -> float:
    """Steps one run's restarts redid, attempts told apart by their label (set on each one's
    ``lost``, in GPU-seconds of its own work): a restart that resumed below the highest step
    any attempt before it reached redid those steps, as many as it ran."""
    redone = 0.0
    reached = -math.inf
    for index, a in enumerate(run):
        own = a.own or JobSeries(job="")
        ran = sum(own.steps.values()) / gpus
        if index > 0 and a.resumed_from is not None and ran > 0 and reached > a.resumed_from:
            steps = min(ran, reached - a.resumed_from)
            a.lost = steps / ran * a.compute
            redone += steps
        reached = max([reached, *own.step_number.values()])
    return redone


def _progress_lost(
    series: JobSeries, hours: Mapping[float, _Hour], run: Sequence[_Attempt], gpus: int
) -> float:
    """Steps one run's restarts redid (set on each restart's ``lost``, in GPU-seconds of
    work): the steps its ranks ran less the progress its step number made. The step number
    goes back at each restart; each takes its share of the total by how far back it went as
    far as the hours before it show."""
    if len(run) < 2:
        return 0.0
    mine = [h for a in run for h in a.hours]
    numbers = {h: series.step_number[h] for h in mine if h in series.step_number}
    ran = sum(hours[h].steps for h in mine) / gpus
    stepping = [h for h in mine if hours[h].steps > 0 and h in numbers]
    if not stepping or ran <= 0:
        return 0.0
    if run[0].resumed_from is not None:
        initial = run[0].resumed_from
    else:  # the step number before the window's first step (no restart in its first hour)
        initial = numbers[stepping[0]] - hours[stepping[0]].steps / gpus
    redone = max(0.0, ran - (max(numbers.values()) - initial))
    if redone <= 0:
        return 0.0
    back = []
    for a in run[1:]:
        before = [v for h, v in numbers.items() if h < a.first_hour]
        went_back = max(before) - a.resumed_from if before and a.resumed_from is not None else 0
        back.append(max(0.0, went_back))
    weights = back if sum(back) > 0 else [1.0] * len(back)
    per_step = sum(hours[h].compute for h in mine) / ran  # GPU-seconds a job step, all ranks
    for a, weight in zip(run[1:], weights, strict=True):
        a.lost = redone * weight / sum(weights) * per_step
    return redone
