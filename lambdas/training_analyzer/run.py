"""One training analysis: jobs, their hourly metrics in full batches, their ranks, their
nodes' GPUs, then findings job by job; a job that cannot be analyzed is named and skipped."""

import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lambdas.shared.events import attributed_day
from lambdas.shared.findings import AnalysisRun
from lambdas.shared.metric_fetcher import MetricDataError, fetch, window_period
from lambdas.shared.promql import PromQLClient, PromQLError
from lambdas.training_analyzer import promql_jobs
from lambdas.training_analyzer.analysis import (
    ANALYZER,
    GpuUsage,
    JobCost,
    JobData,
    JobSeries,
    RankStats,
    TrainingThresholds,
    active_hours,
    analyze_job,
    job_cost,
)
from lambdas.training_analyzer.aws import (
    RankQueryError,
    baseline_query,
    gpu_hours_promql,
    gpu_series,
    job_queries,
    list_jobs,
    rank_stats,
)
from lambdas.training_analyzer.failure_run import (
    FAILURE_LOG_JOBS,
    FailedRun,
    FailureReads,
    UnplacedFailure,
)
from lambdas.training_analyzer.goodput.findings import goodput_finding
from lambdas.training_analyzer.goodput.jobs import JobGoodput, job_goodput, within
from lambdas.training_analyzer.goodput.pending import classic_pending, job_pending, otel_pending
from lambdas.training_analyzer.job_gpus import GpuHourKey, job_gpu_hours

AWS_ERRORS = (ClientError, BotoCoreError)
#: What a read of the emitter's OTLP series may raise (promql_jobs.py).
PROMQL_ERRORS = (PromQLError, promql_jobs.JobQueryError)


@dataclass
class TrainingRun(AnalysisRun):
    analyzer: str = ANALYZER
    costs: dict[str, JobCost] = field(default_factory=dict)
    #: Pod name -> job, where the emitter reported its pod (exact GPU-hour attribution).
    pods: dict[str, str] = field(default_factory=dict)
    #: Pod name -> the node the emitter reported it on (the GPU analyzer's exact node join).
    pod_nodes: dict[str, str] = field(default_factory=dict)
    #: Each failed hour whose logs were read, for the weekly report's failures section.
    failures: list[FailedRun] = field(default_factory=list)
    #: Failed jobs whose emitter named no pod: read after the GPU-hour attribution places
    #: their pods (failure_placement.py).
    unplaced_failures: list[UnplacedFailure] = field(default_factory=list)
    #: Each job's goodput over the window, where its emitter splits its time (goodput/).
    goodput: dict[str, JobGoodput] = field(default_factory=dict)
    #: The same over the attributed day (the GPU-hour attribution's, handler.attributed_day),
    #: for the weekly report to add up day by day.
    day_goodput: dict[str, JobGoodput] = field(default_factory=dict)


def _job_series(
    cloudwatch: Any,
    cluster: str,
    jobs: Sequence[str],
    start: float,
    end: float,
    failed: dict[str, str],
    emitter_promql: PromQLClient | None = None,
) -> tuple[dict[str, JobSeries], dict[str, float]]:
    """Each job's series and baseline; a job with a series CloudWatch failed is in
    ``failed`` (with why), to be skipped rather than judged on missing points. With
    ``emitter_promql`` (the emitter sends OTLP), both read with PromQL (promql_jobs.py)."""
    lookback = int(end - start)
    if emitter_promql is not None:
        read = promql_jobs.job_series(
            emitter_promql, cluster, jobs, start=start, end=end, refused=failed
        )
        before = promql_jobs.baselines(
            emitter_promql, cluster, jobs, start=start, lookback_s=lookback, refused=failed
        )
        return read, before
    series = {job: JobSeries(job=job) for job in jobs}
    baselines: dict[str, float] = {}
    window = window_period(start, end)
    queries = [q for job in jobs for q in job_queries(cluster, job, window)]
    for batch in fetch(cloudwatch, queries, start=start, end=end):
        for result in batch:
            job, name = result.query.key
            if result.error:
                failed.setdefault(job, f"{name}: {result.error}")
            values = {
                t.timestamp(): v for t, v in zip(result.timestamps, result.values, strict=True)
            }
            setattr(series[job], name, values)
    earlier = [baseline_query(cluster, job, lookback) for job in jobs]
    for batch in fetch(cloudwatch, earlier, start=start - lookback, end=start):
        for result in batch:
            if result.error:
                failed.setdefault(result.query.key[0], f"baseline: {result.error}")
            elif result.values:
                baselines[result.query.key[0]] = statistics.fmean(result.values)
    return series, baselines


