"""Failure analysis in a training run: for each job whose ``job_failed`` count rose in the
window (what the ``training_job_failures`` finding counts), the hours it failed (one hourly
read of that metric, for the failed jobs only), its pods' and nodes' Container Insights logs
around each (lambdas/training_analyzer/failure_logs.py), and one ``training_failure_cause``
finding per job, naming its latest failure's cause. Each failure read is also kept as a
``FailedRun`` (cause, signature, node, the GPU-hours of the run that failed) for the weekly
report to group across jobs, nodes and days.

Bounded: at most ``failure_log_jobs`` jobs are read a run (a shard of the fleet state
machine is a run), the most failures first; each job over it is named by an
``analysis_error`` finding, and at most ``FAILURES_PER_JOB`` of a job's failed hours (its
latest) are read. A job whose logs cannot be read is named the same way, and the other
jobs' findings stand. A failed job whose emitter named no pod is kept as an
``UnplacedFailure``, read once the GPU-hour attribution has placed its pods
(failure_placement.py)."""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_JOB,
    NAMESPACE_TRAINING,
    TrainingMetric,
)
from lambdas.shared.findings import AnalysisRun, Finding
from lambdas.shared.metric_fetcher import MetricDataError, MetricQuery, fetch
from lambdas.training_analyzer.analysis import RankStats
from lambdas.training_analyzer.failure_causes import classify_text
from lambdas.training_analyzer.failure_logs import (
    FailedPod,
    failure_cause_finding,
    failure_window,
    read_failure_log,
)

HOUR: Final = 3600
#: The failure_log_jobs setting's default: failed jobs whose logs one run reads. Each is a
#: few DescribeLogStreams and FilterLogEvents calls per failed hour, so 50 jobs keep a run's
#: reads to seconds; the rest are named, and the next day's run reads them if they fail again.
FAILURE_LOG_JOBS: Final = 50
#: A job's failed hours read at most (its latest): a crash loop fails every hour, and its
#: latest failures say what its earlier ones did.
FAILURES_PER_JOB: Final = 3

_AWS_ERRORS: Final = (ClientError, BotoCoreError)


class FailureLogsError(Exception):
    """A failed job's logs were not read; the message says why."""


@dataclass(frozen=True)
class FailedRun:
    """One failure of a job, as the weekly report groups it."""

    job: str
    #: The start of the hour it failed in (epoch seconds).
    at: float
    cause: str
    signature: str
    #: The nodes its deciding lines came from, else its pods' nodes.
    nodes: tuple[str, ...]
    #: GPU-hours of the run that failed: what its pods held after the job's previous failure
    #: and up to this one, in the GPU-hour attribution's day (failure_placement.py
    #: ``held_failures``); outside it, its GPUs x its stepping hours since the previous failure
    #: in the window (or the window's start), up to the failed hour.
    gpu_hours: float
    #: The job's failed hour before this one in the window (epoch seconds), read or not (a
    #: crash loop's earlier failures are not read): where the run that failed began. None for
    #: the window's first.
    since: float | None = None
    #: Priced at what its pods held (the GPU-hour attribution's figure), not its GPUs x its
    #: stepping hours: the figure the report keeps where daily files' lookbacks overlap.
    held: bool = False

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "nodes": list(self.nodes)}

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> "FailedRun":
        since = document.get("since")
        return cls(
            job=str(document["job"]),
            at=float(document["at"]),
            cause=str(document["cause"]),
            signature=str(document["signature"]),
            nodes=tuple(str(n) for n in document["nodes"]),
            gpu_hours=float(document["gpu_hours"]),
            since=None if since is None else float(since),
            held=bool(document.get("held", False)),
        )


@dataclass(frozen=True)
class UnplacedFailure:
    """A failed job the emitter named no pod for: read once the attribution has its pods."""

    job: str
    #: Its failed hours in the window (epoch seconds), ascending.
    hours: tuple[float, ...]
    #: Its own findings, as "kind resource", for its cause to link.
    links: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "hours": list(self.hours), "links": list(self.links)}

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> "UnplacedFailure":
        return cls(
            job=str(document["job"]),
            hours=tuple(float(h) for h in document["hours"]),
            links=tuple(str(link) for link in document["links"]),
        )


def failed_run_gpu_hours(
    stepping_hours: Iterable[float], failed_hours: Iterable[float], gpus: int
) -> dict[float, float]:
    """Each failed hour's run, in GPU-hours: the stepping hours after the previous failed hour
    and up to this one (the failed hour included: it stepped before it failed), x GPUs."""
    stepping = sorted(stepping_hours)
    runs: dict[float, float] = {}
    previous = float("-inf")
    for hour in sorted(set(failed_hours)):
        runs[hour] = gpus * sum(1 for h in stepping if previous < h <= hour)
        previous = hour
    return runs


def run_nodes(diagnosed: Sequence[str], pods: Sequence[FailedPod]) -> tuple[str, ...]:
    """The failure's nodes: those its deciding lines name, else its pods'. A host log's
    syslog ``host`` is the node's short name (``ip-10-0-1-23``) where Kubernetes names it by
    its private DNS name (``ip-10-0-1-23.ec2.internal``): the pod's node it is the label of
    is named instead, so one node is counted once."""
    full = {p.node.split(".", 1)[0]: p.node for p in pods}
    named = {full.get(node, node) for node in diagnosed}
    return tuple(sorted(named or {p.node for p in pods}))


