"""Lambda entry point of the weekly report, on a weekly EventBridge schedule (Monday morning).

Its environment is declared in lambdas/weekly_report/config.py and read at cold start.
The report for an ISO week lives at reports/cluster=<c>/week=<YYYY-Www>/report.{html,json}; a
rerun replaces it, and a marker object makes sure the SNS summary goes out once per week.
"""

import json
import logging
from datetime import date, timedelta
from typing import Any

from gpu_insights_agent.contract.metrics import ExporterSink
from lambdas.shared.aws_clients import ClientCache
from lambdas.shared.events import scheduled_time
from lambdas.shared.promql import promql_for
from lambdas.shared.report_keys import failures_key, goodput_key, gpu_hours_key, job_costs_key
from lambdas.shared.s3_objects import object_exists, read_object
from lambdas.training_analyzer.goodput.lemon import WINDOW_DAYS as LEMON_DAYS
from lambdas.weekly_report.aws import (
    alarms_raised,
    fail_slow_counts,
    finding_texts,
    gpu_days,
    gpu_days_promql,
    job_costs,
    serving_days,
    throughput_by_job,
    throughput_by_job_promql,
    xid_counts,
    xid_counts_promql,
)
from lambdas.weekly_report.config import ReportConfig
from lambdas.weekly_report.drift_section import drift_figures
from lambdas.weekly_report.failures_section import (
    FAILURES_CSV,
    failure_figures,
    failures_csv,
    week_runs,
)
from lambdas.weekly_report.figures import (
    HEADLINE,
    GpuDay,
    JobCosts,
    headline,
    read_findings,
    week_figures,
)
from lambdas.weekly_report.funnel_section import FUNNEL_CSV, funnel_csv, served_gpu_hours
from lambdas.weekly_report.goodput_section import GOODPUT_CSV, goodput_csv, goodput_figures
from lambdas.weekly_report.lemon_section import lemon_figures, node_records, seen_nodes
from lambdas.weekly_report.memory_section import MEMORY_CSV, memory_csv
from lambdas.weekly_report.render import html_report, text_summary
from lambdas.weekly_report.serving_section import (
    SERVING_CSV,
    has_serving,
    serving_csv,
    serving_figures,
)
from lambdas.weekly_report.waste import waste_csv, week_waste
from lambdas.weekly_report.week import days, epoch, iso_week_name, report_week, run_days

log = logging.getLogger()
log.setLevel(logging.INFO)
_clients = ClientCache()
#: The storage analyzer's findings file (lambdas/storage_analyzer/ebs_analysis.py ANALYZER; not
#: imported: that package is not in this function's asset).
STORAGE_ANALYZER = "storage"
#: How long the presigned link works (it also ends when the function's session does).
LINK_SECONDS = 12 * 3600


def report_prefix(cluster: str, week: str) -> str:
    return f"reports/cluster={cluster}/week={week}/"


def _document(s3: Any, bucket: str, key: str) -> dict[str, Any] | None:
    body = read_object(s3, bucket, key)
    try:
        document = json.loads(body) if body is not None else None
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def exporter_days(config: ReportConfig, cloudwatch: Any, start: date, end: date) -> list[GpuDay]:
    """The week's GPU days from the exporter's series: its OTLP series with PromQL where it
    sends OTLP (exporter_sink=otlp), else its ``GpuInsights`` metrics."""
    interval = float(config.exporter_interval_seconds)
    if config.exporter_sink is ExporterSink.OTLP:
        return gpu_days_promql(promql_for(cloudwatch), config.cluster_name, start, end, interval)
    return gpu_days(cloudwatch, config.cluster_name, start, end, interval)


def exporter_xids(
    config: ReportConfig, cloudwatch: Any, start: date, end: date
) -> list[tuple[str, str, float]]:
    """The week's XIDs per node and code, read where ``exporter_days`` reads."""
    if config.exporter_sink is ExporterSink.OTLP:
        return xid_counts_promql(promql_for(cloudwatch), config.cluster_name, start, end)
    return xid_counts(cloudwatch, config.cluster_name, start, end)