def _gpu_usage(
    cloudwatch: Any,
    cluster: str,
    nodes: dict[str, set[str]],
    hours: dict[str, list[float]],
    start: float,
    end: float,
    exporter_promql: PromQLClient | None = None,
    placed: Mapping[str, set[GpuHourKey]] | None = None,
) -> dict[str, GpuUsage]:
    """Per job: the mean of its GPUs over its active hours; the exporter's series read with
    ``exporter_promql`` where it sends OTLP, else from ``GpuInsights``. Its GPUs are those its
    own pods held whole hours of (``placed``: job_gpus.py, from Container Insights' pod
    series; a job whose pods held GPUs only in parts of hours has no figure). A job Container
    Insights placed none of (no pod series: the add-on not on its nodes, or its emitter names
    no pod) is judged on its nodes' GPUs in use (a GPU-hour with the exporter's allocated
    reading: a node's GPUs that no pod holds never count) that no other job's pods held: on a
    node it shares with pods Container Insights does not see, their GPUs mix in."""
    placed = placed or {}
    all_nodes = set().union(*nodes.values(), *({n for n, _, _ in p} for p in placed.values()))
    if not all_nodes:
        return {}
    per_gpu: dict[tuple[str, str, str], dict[float, float]] = {}
    if exporter_promql is not None:
        per_gpu = gpu_hours_promql(exporter_promql, cluster, all_nodes, start=start, end=end)
    else:
        for batch in fetch(
            cloudwatch, gpu_series(cloudwatch, cluster, all_nodes), start=start, end=end
        ):
            for result in batch:
                node, gpu, name = result.query.key
                read = per_gpu.setdefault((node, gpu, name), {})
                for t, v in zip(result.timestamps, result.values, strict=True):
                    read[t.timestamp()] = v
    taken = set().union(*placed.values())  # GPU-hours another job's pods held
    usage = {}
    for job, job_nodes in nodes.items():
        active = set(hours.get(job, []))
        mine = [(node, gpu, hour) for node, gpu, hour in placed.get(job, ()) if hour in active]
        in_use = mine or [
            (node, gpu, hour)
            for (node, gpu, name), read in per_gpu.items()
            if name == "power" and node in job_nodes and job not in placed
            for hour in read
            if hour in active and (node, gpu, hour) not in taken
        ]
        means = {}
        for name in ("power", "sm"):
            values = [
                per_gpu[(node, gpu, name)][hour]
                for node, gpu, hour in in_use
                if hour in per_gpu.get((node, gpu, name), {})
            ]
            means[name] = statistics.fmean(values) if values else None
        usage[job] = GpuUsage(power_utilization=means["power"], sm_active=means["sm"])
    return usage


def plan_jobs(
    cloudwatch: Any,
    logs: Any,
    cluster: str,
    start: float,
    end: float,
    run: TrainingRun,
    emitter_promql: PromQLClient | None = None,
) -> tuple[list[str], dict[str, list[RankStats]]]:
    """The jobs, in the order a run analyzes them, and their ranks (one Logs Insights query
    for the cluster; with ``emitter_promql``, the emitter sends OTLP, both read with PromQL);
    what cannot be read is skipped on ``run``, and ``run.pods`` is set."""
    try:
        if emitter_promql is not None:
            jobs = promql_jobs.list_jobs(emitter_promql, cluster, start=start, end=end)
        else:
            jobs = list_jobs(cloudwatch, cluster)
    except (*AWS_ERRORS, *PROMQL_ERRORS) as err:
        run.skip(f"training jobs of {cluster}", err)
        return [], {}
    ranks: dict[str, list[RankStats]] = {}
    try:
        if emitter_promql is not None:
            unread: dict[str, str] = {}
            ranks = promql_jobs.rank_stats(
                emitter_promql, cluster, jobs, start=start, end=end, refused=unread
            )
            for job, why in unread.items():
                run.skip(f"ranks of job/{job}", promql_jobs.JobQueryError(why))
        else:
            ranks = rank_stats(logs, cluster, start=start, end=end)
    except (*AWS_ERRORS, *PROMQL_ERRORS, RankQueryError) as err:
        # Without ranks, stragglers and GPU use cannot be judged; the other rules still can.
        run.skip(f"ranks of {cluster}'s training jobs", err)
    run.pods, run.pod_nodes = rank_pods(ranks)
    return jobs, ranks


def rank_pods(ranks: Mapping[str, Sequence[RankStats]]) -> tuple[dict[str, str], dict[str, str]]:
    """(pod -> job, pod -> node) of the pods the jobs' emitters named, and their nodes."""
    pods = {r.pod: job for job, rs in ranks.items() for r in rs if r.pod}
    nodes = {r.pod: r.node for rs in ranks.values() for r in rs if r.pod and r.node}
    return pods, nodes


