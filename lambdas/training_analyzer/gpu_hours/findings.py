"""From an attribution to what people read: a priced ``gpu_held_not_working`` finding per
namespace and job, and the day's table of GPU-hours by class (fleet, namespace, job) that the
weekly report and the showback CSV are made from.

One GPU-hour has one price: a job's held hours without work are this finding's; its hours in
which its emitter reported steps (``stepping_gpu_hours``, held and working) are its training
findings' (waiting for data, slow checkpoints), never both."""

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from lambdas.shared.findings import Finding, Kind, Severity
from lambdas.shared.serving_advice import idle_replicas_advice
from lambdas.shared.workload_resource import is_serving, workload_resource
from lambdas.training_analyzer.gpu_hours.attribution import Attribution, HourClass, PodHours

ANALYZER: Final = "gpu"
HOURS_PER_MONTH: Final = 730
#: Under this many idle GPU-hours in the window, a job gets no finding (a restart, a warm-up).
MIN_IDLE_GPU_HOURS: Final = 1.0
#: Training findings that say why a job's GPUs waited.
CAUSES: Final = frozenset({"training_data_bound", "training_straggler"})
#: The clause every advice about idle GPU-hours ends with.
PAID: Final = "each idle GPU-hour is paid for as a working one."
#: The advice to a job no emitter named (a notebook's, a Job's).
RELEASE: Final = (
    "Release GPUs a job or notebook does not use (culling idle notebooks, ending finished "
    f"jobs), or find what it waits on; {PAID}"
)


def _row(
    name: dict[str, str], hours: Mapping[HourClass, float], price: float, stepping: float
) -> dict[str, Any]:
    held = sum(hours.values())
    working = hours.get(HourClass.WORKING, 0.0)
    idle = hours.get(HourClass.NOT_WORKING, 0.0)
    return {
        **name,
        "held_gpu_hours": round(held, 4),
        "working_gpu_hours": round(working, 4),
        "not_working_gpu_hours": round(idle, 4),
        "faulted_gpu_hours": round(hours.get(HourClass.FAULTED, 0.0), 4),
        "stepping_gpu_hours": round(stepping, 4),
        "waste_usd": round(idle * price, 2),
        "efficiency": round(working / held, 4) if held else None,
    }


def _job_hours(pods: Sequence[PodHours]) -> dict[HourClass, float]:
    total: dict[HourClass, float] = {}
    for pod in pods:
        for cls, hours in pod.hours.items():
            total[cls] = total.get(cls, 0.0) + hours
    return total


def day_table(attribution: Attribution, gpu_hour_usd: float) -> dict[str, Any]:
    """GPU-hours by class with their cost, and per namespace and per job."""
    classes = {str(cls): round(attribution.classes.get(cls, 0.0), 4) for cls in HourClass}
    jobs = []
    stepping: dict[str, float] = {}
    for pod in attribution.pods.values():
        stepping[pod.namespace] = stepping.get(pod.namespace, 0.0) + pod.stepping
    for (namespace, job), pods in sorted(attribution.jobs().items()):
        row = _row(
            {"namespace": namespace, "job": job},
            _job_hours(pods),
            gpu_hour_usd,
            sum(p.stepping for p in pods),
        )
        row["inferred"] = any(p.job.inferred for p in pods)
        row["kind"] = pods[0].job.kind
        row["time_sliced"] = any(p.time_sliced for p in pods)
        jobs.append(row)
    return {
        "gpu_hour_usd": gpu_hour_usd,
        "classes": classes,
        "cost_usd": {k: round(v * gpu_hour_usd, 2) for k, v in classes.items()},
        "unmeasured_gpu_hours": round(attribution.unmeasured, 4),
        "stepping_under_threshold_gpu_hours": round(attribution.stepping_under_threshold, 4),
        "no_container_insights_gpu_hours": round(attribution.no_container_insights, 4),
        "unattributed_gpu_hours": round(attribution.unattributed, 4),
        "not_held_by_node": _by_node(attribution.not_held_by_node),
        "held_by_node": _by_node(attribution.held_by_node),
        "seen_by_node": _by_node(attribution.seen_by_node),
        "namespaces": [
            _row({"namespace": ns}, hours, gpu_hour_usd, stepping.get(ns, 0.0))
            for ns, hours in sorted(attribution.namespaces().items())
        ],
        "jobs": jobs,
    }