def exporter_throughput(
    config: ReportConfig, cloudwatch: Any, start: date, end: date
) -> dict[str, list[float | None]]:
    """The jobs' daily throughput from the training emitter's series, read where
    ``exporter_days`` reads (the emitter sends OTLP with the exporter: exporter_sink=otlp)."""
    if config.exporter_sink is ExporterSink.OTLP:
        return throughput_by_job_promql(promql_for(cloudwatch), config.cluster_name, start, end)
    return throughput_by_job(cloudwatch, config.cluster_name, start, end)


def week_lemons(
    config: ReportConfig, s3: Any, cloudwatch: Any, tables: dict[str, Any], end: date
) -> dict[str, Any]:
    """The lemon nodes over the 30 days that end with the week (lemon_section.py): the days'
    GPU-hour tables (the week's already read: ``tables``), the failed runs of their failure
    files and the exporter's XIDs."""
    cluster, bucket = config.cluster_name, config.report_bucket
    since = end - timedelta(days=LEMON_DAYS)
    read = (
        tables.get(d.isoformat()) or _document(s3, bucket, gpu_hours_key(cluster, d))
        for d in days(since, end)
    )
    days_tables = [t for t in read if t]
    runs = week_runs(
        (_document(s3, bucket, failures_key(cluster, d)) for d in run_days(since, end)),
        start=epoch(since),
        end=epoch(end),
    )
    xids = exporter_xids(config, cloudwatch, since, end)
    slows = fail_slow_counts(cloudwatch, cluster, seen_nodes(days_tables), since, end)
    return lemon_figures(node_records(days_tables, runs, xids, slows))


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    config = ReportConfig.current()
    cluster, bucket = config.cluster_name, config.report_bucket
    start, end = report_week(scheduled_time(event))
    week = iso_week_name(start)
    s3, cloudwatch = _clients("s3"), _clients("cloudwatch")
    analyzers: set[str] = set()
    files = read_findings(finding_texts(s3, bucket, cluster, run_days(start, end), analyzers))
    # The training analyzer writes every job's cost daily; the latest run of the week holds
    # the whole lookback.
    costs = JobCosts()
    for day in reversed(run_days(start, end)):
        costs = job_costs(s3, bucket, job_costs_key(cluster, day))
        if costs.costs or costs.malformed:
            break
    price = config.gpu_hour_usd
    last_week = iso_week_name(start.fromordinal(start.toordinal() - 7))
    daily = {
        d.isoformat(): _document(s3, bucket, gpu_hours_key(cluster, d)) for d in days(start, end)
    }
    tables = {d: t for d, t in daily.items() if t is not None}
    before = _document(s3, bucket, report_prefix(cluster, last_week) + "report.json") or {}
    waste = week_waste(tables, gpu_hour_usd=price, previous=before.get("waste"))
    this_week = serving_days(s3, bucket, cluster, start, end)
    # The training jobs' goodput, each day of the week once (its file is keyed by the day):
    # the training section's lead and the funnel's productive stage.
    goodput = goodput_figures(
        _document(s3, bucket, goodput_key(cluster, d)) for d in days(start, end)
    )
    figures = week_figures(
        cluster=cluster,
        week=week,
        gpu_days=exporter_days(config, cloudwatch, start, end),
        xids=exporter_xids(config, cloudwatch, start, end),
        alarms=alarms_raised(cloudwatch, config.alarm_names(), start, end),
        files=files,
        job_costs=costs.costs,
        throughput=exporter_throughput(config, cloudwatch, start, end),
        waste=waste,
        previous={k: before.get(k) for k in HEADLINE},  # last week's report, read once above
        storage_analyzed=STORAGE_ANALYZER in analyzers,
        served=served_gpu_hours(this_week.rows),
        goodput=goodput,
    )
    prefix = report_prefix(cluster, week)
    console = f"https://s3.console.aws.amazon.com/s3/object/{bucket}?prefix={prefix}report.html"
    link = s3.generate_presigned_url(
        "get_object",
        Params={"Bucket": bucket, "Key": prefix + "report.html"},
        ExpiresIn=LINK_SECONDS,
    )
    figures.malformed_job_costs = costs.malformed
    # The week's failed runs, from every run of the week (their lookbacks overlap).
    failed = week_runs(
        (_document(s3, bucket, failures_key(cluster, d)) for d in run_days(start, end)),
        start=epoch(start),
        end=epoch(end),
    )
    figures.failures = failure_figures(failed, gpu_hour_usd=price)
    figures.lemons = week_lemons(config, s3, cloudwatch, tables, end)
    # Inference serving: the week's tables against the week before's.
    week_before = start.fromordinal(start.toordinal() - 7)
    serving = serving_figures(
        this_week,
        serving_days(s3, bucket, cluster, week_before, start),
        files.findings,
    )
    # A week that served nothing (Classic mode writes no tables) has no serving object.
    figures.serving = serving if has_serving(serving) else {}
    # The models whose traffic drifted, from the week's serving_drift findings.
    figures.drift = drift_figures(files.findings)
    document = {**figures.to_dict(), **headline(figures)}
    s3.put_object(
        Bucket=bucket,
        Key=prefix + "report.json",
        Body=json.dumps(document, default=str).encode(),
        ContentType="application/json",
    )
    # Each workload's GPU-hour funnel, for a spreadsheet.
    s3.put_object(
        Bucket=bucket,
        Key=prefix + FUNNEL_CSV,
        Body=funnel_csv(figures.funnel, cluster=cluster, week=week).encode(),
        ContentType="text/csv; charset=utf-8",
    )
    # The per-namespace showback table, for a spreadsheet.
    s3.put_object(
        Bucket=bucket,
        Key=prefix + "report.csv",
        Body=waste_csv(figures.waste, cluster=cluster, week=week).encode(),
        ContentType="text/csv; charset=utf-8",
    )
    # The jobs' GPU memory right-sizing, for a spreadsheet.
    s3.put_object(
        Bucket=bucket,
        Key=prefix + MEMORY_CSV,
        Body=memory_csv(figures.memory_jobs, cluster=cluster, week=week).encode(),
        ContentType="text/csv; charset=utf-8",
    )
    # The week's failed runs, their causes and signatures, for a spreadsheet.
    s3.put_object(
        Bucket=bucket,
        Key=prefix + FAILURES_CSV,
        Body=failures_csv(figures.failures, cluster=cluster, week=week).encode(),
        ContentType="text/csv; charset=utf-8",
    )
    # Each training job's week of goodput and badput, for a spreadsheet.
    s3.put_object(
        Bucket=bucket,
        Key=prefix + GOODPUT_CSV,
        Body=goodput_csv(figures.goodput, cluster=cluster, week=week).encode(),
        ContentType="text/csv; charset=utf-8",
    )
    # Inference serving per model and workload, for a spreadsheet, where the week has any.
    if has_serving(figures.serving):
        s3.put_object(
            Bucket=bucket,
            Key=prefix + SERVING_CSV,
            Body=serving_csv(figures.serving, cluster=cluster, week=week).encode(),
            ContentType="text/csv; charset=utf-8",
        )
    s3.put_object(
        Bucket=bucket,
        Key=prefix + "report.html",
        Body=html_report(figures, link=console).encode(),
        ContentType="text/html; charset=utf-8",
    )
    marker = prefix + "summary-sent"
    sent = False
    if not object_exists(s3, bucket, marker):
        _clients("sns").publish(
            TopicArn=config.topic_arn,
            Subject=f"GPU week {week}: {cluster}"[:100],
            Message=text_summary(figures, link=f"{link}\n(console: {console})"),
        )
        s3.put_object(Bucket=bucket, Key=marker, Body=b"")
        sent = True
    summary = {
        "week": week,
        "key": prefix + "report.html",
        "findings": len(files.findings),
        "malformed_finding_lines": files.malformed,
        "summary_sent": sent,
    }
    log.info("weekly report done: %s", summary)
    return summary
