"""Lambda entry point of the training analyzer, on an EventBridge schedule.

Its environment is declared in lambdas/training_analyzer/config.py and read at cold start.
"""

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import asdict
from datetime import UTC, date, datetime, time
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lambdas.shared.aws_clients import ClientCache
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.shared.events import attributed_day, scheduled_time
from lambdas.shared.findings import AnalysisRun, stamped
from lambdas.shared.promql import PromQLClient, promql_for
from lambdas.shared.publisher import (
    FindingsPublisher,
    PublishError,
    failure_queue_keeper,
    findings_key,
)
from lambdas.shared.report_keys import failures_key, goodput_key, gpu_hours_key, job_costs_key
from lambdas.shared.s3_objects import ListBucketDeniedError, read_object
from lambdas.shared.serving_table import encode as encode_serving
from lambdas.shared.serving_table import serving_key
from lambdas.training_analyzer import fleet
from lambdas.training_analyzer.analysis import ANALYZER
from lambdas.training_analyzer.config import TrainingConfig
from lambdas.training_analyzer.failure_placement import explain_unplaced, held_failures
from lambdas.training_analyzer.goodput.held import attributed_goodput, held_evidence
from lambdas.training_analyzer.gpu_hours.metrics import put_waste_metrics, waste_metric_data
from lambdas.training_analyzer.gpu_hours.run import GpuHoursRun, analyze_gpu_hours
from lambdas.training_analyzer.gpu_memory.run import analyze_gpu_memory
from lambdas.training_analyzer.run import TrainingRun, analyze_training
from lambdas.training_analyzer.serving.run import ServingRun, analyze_serving

log = logging.getLogger()
log.setLevel(logging.INFO)
_clients = ClientCache()
#: Storage findings that explain a data-bound job when they are about its sources.
STORAGE_CAUSES = {
    "ebs_throughput_saturated",
    "ebs_high_queue_length",
    "s3_high_latency",
    "s3_high_error_rate",
}


def training_window(end: float, lookback_days: int) -> tuple[float, float]:
    """``(start, end)`` of the training analysis a run at ``end`` makes: the lookback's whole
    UTC days that end where the GPU-hour attribution's day ends (``attributed_day``). A job's
    GPU-hours and dollars in its findings are then of the same hours as the attribution's
    table, the report and the GPU memory right-sizing, and a "1-day lookback" is a day of data:
    a window that ran past the data's last hour (a run at 07:00 over 07:00 to 07:00) counted
    the hours since midnight as a day's and priced 17 stepping hours a month at a day's pace."""
    _, day_end, _ = attributed_day(end)
    return day_end - lookback_days * 86_400, day_end


def _put_json(s3: Any, bucket: str, key: str, document: Any) -> None:
    _put_text(s3, bucket, key, json.dumps(document, sort_keys=True))


def _put_text(s3: Any, bucket: str, key: str, text: str) -> None:
    """A JSON document already encoded (the serving table's own ``encode``)."""
    try:
        s3.put_object(Bucket=bucket, Key=key, Body=text.encode(), ContentType="application/json")
    except (ClientError, BotoCoreError) as err:
        raise PublishError(f"writing s3://{bucket}/{key}: {err}") from err


def training_links(findings: Any) -> dict[str, list[str]]:
    """Each job's training findings as "kind resource", for the GPU findings to link."""
    links: dict[str, list[str]] = {}
    for f in findings:
        if f.resource.startswith("job/"):
            links.setdefault(f.resource.removeprefix("job/"), []).append(f"{f.kind} {f.resource}")
    return links


class StorageFindingsError(Exception):
    """The day's storage findings could not be read (not merely absent)."""


def related_storage(
    s3: Any, bucket: str, cluster: str, day: Any, sources: list[str]
) -> tuple[str, ...]:
    """The day's storage findings about the named data sources, as "kind resource".

    No storage analysis today (404) links nothing; a refusal or an S3 failure is raised, so
    the run says so instead of silently linking nothing."""
    if not sources:
        return ()
    key = findings_key(cluster, "storage", day)
    try:
        body = read_object(s3, bucket, key)
    except (ClientError, BotoCoreError, ListBucketDeniedError) as err:
        raise StorageFindingsError(f"s3://{bucket}/{key}: {err}") from err
    if body is None:
        return ()
    wanted = source_resources(sources)
    related = []
    for line in body.decode(errors="replace").splitlines():
        try:
            finding = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(finding, dict):
            continue
        resource = str(finding.get("resource", ""))
        if finding.get("kind") in STORAGE_CAUSES and resource in wanted:
            related.append(f"{finding['kind']} {resource}")
    return tuple(sorted(related))


