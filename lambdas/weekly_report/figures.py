"""The report's figures from plain inputs: pure, so a test can check every number."""

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any, Final

from lambdas.weekly_report.actions import week_actions
from lambdas.weekly_report.funnel_section import goodput_splits, week_funnel
from lambdas.weekly_report.job_waste import job_rows
from lambdas.weekly_report.memory_section import memory_rows
from lambdas.weekly_report.waste import CLASSES

#: Decimal places of a job's daily throughput (samples a second) in the report.
THROUGHPUT_DIGITS: Final = 6
#: Decimal places of a day's mean power and SM activity (percent) in the report: the two modes'
#: readers (Classic's CloudWatch Average, OTel mode's PromQL sums over counts) add the same
#: samples in another order, which shows in a float's last digits only.
PERCENT_DIGITS: Final = 6


def _percent(value: float | None) -> float | None:
    return None if value is None else round(value, PERCENT_DIGITS)


@dataclass(frozen=True)
class GpuDay:
    """The exporter's day: mean power and SM activity, weighted by the GPU-hours its samples
    cover (``sampled_gpu_hours``). The report's GPU-hour figures are the attribution's
    (``waste``), not these weights: a lost GPU publishes no power samples."""

    day: date
    sampled_gpu_hours: float
    power_utilization: float | None
    sm_active: float | None


@dataclass(frozen=True)
class FindingFiles:
    findings: list[dict[str, Any]]
    #: Lines that were not a finding (bad JSON, not an object, no kind): counted and shown.
    malformed: int = 0
    files: int = 0


def read_findings(texts: Iterable[str]) -> FindingFiles:
    findings: list[dict[str, Any]] = []
    malformed = files = 0
    for text in texts:
        files += 1
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                malformed += 1
                continue
            if not isinstance(record, dict) or finding_problem(record) is not None:
                malformed += 1
                continue
            findings.append(record)
    return FindingFiles(findings, malformed, files)


def _number_or_none(value: object) -> bool:
    return value is None or (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    )


def finding_problem(record: dict[str, Any]) -> str | None:
    """What makes a finding line unusable for the report (None when it is fine): the report
    sorts and sums by these fields, so each must have its documented type."""
    if not isinstance(record.get("kind"), str):
        return "kind is not a string"
    for name in ("resource", "severity"):
        if not isinstance(record.get(name, ""), str):
            return f"{name} is not a string"
    if not _number_or_none(record.get("estimated_monthly_waste_usd")):
        return "estimated_monthly_waste_usd is not a finite number"
    evidence = record.get("evidence")
    if evidence is not None and not isinstance(evidence, dict):
        return "evidence is not an object"
    if evidence and not _number_or_none(evidence.get("waste_in_lookback_usd")):
        return "evidence.waste_in_lookback_usd is not a finite number"
    return None


@dataclass(frozen=True)
class JobCosts:
    """The training analyzer's job costs: job name to figures (``dollars``, ...)."""

    costs: dict[str, dict[str, float]] = field(default_factory=dict)
    #: Entries skipped (not an object of finite numbers), or 1 for a file that is not JSON.
    malformed: int = 0


def read_job_costs(body: bytes | None) -> JobCosts:
    """Parse ``training-jobs.json``; what cannot be read is skipped and counted, never raised."""
    if body is None:
        return JobCosts()
    try:
        document = json.loads(body)
    except ValueError:  # not JSON, or not UTF-8
        return JobCosts(malformed=1)
    if not isinstance(document, dict):
        return JobCosts(malformed=1)
    costs: dict[str, dict[str, float]] = {}
    malformed = 0
    for job, figures in document.items():
        if isinstance(figures, dict) and all(
            _number_or_none(v) and v is not None for v in figures.values()
        ):
            costs[job] = {str(k): float(v) for k, v in figures.items()}
        else:
            malformed += 1
    return JobCosts(costs, malformed)