def analyze_jobs(
    *,
    cloudwatch: Any,
    cluster: str,
    jobs: Sequence[str],
    ranks: dict[str, list[RankStats]],
    start: float,
    end: float,
    gpu_hour_usd: float,
    related_storage: tuple[str, ...] = (),
    thresholds: TrainingThresholds = TrainingThresholds(),  # noqa: B008
    run: TrainingRun | None = None,
    logs: Any = None,
    failure_log_jobs: int = FAILURE_LOG_JOBS,
    exporter_promql: PromQLClient | None = None,
    emitter_promql: PromQLClient | None = None,
    ksm_promql: PromQLClient | None = None,
    dcgm_promql: PromQLClient | None = None,
    classic_pods: bool = False,
) -> TrainingRun:
    """The jobs' findings and costs, job by job: a whole run's jobs or one shard's
    (lambdas/training_analyzer/fleet.py). Each job's findings depend on its own series, ranks
    and nodes only, so a shard finds for its jobs what the whole run finds for them. With a
    ``logs`` client, each failed job's cause is read from Container Insights' logs (at most
    ``failure_log_jobs`` jobs: lambdas/training_analyzer/failure_run.py) and follows the job's
    own findings, which it links. ``exporter_promql``: the exporter sends OTLP, so its GPUs'
    power and SM activity are read with PromQL (exporter_sink=otlp); ``emitter_promql``: the
    emitter sends OTLP, so the jobs' series are read with PromQL (promql_jobs.py). Their pods'
    pending time (goodput's waiting for GPUs: goodput/pending.py) is read from Kube State
    Metrics with ``ksm_promql`` (OTel mode), or with ``classic_pods`` from Container
    Insights' ``pod_status_pending``; the GPUs their pods held (job_gpus.py) from DCGM's series
    with ``dcgm_promql`` (OTel mode), or with ``classic_pods`` from Container Insights'
    ``pod_gpu_*``."""
    run = run if run is not None else TrainingRun()
    if not jobs:
        return run
    failed: dict[str, str] = {}
    try:
        series, baselines = _job_series(
            cloudwatch, cluster, jobs, start, end, failed, emitter_promql
        )
    except (*AWS_ERRORS, *PROMQL_ERRORS) as err:
        run.skip(f"training jobs of {cluster}", err)
        return run
    ranks = {job: ranks[job] for job in jobs if job in ranks}
    hours = {job: active_hours(s) for job, s in series.items()}
    day_hours = attributed_day(end)[:2]
    nodes = {job: {r.node for r in rs if r.node} for job, rs in ranks.items()}
    placed = _placed(cloudwatch, cluster, ranks, start, end, run, dcgm_promql, classic_pods)
    try:
        gpus = _gpu_usage(cloudwatch, cluster, nodes, hours, start, end, exporter_promql, placed)
    except (*AWS_ERRORS, PromQLError) as err:
        run.skip(f"GPU metrics of {cluster}'s training nodes", err)
        gpus = {}
    reads = _failure_reads(logs, cloudwatch, cluster, series, failed, start, end,
                           failure_log_jobs, run, hourly=emitter_promql is not None)  # fmt: skip
    waited = _pending(cloudwatch, cluster, ranks, start, end, run, ksm_promql, classic_pods)
    for job in jobs:
        if job in failed:
            run.skip(f"job/{job}", MetricDataError(failed[job]))
            continue
        data = JobData(
            series=series[job],
            ranks=ranks.get(job, []),
            gpu=gpus.get(job),
            baseline_samples_per_second=baselines.get(job),
            gpu_hour_usd=gpu_hour_usd,
            related_storage=related_storage,
            lookback_hours=(end - start) / 3600,
            window_end=end,
        )
        try:
            run.costs[job] = cost = job_cost(data)
            hours_waited = waited.get(job, {})
            goodput = job_goodput(data.series, gpus=cost.gpus, ranks=data.ranks,
                                  pending_gpu_seconds=sum(hours_waited.values()))  # fmt: skip
            day_waited = sum(v for h, v in hours_waited.items() if day_hours[0] <= h < day_hours[1])
            day = job_goodput(within(data.series, *day_hours), gpus=cost.gpus, ranks=data.ranks,
                              pending_gpu_seconds=day_waited)  # fmt: skip
            # Its failures' rate over the hours its goodput says it ran: one figure for the
            # time between failures (where restarts outnumber failures, goodput's is shorter).
            ran = goodput.mtbf_hours * goodput.failures if goodput and goodput.mtbf_hours else None
            found = analyze_job(replace(data, running_hours=ran), thresholds)
        except (ValueError, ZeroDivisionError, TypeError, statistics.StatisticsError) as err:
            run.skip(f"job/{job}", err)
            continue
        if day is not None:
            run.day_goodput[job] = day
        if goodput is not None:
            run.goodput[job] = goodput
            found += [f for f in [goodput_finding(goodput)] if f is not None]
        run.findings += found
        if reads is not None:
            links = tuple(f"{f.kind} {f.resource}" for f in found)
            run.failures += reads.explain(job, data.ranks, hours[job], cost.gpus, links, run)
    if reads is not None:
        run.unplaced_failures += reads.unplaced
    return run