def source_resources(sources: list[str]) -> frozenset[str]:
    """The finding resources that name the sources exactly: a volume id as itself, a bucket
    as itself and as its ARN (``arn:aws:s3:::NAME``, how the storage analyzer names it). A
    source ``data`` matches the bucket ``data`` only, never ``other-team-data``."""
    return frozenset(sources) | frozenset(f"arn:aws:s3:::{s}" for s in sources)


#: How a run gets its clients: the handler's cache, or the command line's (``gpu-insights
#: analyze``), by service name.
Clients = Callable[[str], Any]


def _related(
    config: TrainingConfig, day: Any, clients: Clients
) -> tuple[tuple[str, ...], TrainingRun]:
    """The storage findings to link, and the run that names a failure to read them (its
    skip comes after the jobs' findings: the jobs are analyzed; only the links are lost)."""
    bucket, cluster = config.report_bucket, config.cluster_name
    tail = TrainingRun()
    try:
        related = related_storage(clients("s3"), bucket, cluster, day, list(config.data_sources))
    except StorageFindingsError as err:
        related = ()
        tail.skip(f"s3://{bucket}/{findings_key(cluster, 'storage', day)}", err)
    return related, tail


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    """A whole run (the schedule's event), or, under the fleet state machine, its ``plan``,
    one ``shard`` or the ``merge`` (lambdas/training_analyzer/fleet.py), by ``event["mode"]``."""
    config = TrainingConfig.current()
    cluster, bucket, price = config.cluster_name, config.report_bucket, config.gpu_hour_usd
    start, end = training_window(scheduled_time(event).timestamp(), config.lookback_days)
    day = datetime.fromtimestamp(end, UTC).date()
    mode = event.get("mode")
    if mode == "plan":
        related, tail = _related(config, day, _clients)
        return fleet.plan(
            cloudwatch=_clients("cloudwatch"), logs=_clients("logs"), s3=_clients("s3"),
            bucket=bucket, cluster=cluster, day=day.isoformat(), start=start, end=end,
            related_storage=related, tail=tail, per_shard=config.shard_jobs,
            emitter_promql=emitter_promql(config, _clients),
        )  # fmt: skip
    if mode == "shard":
        return fleet.shard(
            s3=_clients("s3"), cloudwatch=_clients("cloudwatch"), bucket=bucket,
            cluster=cluster, day=day.isoformat(), index=int(event["index"]),
            first=int(event["first"]), count=int(event["count"]), start=start, end=end,
            gpu_hour_usd=price, logs=_clients("logs"), failure_log_jobs=config.failure_log_jobs,
            exporter_promql=exporter_promql(config, _clients),
            emitter_promql=emitter_promql(config, _clients),
            **pod_reads(config, _clients),
        )  # fmt: skip
    if mode == "merge":
        run = fleet.read_parts(
            s3=_clients("s3"), bucket=bucket, cluster=cluster, day=day.isoformat(),
            shards=len(event["shards"]),
        )  # fmt: skip
        return _publish(run, config, day, end)
    return _publish(analyze_jobs(config, _clients, start, end, day), config, day, end)


def analyze_jobs(
    config: TrainingConfig, clients: Clients, start: float, end: float, day: Any
) -> TrainingRun:
    """A whole run's reads (no shards): every job, its storage links. Read-only; the handler
    and ``gpu-insights analyze training`` both run it."""
    related, tail = _related(config, day, clients)
    run = analyze_training(
        cloudwatch=clients("cloudwatch"),
        logs=clients("logs"),
        cluster=config.cluster_name,
        start=start,
        end=end,
        gpu_hour_usd=config.gpu_hour_usd,
        related_storage=related,
        failure_log_jobs=config.failure_log_jobs,
        exporter_promql=exporter_promql(config, clients),
        emitter_promql=emitter_promql(config, clients),
        **pod_reads(config, clients),
    )
    run.findings += tail.findings
    run.skipped += tail.skipped
    return run


def pod_reads(config: TrainingConfig, clients: Clients) -> dict[str, Any]:
    """Where the jobs' pods' pending time (goodput/pending.py) and the GPUs they held
    (job_gpus.py) are read: Kube State Metrics' and DCGM's series with PromQL in OTel mode,
    Container Insights' ``pod_status_pending`` and ``pod_gpu_*`` in Classic."""
    if config.container_insights_mode is ContainerInsightsMode.OTEL:
        promql = promql_for(clients("cloudwatch"))
        return {"ksm_promql": promql, "dcgm_promql": promql}
    return {"classic_pods": True}