@dataclass
class WeekFigures:
    cluster: str
    week: str
    #: Every GPU-hour of the week: the sum of ``gpu_hour_classes``.
    gpu_hours: float = 0.0
    #: GPU-hours by class (not held, held and working, held but not working, lost or faulted)
    #: and their cost: the waste table's own figures (lambdas/weekly_report/waste.py).
    gpu_hour_classes: dict[str, float] = field(default_factory=dict)
    gpu_hour_cost_usd: dict[str, float] = field(default_factory=dict)
    power_utilization: float | None = None
    sm_active: float | None = None
    days: list[dict[str, Any]] = field(default_factory=list)
    xids: list[dict[str, Any]] = field(default_factory=list)
    alarms: list[dict[str, Any]] = field(default_factory=list)
    findings_by_kind: dict[str, int] = field(default_factory=dict)
    findings_by_severity: dict[str, int] = field(default_factory=dict)
    top_findings: list[dict[str, Any]] = field(default_factory=list)
    #: What to do this week: the priced actions worth the most, each GPU-hour priced once
    #: (lambdas/weekly_report/actions.py), and what all the week's priced actions add up to.
    actions: list[dict[str, Any]] = field(default_factory=list)
    priced_waste_usd: float = 0.0
    #: Training jobs, the costliest held first, and the jobs that wasted most: rows of
    #: ``job_rows`` (lambdas/weekly_report/job_waste.py), the same figures in both.
    costliest_jobs: list[dict[str, Any]] = field(default_factory=list)
    most_wasteful_jobs: list[dict[str, Any]] = field(default_factory=list)
    #: None where no storage analysis ran in the week (no figure, not zero: next week's
    #: change says "new", not "up").
    storage_waste_usd: float | None = 0.0
    throughput_by_job: dict[str, list[float | None]] = field(default_factory=dict)
    malformed_finding_lines: int = 0
    finding_files: int = 0
    #: Entries of the job-costs file that were skipped (1 for a file that is not JSON).
    malformed_job_costs: int = 0
    previous: dict[str, float | None] = field(default_factory=dict)
    #: GPU-hours by class and who held GPUs without work (lambdas/weekly_report/waste.py).
    waste: dict[str, Any] = field(default_factory=dict)
    #: Jobs near their GPUs' memory or fitting a MIG profile (memory_section.memory_rows).
    memory_jobs: list[dict[str, Any]] = field(default_factory=list)
    #: The week's failed runs, their causes and recurring signatures
    #: (failures_section.failure_figures).
    failures: dict[str, Any] = field(default_factory=dict)
    #: Inference serving per model and workload, its price per million output tokens this
    #: week and last, and its findings (serving_section.serving_figures); empty: none read.
    serving: dict[str, Any] = field(default_factory=dict)
    #: The served models whose traffic drifted this week (drift_section.drift_figures).
    drift: list[dict[str, Any]] = field(default_factory=list)
    #: The GPU-hour funnel: paid, allocated, active, productive, each drop named
    #: (funnel_section.week_funnel).
    funnel: dict[str, Any] = field(default_factory=dict)
    #: The training jobs' week of goodput: fleet, by size, by job (goodput_section.py).
    goodput: dict[str, Any] = field(default_factory=dict)
    #: The worst nodes over the last 30 days, with what to do (lemon_section.lemon_figures).
    lemons: dict[str, Any] = field(default_factory=dict)

    def change(self, name: str) -> float | None:
        """This week's headline figure minus last week's, where both exist."""
        before = self.previous.get(name)
        now = headline(self).get(name)
        return None if before is None or now is None else float(now) - float(before)

    @property
    def has_data(self) -> bool:
        return bool(
            self.gpu_hours
            or self.power_utilization is not None
            or self.top_findings
            or self.findings_by_kind
            or self.xids
        )

    def to_dict(self) -> dict[str, Any]:
        document = asdict(self)
        document["change"] = {k: self.change(k) for k in self.previous}
        return document


SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
#: How many actions open the report.
ACTIONS = 5


