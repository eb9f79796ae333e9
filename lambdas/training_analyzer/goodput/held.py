"""Each job's day of goodput over the GPU-hours the GPU-hour attribution says its pods held
(lambdas/training_analyzer/gpu_hours): one count of a job's GPU-hours and GPUs in the goodput
files, the funnel, the job tables and the failures. Pure.

The emitter splits the time of the ranks it runs in; the attribution counts every pod that held
a GPU, each clock hour it reported whole. Where they differ (ranks without an emitter, a pod's
hour before its process began), each category keeps its share of the time the emitter split and
the job's total is what its pods held, as the funnel's productive stage takes it
(funnel.py ``from_goodput``); its GPUs are the most its pods held at once where more than its
ranks. Its waiting for GPUs (pods pending, holding none) is left as it is.

A job whose emitter reported no step while the attribution says its GPUs worked ran its steps
outside the emitter's loop (a script that reports only its end through it): its goodput is
unknown, not "held with no steps" (``steps_unseen``); it is left out of the goodput files and
its goodput finding is withdrawn (``forget_goodput``), and the funnel counts its active hours
as having no step or token signal."""

import math
from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Final

from lambdas.shared.findings import Kind
from lambdas.training_analyzer.failure_placement import HeldJob
from lambdas.training_analyzer.goodput.findings import goodput_finding
from lambdas.training_analyzer.goodput.jobs import HOUR, AttemptGoodput, Badput, JobGoodput, Split
from lambdas.training_analyzer.run import TrainingRun

#: A pod's share of an hour read as a whole GPU (a clock hour's edges, rounding).
WHOLE: Final = 0.01
#: The badput that only time in or between steps makes: a split with none of it, and no
#: productive time, had no step.
STEP_BADPUT: Final = frozenset(
    {
        Badput.DATA_LOADING,
        Badput.CHECKPOINT_SAVE,
        Badput.EVALUATION,
        Badput.HUNG,
        Badput.PROGRESS_LOST,
        Badput.RECOVERY,
        Badput.WAITING_ON_SLOWEST_RANK,
    }
)
#: The kinds of a job's training findings (``training_*``).
TRAINING_KINDS: Final = "training_"
#: Working GPU-hours over held at or above which a job's GPUs worked.
WORKED_SHARE: Final = 0.5


def steps_unseen(g: JobGoodput, held: HeldJob | None) -> bool:
    """Whether ``g``'s emitter reported no step while its pods' GPUs worked (at least
    ``WORKED_SHARE`` of what they held was held and working)."""
    if held is None or g.split.productive > 0:
        return False
    if any(g.split.badput.get(b, 0.0) > 0 for b in STEP_BADPUT):
        return False
    total = sum(held.held_by_hour.values())
    return total > 0 and held.working >= WORKED_SHARE * total


def _scaled(split: Split, scale: float) -> Split:
    badput = {b: s if b is Badput.WAITING_FOR_GPUS else s * scale for b, s in split.badput.items()}
    return Split(split.productive * scale, badput)


def held_goodput(g: JobGoodput, held: HeldJob | None) -> JobGoodput:
    """``g`` over what ``held`` (its pods in the attribution of the same day) held; ``g``
    itself where the attribution has none of its pods or the emitter split no held time."""
    if held is None:
        return g
    held_s = sum(held.held_by_hour.values()) * HOUR
    split_s = g.split.total - g.split.badput.get(Badput.WAITING_FOR_GPUS, 0.0)
    if held_s <= 0 or split_s <= 0:
        return g
    scale = held_s / split_s
    at_once = max(held.held_by_hour.values())
    return replace(
        g,
        gpus=max(g.gpus, math.ceil(at_once - WHOLE)),
        split=_scaled(g.split, scale),
        attempts=tuple(
            AttemptGoodput(a.index, a.first_hour, a.resumed_from, _scaled(a.split, scale), a.labels)
            for a in g.attempts
        ),
    )


def held_goodputs(
    goodput: Mapping[str, JobGoodput], held: Mapping[str, HeldJob]
) -> dict[str, JobGoodput]:
    """``held_goodput`` of each job."""
    return {job: held_goodput(g, held.get(job)) for job, g in goodput.items()}


def forget_goodput(run: TrainingRun, jobs: Collection[str]) -> None:
    """``jobs``' goodput is unknown (``steps_unseen``): out of ``run``'s goodput, their goodput
    findings withdrawn, and no finding or failure left linking them."""
    gone = {f"{Kind.TRAINING_LOW_GOODPUT} job/{job}" for job in jobs}
    if not gone:
        return
    for job in jobs:
        run.goodput.pop(job, None)
        run.day_goodput.pop(job, None)
    run.findings = [f for f in run.findings if f"{f.kind} {f.resource}" not in gone]
    _unlink(run, gone)


def attributed_goodput(
    run: TrainingRun, held: Mapping[str, HeldJob], *, one_day: bool = False
) -> None:
    """``run``'s goodput against the attribution's ``held`` jobs of the same day: a job whose
    steps no emitter saw forgotten, each day's goodput over what its pods held. ``one_day``:
    the run's window is that day (a 1-day lookback), so its goodput and the goodput findings
    are over what the pods held too: one figure with the day's files."""
    both = [*run.goodput.items(), *run.day_goodput.items()]
    forget_goodput(run, {job for job, g in both if steps_unseen(g, held.get(job))})
    run.day_goodput = held_goodputs(run.day_goodput, held)
    if not one_day:
        return
    run.goodput = held_goodputs(run.goodput, held)
    kind = str(Kind.TRAINING_LOW_GOODPUT)
    now = {
        job: found
        for job in run.goodput.keys() & held.keys()
        if (found := goodput_finding(run.goodput[job])) is not None
    }
    kept = []
    for finding in run.findings:
        job = finding.resource.removeprefix("job/")
        if finding.kind != kind or job not in held or job not in run.goodput:
            kept.append(finding)
        elif job in now:
            kept.append(replace(now.pop(job), related=finding.related))
    # Under its target only once weighed over what its pods held: a finding of its own.
    run.findings = kept + [now[job] for job in sorted(now)]
    gone = {f"{kind} job/{job}" for job in held} - {f"{f.kind} {f.resource}" for f in run.findings}
    _unlink(run, gone)


def _unlink(run: TrainingRun, gone: set[str]) -> None:
    """No finding or unplaced failure of ``run`` left linking the findings ``gone``."""
    run.findings = [
        replace(f, related=tuple(r for r in f.related if r not in gone)) for f in run.findings
    ]
    run.unplaced_failures = [
        replace(u, links=tuple(link for link in u.links if link not in gone))
        for u in run.unplaced_failures
    ]


def held_evidence(run: TrainingRun, held: Mapping[str, HeldJob]) -> None:
    """Each training finding of ``run`` about a job the attribution placed gains
    ``held_gpu_hours``: what its pods held in the window (the attribution's day), the figure
    the job tables, the funnel, the goodput and the failures give, beside the ``gpu_hours``
    its GPUs x stepping hours make (0 for a job that never stepped). For a run whose window is
    that day alone."""
    # To the hundredth, as the job tables give it.
    hours = {job: round(sum(h.held_by_hour.values()), 2) for job, h in held.items()}
    run.findings = [
        replace(f, evidence={**f.evidence, "held_gpu_hours": hours[job]})
        if f.kind.startswith(TRAINING_KINDS)
        and f.resource.startswith("job/")
        and (job := f.resource.removeprefix("job/")) in hours
        else f
        for f in run.findings
    ]