def failure_hours_queries(cluster: str, jobs: Iterable[str]) -> list[MetricQuery]:
    dims = (DIM_CLUSTER, cluster)
    return [
        MetricQuery(
            (job,),
            NAMESPACE_TRAINING,
            str(TrainingMetric.JOB_FAILED),
            (dims, (DIM_JOB, job)),
            "Sum",
            HOUR,
        )
        for job in jobs
    ]


def failure_hours(
    cloudwatch: Any, cluster: str, jobs: Sequence[str], *, start: float, end: float
) -> dict[str, list[float]]:
    """Each job's hours with a failure, ascending; a series CloudWatch failed raises
    :class:`MetricDataError`."""
    hours: dict[str, list[float]] = {}
    for batch in fetch(cloudwatch, failure_hours_queries(cluster, jobs), start=start, end=end):
        for series in batch:
            if series.error:
                raise MetricDataError(f"{series.query.key[0]}: {series.error}")
            points = zip(series.timestamps, series.values, strict=True)
            hours[series.query.key[0]] = [t.timestamp() for t, v in points if v > 0]
    return hours


class FailureReads:
    """A run's failed jobs' reads: which jobs (at most ``max_jobs``, the most failures
    first), their failed hours (one hourly read for them all, up front), then each job's
    finding as the run reaches it (``explain``), so the cause follows the job's own findings
    in a whole run as in a shard."""

    def __init__(
        self,
        *,
        cloudwatch: Any,
        logs: Any,
        cluster: str,
        failures: dict[str, float],
        start: float,
        end: float,
        max_jobs: int,
        run: AnalysisRun,
        hours: dict[str, list[float]] | None = None,
    ) -> None:
        """``hours``: each failed job's failed hours where the caller has read them (the
        PromQL reader's hourly failures); otherwise read here from ``GpuInsights/Training``."""
        self.logs, self.cluster, self.total = logs, cluster, len(failures)
        self.max_jobs = max_jobs
        order = sorted(failures, key=lambda job: (-failures[job], job))
        self.read, self.over = set(order[:max_jobs]), set(order[max_jobs:])
        self.hours: dict[str, list[float]] = {}
        #: Failed jobs the emitter named no pod of: read after the GPU-hour attribution
        #: (failure_placement.py), which places their pods.
        self.unplaced: list[UnplacedFailure] = []
        if not self.read:
            return
        if hours is not None:
            self.hours = {job: hours.get(job, []) for job in sorted(self.read)}
            return
        try:
            self.hours = failure_hours(cloudwatch, cluster, sorted(self.read), start=start, end=end)
        except (*_AWS_ERRORS, MetricDataError) as err:
            run.skip(f"failed hours of {cluster}'s training jobs", err)
            self.read = set()

    def explain(
        self,
        job: str,
        ranks: Sequence[RankStats],
        stepping: Sequence[float],
        gpus: int,
        links: tuple[str, ...],
        run: AnalysisRun,
    ) -> list[FailedRun]:
        """The job's ``training_failure_cause`` on ``run`` (linked to ``links``, its findings),
        and its failed hours read; a job over the cap or whose logs cannot be read is named."""
        if job in self.over:
            run.skip(
                f"job/{job}",
                FailureLogsError(
                    f"failure logs not read: {self.total:,} jobs failed, over the "
                    f"failure_log_jobs setting's {self.max_jobs:,} a run"
                ),
            )
            return []
        job_hours = self.hours.get(job) if job in self.read else None
        if not job_hours:
            return []
        pods = [FailedPod(r.pod, r.node) for r in ranks if r.pod and r.node]
        if not pods:
            self.unplaced.append(UnplacedFailure(job, tuple(job_hours), links))
            return []
        costs = failed_run_gpu_hours(stepping, job_hours, gpus)
        try:
            found, runs = explain_job(self.logs, self.cluster, job, pods, job_hours, costs)
        except _AWS_ERRORS as err:
            run.skip(f"job/{job}", FailureLogsError(f"failure logs: {err}"))
            return []
        run.findings.append(replace(found, related=links))
        return runs


def explain_job(
    logs: Any,
    cluster: str,
    job: str,
    pods: list[FailedPod],
    job_hours: list[float],
    costs: Mapping[float, float],
) -> tuple[Finding, list[FailedRun]]:
    """The job's latest failed hours read and classified, each run priced at ``costs`` (its
    GPU-hours by failed hour); its finding is the latest's."""
    read = []
    failed = sorted(set(job_hours))
    before = dict(zip(failed, [None, *failed[:-1]], strict=True))
    for hour in job_hours[-FAILURES_PER_JOB:]:
        window_start, window_end = failure_window(hour, hour + HOUR)
        text, missing = read_failure_log(logs, cluster, pods, start=window_start, end=window_end)
        read.append((hour, classify_text(text), missing))
    runs = [
        FailedRun(
            job=job,
            at=hour,
            cause=diagnosis.cause.value,
            signature=diagnosis.signature,
            nodes=run_nodes(diagnosis.nodes, pods),
            gpu_hours=costs[hour],
            since=before.get(hour),
        )
        for hour, diagnosis, _ in read
    ]
    _, latest, missing = read[-1]
    finding = failure_cause_finding(job, latest, pods, missing=missing)
    evidence = {
        **finding.evidence,
        "failures": [
            {
                "failed_hour": datetime.fromtimestamp(r.at, UTC).isoformat(),
                "cause": r.cause,
                "signature": r.signature,
                "nodes": list(r.nodes),
                "gpu_hours": r.gpu_hours,
            }
            for r in runs
        ],
    }
    return replace(finding, evidence=evidence), runs