def _placed(
    cloudwatch: Any,
    cluster: str,
    ranks: Mapping[str, Sequence[RankStats]],
    start: float,
    end: float,
    run: TrainingRun,
    dcgm_promql: PromQLClient | None,
    classic: bool,
) -> dict[str, set[GpuHourKey]]:
    """The GPU-hours each job's pods held whole (job_gpus.py); unreadable, named on ``run``
    and none, so each job is judged on its nodes' GPUs instead."""
    job_of_pod, pod_nodes = rank_pods(ranks)
    try:
        return job_gpu_hours(
            cloudwatch=cloudwatch, cluster=cluster, start=start, end=end, job_of_pod=job_of_pod,
            pod_nodes=pod_nodes, dcgm_promql=dcgm_promql, classic=classic,
        )  # fmt: skip
    except (*AWS_ERRORS, PromQLError) as err:
        run.skip(f"the GPUs {cluster}'s training pods held (Container Insights)", err)
        return {}


def _pending(
    cloudwatch: Any,
    cluster: str,
    ranks: dict[str, list[RankStats]],
    start: float,
    end: float,
    run: TrainingRun,
    ksm_promql: PromQLClient | None,
    classic: bool,
) -> dict[str, dict[float, float]]:
    """Each job's pending GPU-seconds by hour, its pods those its emitter named; a read that
    fails is skipped on ``run`` (the jobs' goodput then counts no waiting), never guessed."""
    pods = {r.pod: job for job, rs in ranks.items() for r in rs if r.pod}
    if not pods or (ksm_promql is None and not classic):
        return {}
    try:
        if ksm_promql is not None:
            read = otel_pending(ksm_promql, cluster, start=start, end=end)
        else:
            per_pod: dict[str, float] = defaultdict(float)
            for rs in ranks.values():
                for r in rs:
                    if r.pod:
                        per_pod[r.pod] += 1.0  # one rank a GPU
            read = classic_pending(cloudwatch, cluster, per_pod, start=start, end=end)
    except (*AWS_ERRORS, PromQLError, MetricDataError) as err:
        run.skip(f"pending pods of {cluster}'s training jobs", err)
        return {}
    return job_pending(read, pods)


def _failure_reads(
    logs: Any,
    cloudwatch: Any,
    cluster: str,
    series: dict[str, JobSeries],
    failed: dict[str, str],
    start: float,
    end: float,
    max_jobs: int,
    run: TrainingRun,
    hourly: bool = False,
) -> FailureReads | None:
    """The failed jobs' log reads (their ``job_failed`` total in the window at least one),
    without a ``logs`` client none. ``hourly``: ``series`` hold each hour's failures (the
    PromQL reader's), so their failed hours are not read again from CloudWatch."""
    if logs is None:
        return None
    failures = {
        job: total
        for job, s in series.items()
        if job not in failed and (total := sum(s.failures.values())) >= 1
    }
    hours = (
        {job: sorted(h for h, v in series[job].failures.items() if v > 0) for job in failures}
        if hourly
        else None
    )
    return FailureReads(
        cloudwatch=cloudwatch, logs=logs, cluster=cluster, failures=failures, start=start,
        end=end, max_jobs=max_jobs, run=run, hours=hours,
    )  # fmt: skip


def analyze_training(
    *,
    cloudwatch: Any,
    logs: Any,
    cluster: str,
    start: float,
    end: float,
    gpu_hour_usd: float,
    related_storage: tuple[str, ...] = (),
    thresholds: TrainingThresholds = TrainingThresholds(),  # noqa: B008
    failure_log_jobs: int = FAILURE_LOG_JOBS,
    exporter_promql: PromQLClient | None = None,
    emitter_promql: PromQLClient | None = None,
    ksm_promql: PromQLClient | None = None,
    dcgm_promql: PromQLClient | None = None,
    classic_pods: bool = False,
) -> TrainingRun:
    run = TrainingRun()
    jobs, ranks = plan_jobs(cloudwatch, logs, cluster, start, end, run, emitter_promql)
    return analyze_jobs(
        cloudwatch=cloudwatch, cluster=cluster, jobs=jobs, ranks=ranks, start=start, end=end,
        gpu_hour_usd=gpu_hour_usd, related_storage=related_storage, thresholds=thresholds,
        run=run, logs=logs, failure_log_jobs=failure_log_jobs, exporter_promql=exporter_promql,
        emitter_promql=emitter_promql, ksm_promql=ksm_promql, dcgm_promql=dcgm_promql,
        classic_pods=classic_pods,
    )  # fmt: skip