def _by_node(hours: Mapping[str, float]) -> dict[str, float]:
    return {node: round(h, 4) for node, h in sorted(hours.items())}


def _window(start: float | None, hours: float) -> str:
    """ " on 2026-11-28" for a whole UTC day, " from ... to ..." otherwise, "" unknown."""
    if start is None:
        return ""
    first = datetime.fromtimestamp(start, UTC)
    if hours == 24 and start % 86_400 == 0:
        return f" on {first:%Y-%m-%d}"
    last = datetime.fromtimestamp(start + hours * 3600, UTC)
    return f" from {first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC"


def idle_advice(job: str, kind: str, *, inferred: bool = True) -> str:
    """What to do about a workload's GPU-hours held without work: a serving workload's
    replicas are scaled, a job the emitter named is ended or shrunk, another released."""
    if is_serving(kind):
        return f"{idle_replicas_advice(job, kind)} {PAID}"
    if inferred:
        return RELEASE
    return (
        "Its ranks reported no training steps in these hours: end or shrink the job while it "
        f"does not train (a finished, hung or waiting job), or find what it waits on; {PAID}"
    )


def held_not_working(
    attribution: Attribution,
    *,
    gpu_hour_usd: float,
    window_hours: float,
    window_start: float | None = None,
    training_findings: Mapping[str, Sequence[str]] | None = None,
) -> list[Finding]:
    """One finding per (namespace, job) that held GPUs without work for at least an hour.
    Its summary names the window it covers (a whole UTC day: "on 2026-11-28"), since the run
    that finds it comes the morning after and a weekly figure sits beside it in the report.

    ``training_findings`` maps a job name to its training findings ("kind resource"); those
    about data-bound ranks or stragglers are linked: they price the hours the job stepped,
    which this finding leaves out (``stepping_gpu_hours``), and say what its ranks wait on."""
    linked = training_findings or {}
    when = _window(window_start, window_hours)
    findings = []
    for (namespace, job), pods in sorted(attribution.jobs().items()):
        hours = _job_hours(pods)
        idle = hours.get(HourClass.NOT_WORKING, 0.0)
        if idle < MIN_IDLE_GPU_HOURS:
            continue
        held = sum(hours.values())
        stepping = sum(p.stepping for p in pods)
        waste = idle * gpu_hour_usd
        ref = pods[0].job
        related = tuple(sorted(r for r in linked.get(job, ()) if r.split(" ", 1)[0] in CAUSES))
        how = "named by emitter.training" if not ref.inferred else f"inferred: {ref.kind}"
        sliced = any(p.time_sliced for p in pods)
        findings.append(
            Finding(
                kind=Kind.GPU_HELD_NOT_WORKING,
                resource=workload_resource(namespace, job, ref.kind),
                severity=Severity.WARNING if idle >= held / 2 else Severity.INFO,
                summary=(
                    f"{job} in {namespace} held GPUs for {held:.1f} GPU-hours{when}, "
                    f"{idle:.1f} of them without work (${waste:,.2f})"
                    + (
                        f"; it stepped in {stepping:.1f}, which its training findings price"
                        if stepping
                        else ""
                    )
                    + (" (time-sliced GPUs, split evenly between their pods)" if sliced else "")
                ),
                evidence={
                    "namespace": namespace,
                    "job": job,
                    "job_source": how,
                    "inferred": ref.inferred,
                    "held_gpu_hours": round(held, 3),
                    "not_working_gpu_hours": round(idle, 3),
                    "stepping_gpu_hours": round(stepping, 3),
                    "waste_in_window_usd": round(waste, 2),
                    "window_hours": window_hours,
                    "window_start": None
                    if window_start is None
                    else datetime.fromtimestamp(window_start, UTC).isoformat(),
                    "gpu_hour_usd": gpu_hour_usd,
                    "time_sliced": sliced,
                    "pods": sorted(p.pod for p in pods),
                    "gpus": sorted({f"{g.node}/{g.gpu}" for p in pods for g in p.gpus}),
                    "idle_hours": [
                        datetime.fromtimestamp(h, UTC).isoformat()
                        for h in sorted({h for p in pods for h in p.idle_hours})
                    ],
                },
                recommendation=idle_advice(job, ref.kind, inferred=ref.inferred),
                estimated_monthly_waste_usd=waste * HOURS_PER_MONTH / window_hours,
                analyzer=ANALYZER,
                related=related,
            )
        )
    return findings