def emitter_promql(config: TrainingConfig, clients: Clients) -> PromQLClient | None:
    """The PromQL client the training emitter's series are read with where it sends OTLP
    (``config.emitter_otlp``), else None (they are ``GpuInsights/Training`` metrics and the
    training log group's documents)."""
    return promql_for(clients("cloudwatch")) if config.emitter_otlp else None


def attribute_gpu_hours(
    run: TrainingRun, config: TrainingConfig, clients: Clients, end: float
) -> tuple[GpuHoursRun, float, date]:
    """The GPU-hour attribution of the last whole UTC day before ``end``, linking the jobs'
    training findings of ``run``, as ``(run, day start, day)``; ``run``'s goodput is then
    against what the attribution says each job held (goodput/held.py). Reads only."""
    gpu_start, gpu_end, gpu_day = attributed_day(end)
    cloudwatch = clients("cloudwatch")
    otel = config.container_insights_mode is ContainerInsightsMode.OTEL
    gpu_run = analyze_gpu_hours(
        cloudwatch=cloudwatch,
        cluster=config.cluster_name,
        start=gpu_start,
        end=gpu_end,
        gpu_hour_usd=config.gpu_hour_usd,
        exact_jobs=run.pods,
        pod_nodes=run.pod_nodes,
        training_findings=training_links(run.findings),
        thresholds=config.gpu_thresholds,
        promql=promql_for(cloudwatch) if otel else None,
        exporter_otlp=config.exporter_otlp,
        emitter_otlp=config.emitter_otlp,
    )
    # The day's goodput over what the attribution says each job's pods held (goodput/held.py).
    attributed_goodput(run, gpu_run.held_jobs, one_day=config.lookback_days == 1)
    return gpu_run, gpu_start, gpu_day


def exporter_promql(config: TrainingConfig, clients: Clients) -> PromQLClient | None:
    """The PromQL client the exporter's series are read with where it sends OTLP, else None
    (they are ``GpuInsights`` metrics)."""
    return promql_for(clients("cloudwatch")) if config.exporter_otlp else None


def place_failures(
    run: TrainingRun, gpu_run: GpuHoursRun, config: TrainingConfig, clients: Clients, day: date
) -> None:
    """The failed jobs no emitter named a pod of, read from the logs of the pods the GPU-hour
    attribution of ``day`` placed (lambdas/training_analyzer/failure_placement.py): their
    causes join ``run``'s findings and their failed runs its failures. Then the day's failed
    runs are priced at what their pods held, and, where the findings' window is that day
    (a 1-day lookback), each job's training findings say what its pods held. Read-only."""
    _read_unplaced(run, gpu_run, config, clients, day)
    start = datetime.combine(day, time(), UTC).timestamp()
    held_day = range(int(start), int(start) + 86_400)
    window_start, _ = training_window(held_day.stop, config.lookback_days)
    run.failures = held_failures(run, run.failures, gpu_run.held_jobs, held_day, window_start)
    if config.lookback_days == 1:
        held_evidence(run, gpu_run.held_jobs)


def _read_unplaced(
    run: TrainingRun, gpu_run: GpuHoursRun, config: TrainingConfig, clients: Clients, day: date
) -> None:
    if not run.unplaced_failures:
        return
    run.failures += explain_unplaced(
        clients("logs"),
        config.cluster_name,
        run.unplaced_failures,
        gpu_run.held_jobs,
        run,
        day=day.isoformat(),
    )
    run.unplaced_failures = []


def right_size_memory(
    run: TrainingRun,
    config: TrainingConfig,
    clients: Clients,
    end: float,
    placed: Mapping[str, str],
) -> AnalysisRun:
    """The jobs' GPU memory over the lookback's whole UTC days that end where the GPU-hour
    attribution's day ends (the attributed day itself at a 1-day lookback), with the pods and
    nodes the emitter reported in ``run`` (and, for the other pods, the nodes the GPU-hour
    attribution ``placed`` them on). The same hours as the attribution's: the GPU-hours a
    right-sizing prices are those the attribution says the job held, not a window 7 hours
    later that reads a different count of the same notebook's hours. Read-only."""
    cloudwatch = clients("cloudwatch")
    otel = config.container_insights_mode is ContainerInsightsMode.OTEL
    start, day_end = training_window(end, config.lookback_days)
    return analyze_gpu_memory(
        cloudwatch=cloudwatch,
        cluster=config.cluster_name,
        start=start,
        end=day_end,
        gpu_hour_usd=config.gpu_hour_usd,
        thresholds=config.memory_thresholds,
        exact_jobs=run.pods,
        pod_nodes={**placed, **run.pod_nodes},
        promql=promql_for(cloudwatch) if otel else None,
    )


