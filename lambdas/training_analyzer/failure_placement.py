"""Failed jobs whose training emitter named no pod and node (a job that died before its first
step, or runs no step loop through the emitter): their pods and nodes, and what each failed run
held, taken from the GPU-hour attribution (lambdas/training_analyzer/gpu_hours), which knows
every pod that held a GPU and the job its controller's name implies. Their logs are then read
as the emitter-named jobs' are (failure_run.py), after the attribution, once a day.

A run's GPU-hours are what its job's pods held in the hours after the job's previous failure
and up to this one, in the attributed day: the attribution's own figure, so the failure and the
``gpu_held_not_working`` finding of one job never price its hours twice over."""

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from lambdas.shared.findings import AnalysisRun, Finding, Kind
from lambdas.training_analyzer.failure_logs import FailedPod
from lambdas.training_analyzer.failure_run import (
    HOUR,
    FailedRun,
    FailureLogsError,
    UnplacedFailure,
    explain_job,
)
from lambdas.training_analyzer.gpu_hours.attribution import (
    UNKNOWN_NAMESPACE,
    UNPLACED_NODE,
    Attribution,
    HourClass,
)

_AWS_ERRORS: Final = (ClientError, BotoCoreError)


@dataclass(frozen=True)
class HeldJob:
    """A job's pods as the attribution placed them, and the GPU-hours they held by hour."""

    pods: tuple[FailedPod, ...]
    held_by_hour: Mapping[float, float]
    #: Of its held GPU-hours, those held and working (the attribution's class): whether its
    #: GPUs worked in hours no emitter reported a step of (goodput/held.py).
    working: float = 0.0


def held_jobs(attribution: Attribution) -> dict[str, HeldJob]:
    """Each job's pods on each node they held a GPU on, and its held GPU-hours by hour; the
    holders the attribution could not name (no Container Insights data, not placed on a node)
    are no job's."""
    pods: dict[str, set[FailedPod]] = defaultdict(set)
    held: dict[str, dict[float, float]] = defaultdict(lambda: defaultdict(float))
    working: dict[str, float] = defaultdict(float)
    for pod in attribution.pods.values():
        if pod.namespace == UNKNOWN_NAMESPACE:
            continue
        job = pod.job.job
        working[job] += pod.hours.get(HourClass.WORKING, 0.0)
        pods[job] |= {FailedPod(pod.pod, g.node) for g in pod.gpus if g.node != UNPLACED_NODE}
        for hour, portion in pod.by_hour.items():
            held[job][float(hour)] += portion
    return {
        job: HeldJob(
            tuple(sorted(found, key=lambda p: (p.pod, p.node))), dict(held[job]), working[job]
        )
        for job, found in pods.items()
        if found
    }


def held_run_gpu_hours(
    held_by_hour: Mapping[float, float], failed_hours: Iterable[float]
) -> dict[float, float]:
    """Each failed hour's run: the GPU-hours held after the previous failed hour and up to
    this one (the failed hour included: it held its GPUs until it failed), to the hundredth
    the attribution's job tables give held GPU-hours in."""
    runs: dict[float, float] = {}
    previous = None
    for hour in sorted(set(failed_hours)):
        runs[hour] = held_between(held_by_hour, previous, hour)
        previous = hour
    return runs


def held_between(held_by_hour: Mapping[float, float], after: float | None, upto: float) -> float:
    """The GPU-hours held in the hours after ``after`` (None: from the first) up to ``upto``
    (included), to the hundredth."""
    lower = float("-inf") if after is None else after
    return round(sum(h for at, h in held_by_hour.items() if lower < at <= upto), 2)


def held_failures(
    run: AnalysisRun,
    failures: Sequence[FailedRun],
    held: Mapping[str, HeldJob],
    day: range,
    window_start: float,
) -> list[FailedRun]:
    """``failures`` with each run of a job the attribution placed that began and failed in
    ``day`` (its hours' starts, epoch seconds: the attribution's) priced at what its pods held
    after the job's previous failure (``FailedRun.since``, read or not; the first in the
    window began at ``window_start``) up to this one, as its cause finding on ``run`` says it:
    one figure with the job tables, the funnel and the job's goodput, where its GPUs x its
    stepping hours would miss the hours it held without a step and count a clock hour it
    stepped in part of whole. A run that began before the day keeps its figure (the
    attribution holds only the day's hours of it), as do the others."""
    priced: dict[tuple[str, float], float] = {}
    for f in failures:
        began = window_start if f.since is None else f.since + HOUR
        if f.job in held and int(f.at) in day and began >= day.start:
            priced[(f.job, f.at)] = held_between(held[f.job].held_by_hour, f.since, f.at)
    run.findings = [_repriced(f, priced) for f in run.findings]
    return [
        replace(f, gpu_hours=priced[(f.job, f.at)], held=True) if (f.job, f.at) in priced else f
        for f in failures
    ]


def _repriced(finding: Finding, priced: Mapping[tuple[str, float], float]) -> Finding:
    """A failure cause's finding with the runs it lists at their ``priced`` GPU-hours."""
    if finding.kind != Kind.TRAINING_FAILURE_CAUSE:
        return finding
    job = finding.resource.removeprefix("job/")
    runs = [
        {**entry, "gpu_hours": priced.get((job, at), entry["gpu_hours"])}
        for entry in finding.evidence.get("failures", [])
        for at in [datetime.fromisoformat(entry["failed_hour"]).timestamp()]
    ]
    return replace(finding, evidence={**finding.evidence, "failures": runs})


def explain_unplaced(
    logs: Any,
    cluster: str,
    unplaced: Sequence[UnplacedFailure],
    held: Mapping[str, HeldJob],
    run: AnalysisRun,
    *,
    day: str,
) -> list[FailedRun]:
    """Each unplaced failed job's cause (its ``training_failure_cause`` on ``run``) from the
    logs of the pods the attribution of ``day`` placed; a job it placed no pod of, or whose
    logs cannot be read, is named on ``run``, and the others stand."""
    runs: list[FailedRun] = []
    for failure in unplaced:
        job = held.get(failure.job)
        if job is None:
            run.skip(
                f"job/{failure.job}",
                FailureLogsError(
                    "failure logs not read: its emitter reported no pod and node, and the "
                    f"GPU-hour attribution of {day} placed none of its pods"
                ),
            )
            continue
        costs = held_run_gpu_hours(job.held_by_hour, failure.hours)
        try:
            found, read = explain_job(
                logs, cluster, failure.job, list(job.pods), list(failure.hours), costs
            )
        except _AWS_ERRORS as err:
            run.skip(f"job/{failure.job}", FailureLogsError(f"failure logs: {err}"))
            continue
        evidence = {**found.evidence, "pods_from": f"GPU-hour attribution of {day}"}
        run.findings.append(replace(found, related=failure.links, evidence=evidence))
        runs += read
    return runs