def _latest_per_resource(findings: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The analyzers run daily and repeat a lasting problem: keep each (kind, resource) once,
    from its latest day."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for f in sorted(findings, key=lambda f: str(f.get("detected_at", ""))):
        latest[(str(f["kind"]), str(f.get("resource", "")))] = f
    return list(latest.values())


def _namespace_waste(waste: dict[str, Any], jobs: Sequence[dict[str, Any]]) -> None:
    """Each namespace's waste in its two parts: held without work (the attribution's) and
    waiting while stepping (its jobs' training findings priced on the week, a job over several
    namespaces split evenly), and ``waste_usd``, their sum: what the jobs' rows add up to."""
    waiting: dict[str, float] = {}
    for job in jobs:
        spaces = job["namespaces"]
        for namespace in spaces:
            waiting[namespace] = waiting.get(namespace, 0.0) + job["waiting_usd"] / len(spaces)
    for row in waste.get("namespaces", []):
        row["waiting_while_stepping_usd"] = round(waiting.get(row["namespace"], 0.0), 2)
        row["waste_usd"] = round(
            float(row.get("held_not_working_usd") or 0.0) + row["waiting_while_stepping_usd"], 2
        )


def week_figures(
    *,
    cluster: str,
    week: str,
    gpu_days: Sequence[GpuDay],
    xids: Sequence[tuple[str, str, float]],
    alarms: Sequence[tuple[str, str]],
    files: FindingFiles,
    job_costs: dict[str, dict[str, float]],
    throughput: dict[str, list[float | None]],
    waste: dict[str, Any] | None = None,
    previous: dict[str, float | None] | None = None,
    storage_analyzed: bool = True,
    served: dict[tuple[str, str], float] | None = None,
    goodput: dict[str, Any] | None = None,
) -> WeekFigures:
    """``waste`` is the week's attribution (``week_waste``): the only source of GPU-hours.
    ``storage_analyzed``: a storage analysis ran in the week (a storage findings file, empty or
    not); without one the week has no storage figure. ``goodput``: the training jobs' week of
    goodput (goodput_section.goodput_figures), the funnel's productive stage where it has the
    job."""
    figures = WeekFigures(cluster=cluster, week=week, previous=previous or {}, waste=waste or {})
    figures.goodput = goodput or {}
    figures.gpu_hour_classes = dict(figures.waste.get("classes") or {})
    figures.gpu_hour_cost_usd = dict(figures.waste.get("cost_usd") or {})
    figures.gpu_hours = round(sum(figures.gpu_hour_classes.values()), 2)
    weights = [(d.power_utilization, d.sm_active, d.sampled_gpu_hours) for d in gpu_days]
    hours = sum(w for p, _, w in weights if p is not None)
    if hours:
        figures.power_utilization = sum(p * w for p, _, w in weights if p is not None) / hours
    sm_hours = sum(w for _, s, w in weights if s is not None)
    if sm_hours:
        figures.sm_active = sum(s * w for _, s, w in weights if s is not None) / sm_hours
    attributed = {str(d["day"]): d for d in figures.waste.get("by_day", [])}
    figures.days = []
    for d in gpu_days:
        classes = {k: v for k, v in attributed.get(d.day.isoformat(), {}).items() if k != "day"}
        figures.days.append(
            {
                "day": d.day.isoformat(),
                "gpu_hours": round(sum(classes.values()), 2),
                **{str(c): classes.get(str(c), 0.0) for c in CLASSES},
                "power_utilization": _percent(d.power_utilization),
                "sm_active": _percent(d.sm_active),
            }
        )
    figures.xids = [
        {"node": node, "code": code, "count": count}
        for node, code, count in sorted(xids, key=lambda x: (-x[2], x[0], x[1]))
    ]
    figures.alarms = [{"alarm": name, "time": when} for name, when in alarms]
    unique = _latest_per_resource(files.findings)
    figures.findings_by_kind = dict(Counter(str(f["kind"]) for f in unique).most_common())
    figures.findings_by_severity = dict(Counter(str(f.get("severity", "info")) for f in unique))
    figures.top_findings = sorted(
        unique,
        key=lambda f: (
            SEVERITY_ORDER.get(str(f.get("severity")), 3),
            -(f.get("estimated_monthly_waste_usd") or 0.0),
        ),
    )[:10]
    figures.storage_waste_usd = (
        sum(
            f.get("estimated_monthly_waste_usd") or 0.0
            for f in unique
            if str(f["kind"]).startswith(("ebs_", "s3_"))
        )
        if storage_analyzed
        else None
    )
    splits = goodput_splits(figures.goodput)
    jobs = job_rows(figures.waste, unique, job_costs, splits)
    _namespace_waste(figures.waste, jobs)
    every = week_actions(figures.waste, jobs, unique, files.findings)
    figures.actions = every[:ACTIONS]
    figures.priced_waste_usd = round(sum(a["usd"] for a in every), 2)
    if figures.waste:
        figures.funnel = week_funnel(figures.waste, jobs, served, splits)
    # The training jobs: the week's held GPU-hours where the attribution has them, the rest by
    # the training analyzer's own cost of them (its lookback), which only orders them.
    training = [j for j in jobs if not j["inferred"] and j["job"] in job_costs]
    figures.costliest_jobs = sorted(
        training,
        key=lambda j: (
            -(j["held_usd"] or 0.0),
            -job_costs[j["job"]].get("dollars", 0.0),
            j["job"],
        ),
    )[:5]
    figures.most_wasteful_jobs = [j for j in jobs if j["waste_usd"] > 0][:5]
    # Samples a second to the millionth: a day's mean is a sum of thousands of flushes, whose
    # last digits move with the order CloudWatch or PromQL adds them in.
    figures.throughput_by_job = {
        job: [None if v is None else round(v, THROUGHPUT_DIGITS) for v in days]
        for job, days in throughput.items()
    }
    figures.memory_jobs = memory_rows(unique)
    figures.malformed_finding_lines = files.malformed
    figures.finding_files = files.files
    return figures


def class_key(cls: str) -> str:
    """A GPU-hour class's headline name (``held_not_working_gpu_hours``)."""
    return f"{cls}_gpu_hours"


#: The figures next week's report compares against: the GPU-hours, each class's, and the rest.
HEADLINE = (
    "gpu_hours",
    *(class_key(c) for c in CLASSES),
    "power_utilization",
    "sm_active",
    "storage_waste_usd",
)


def headline(figures: WeekFigures) -> dict[str, float | None]:
    classes = {class_key(c): figures.gpu_hour_classes.get(str(c)) for c in CLASSES}
    plain = {n: getattr(figures, n) for n in HEADLINE if n not in classes}
    return {name: classes[name] if name in classes else plain[name] for name in HEADLINE}