def serve_day(
    config: TrainingConfig, clients: Clients, gpu_run: GpuHoursRun, start: float, day: date
) -> ServingRun:
    """The inference servers' ``day`` (the GPU-hour attribution's, from ``start``), priced
    with that attribution's workloads. OTel mode only (serving/run.py); Classic's is empty
    and unread. Read-only."""
    if config.container_insights_mode is not ContainerInsightsMode.OTEL:
        return ServingRun()
    return analyze_serving(
        promql_for(clients("cloudwatch")),
        config.cluster_name,
        start=start,
        end=start + 86_400,
        day=day,
        workloads=gpu_run.workloads,
        gpu_hour_usd=config.gpu_hour_usd,
    )


def _publish(run: TrainingRun, config: TrainingConfig, day: Any, end: float) -> dict[str, Any]:
    """What runs once for the day, after every job is analyzed (in one run or merged from
    shards): the GPU-hour attribution of the whole cluster, the daily files, the findings."""
    cluster, bucket = config.cluster_name, config.report_bucket
    gpu_run, gpu_start, gpu_day = attribute_gpu_hours(run, config, _clients, end)
    place_failures(run, gpu_run, config, _clients, gpu_day)
    memory_run = right_size_memory(run, config, _clients, end, gpu_run.pod_nodes)
    serving_run = serve_day(config, _clients, gpu_run, gpu_start, gpu_day)
    findings = stamped(
        [*run.findings, *gpu_run.findings, *memory_run.findings, *serving_run.findings],
        cluster,
        end,
    )
    # Every job's cost, found or not, for the weekly report's costliest jobs, and the day's
    # GPU-hours by class. Written before the findings are published: the events and counts
    # are not idempotent, so they go out only once every S3 write has succeeded, and a
    # retried run does not send them twice.
    costs = {job: asdict(cost) for job, cost in run.costs.items()}
    _put_json(_clients("s3"), bucket, job_costs_key(cluster, day), costs)
    # The failed runs read, for the weekly report's failures section to group.
    failed = {"failures": [f.to_json() for f in run.failures]}
    _put_json(_clients("s3"), bucket, failures_key(cluster, day), failed)
    if gpu_run.table:
        _put_json(_clients("s3"), bucket, gpu_hours_key(cluster, gpu_day), gpu_run.table)
    # Each job's goodput over the attributed day, for the weekly report to add up.
    goodput = {"day": gpu_day.isoformat(), "jobs": [g.to_json() for g in run.day_goodput.values()]}
    _put_json(_clients("s3"), bucket, goodput_key(cluster, gpu_day), goodput)
    if serving_run.read:
        # The day's serving table (lambdas/shared/serving_table.py), for the weekly report.
        serving = encode_serving(gpu_day, serving_run.rows)
        _put_text(_clients("s3"), bucket, serving_key(cluster, gpu_day), serving)
    published = FindingsPublisher(
        s3=_clients("s3"),
        events=_clients("events"),
        cloudwatch=_clients("cloudwatch"),
        bucket=bucket,
        event_bus=config.event_bus,
        cluster=cluster,
        analyzer=ANALYZER,
        keep=failure_queue_keeper(_clients, config.failure_queue_url),
    ).publish(findings, day)
    if gpu_run.table:
        put_waste_metrics(
            _clients("cloudwatch"), waste_metric_data(gpu_run.table, cluster, gpu_start)
        )
    summary = {
        "jobs": len(run.costs),
        "gpu_hours": sum(c.gpu_hours for c in run.costs.values()),
        "findings": len(findings),
        "gpu_hours_by_class": gpu_run.table.get("classes", {}),
        "failures_read": len(run.failures),
        # A count: the merge's output is a Step Functions state (at most 256 KiB); each
        # skipped resource is named by its analysis_error finding in the file at ``key``.
        "skipped": len(run.skipped) + len(memory_run.skipped) + len(serving_run.skipped),
        "serving_rows": len(serving_run.rows),
        "key": published.key,
    }
    log.info("training analysis done: %s", summary)
    return summary
