"""``gpu-insights analyze storage|training``: what the Lambdas run, read-only, with the
configuration their constructs build from the deployment's settings; the findings are printed,
not published."""

import argparse
import json
import logging
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cdk.aws_values import bucket_problem
from cdk.function_configs import storage_config, training_config
from cdk.settings import Settings
from cli.backtest.command import REPLAY_REGION, other_cluster, read_file
from cli.backtest.otel_replay import clusters, of_cluster
from cli.demo.promql import PrometheusMissingError, serving
from cli.failures import AwsFailureError, NoDataError, ToolMissingError
from cli.settings_args import add_settings_arguments, placed_settings, said, session_for
from gpu_insights_agent.contract.metrics import NAMESPACE_TRAINING, ExporterSink
from lambdas.shared.aws_clients import INTERACTIVE, ClientCache, client
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.shared.events import analysis_window
from lambdas.shared.findings import AnalysisRun, Finding, stamped
from lambdas.storage_analyzer import handler as storage_handler
from lambdas.storage_analyzer.aws import VolumeScope
from lambdas.storage_analyzer.run import StorageRun
from lambdas.training_analyzer import handler as training_handler
from lambdas.training_analyzer.run import TrainingRun
from lambdas.weekly_report.funnel_section import GOODPUT_SOURCE, day_funnel


def add_arguments(parser: argparse.ArgumentParser) -> None:
    targets = parser.add_subparsers(dest="target", required=True, metavar="TARGET")
    storage = targets.add_parser("storage", help="EBS volumes and S3 buckets")
    storage.add_argument(
        "--scope",
        choices=[s.value for s in VolumeScope],
        default=None,
        help="volumes read (default: the storage_volume_scope setting)",
    )
    storage.add_argument(
        "--bucket",
        action="append",
        default=[],
        help="S3 bucket, repeatable (default: the storage_buckets setting)",
    )
    training = targets.add_parser("training", help="training jobs of the cluster")
    training.add_argument(
        "--gpu-hour-usd",
        type=float,
        default=None,
        help="price of a GPU-hour (default: the gpu_hour_price_usd setting, or the GPU's price)",
    )
    training.add_argument(
        "--history",
        type=Path,
        default=None,
        help="analyze OTel mode's series from this file (docs/history.md) on a local "
        "Prometheus, with no AWS account",
    )
    training.add_argument(
        "--report-bucket",
        default=None,
        help="the stack's ReportBucketName output: where the day's storage findings are read "
        "to link a data-bound job's training_data_sources",
    )
    for sub in (storage, training):
        sub.add_argument(
            "--days", type=int, default=None, help="lookback in days (the lookback_days setting)"
        )
        add_settings_arguments(sub, aws=True)
        sub.add_argument("--json", action="store_true", help="findings as JSON lines")


def table(findings: Sequence[Finding]) -> str:
    if not findings:
        return "No findings."
    order = {"critical": 0, "warning": 1, "info": 2}
    rows = sorted(findings, key=lambda f: (order[str(f.severity)], str(f.kind), f.resource))
    lines = []
    for f in rows:
        waste = (
            f" (${f.estimated_monthly_waste_usd:,.2f}/month)"
            if f.estimated_monthly_waste_usd
            else ""
        )
        lines.append(f"{str(f.severity).upper():8} {f.kind:<32} {f.resource}{waste}")
        lines.append(f"         {f.summary}")
        lines.append(f"         -> {f.recommendation}")
    total = sum(f.estimated_monthly_waste_usd or 0.0 for f in findings)
    lines.append(f"\n{len(findings)} finding(s); estimated waste ${total:,.2f} a month")
    return "\n".join(lines)


def read_nothing(run: AnalysisRun) -> bool:
    """True when the run's first read failed, so it analyzed nothing: no volume or bucket for
    storage, no job list for training (its first read, which returns at once on failure)."""
    if not run.skipped:
        return False
    if isinstance(run, StorageRun):
        return run.volumes == 0 and run.buckets == 0
    return run.skipped[0].startswith("training jobs of ")


@contextmanager
def _lambda_logs_at(level: int) -> Iterator[None]:
    """The handlers' loggers at ``level`` for one run, then as they were: the command runs
    inside other programs (the demo, the tests), whose warnings must still be heard."""
    logger = logging.getLogger("lambdas")
    before = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(before)


def _analyze(
    target: str, settings: Settings, clients: ClientCache, report_bucket: str | None, end: float
) -> tuple[AnalysisRun, list[Finding], float, dict[str, Any]]:
    """The handler's own reads with the configuration its construct builds from the settings;
    nothing is written (the bucket is only read, for the storage links). Returns the run, its
    findings, the GPU-hours the attribution found and the attributed day's GPU-hour funnel
    with each job's goodput as its productive stage (training; empty without an attribution)."""
    start, end = analysis_window(end, settings.lookback_days)
    if target == "storage":
        config = storage_config(settings, report_bucket=report_bucket or "")
        result = storage_handler.analyze(config, clients, start, end)
        return result, list(result.findings), 0.0, {}
    training = training_config(settings, report_bucket=report_bucket or "")
    # The Lambda's window: the lookback's whole UTC days before the run's.
    start, end = training_handler.training_window(end, settings.lookback_days)
    day = datetime.fromtimestamp(end, UTC).date()
    jobs = training_handler.analyze_jobs(training, clients, start, end, day)
    gpu_run, gpu_start, gpu_day = training_handler.attribute_gpu_hours(jobs, training, clients, end)
    training_handler.place_failures(jobs, gpu_run, training, clients, gpu_day)
    memory_run = training_handler.right_size_memory(jobs, training, clients, end, gpu_run.pod_nodes)
    # The inference servers' day (OTel mode; none in Classic), priced by the same attribution.
    serving_run = training_handler.serve_day(training, clients, gpu_run, gpu_start, gpu_day)
    gpu_hours = sum(gpu_run.table.get("classes", {}).values())
    found = [*jobs.findings, *gpu_run.findings, *memory_run.findings, *serving_run.findings]
    funnel: dict[str, Any] = {}
    if gpu_run.table:
        goodput = (g.to_json() for g in jobs.day_goodput.values())
        funnel = day_funnel(gpu_run.table, goodput, gpu_hour_usd=settings.gpu_hour_usd)
        funnel["day"] = gpu_day.isoformat()
    return jobs, found, gpu_hours, funnel


def _nothing_of_the_cluster(
    region: str, settings: Settings, run: AnalysisRun, gpu_hours: float
) -> str | None:
    """Why the run found nothing of the cluster at all (a typo in its name, the wrong Region
    or account), or None: "No findings." would read as a clean bill of health."""
    where = f"in {region}"
    name = settings.cluster_name
    if isinstance(run, StorageRun):
        if run.volumes or run.buckets:
            return None
        scope = (
            f"tagged for or attached to cluster {name!r}"
            if settings.storage_volume_scope == VolumeScope.CLUSTER.value
            else "at all"
        )
        return (
            f"no EBS volume {scope} {where} and no bucket to read (storage_buckets, --bucket): "
            "is the cluster name right? Nothing was analyzed"
        )
    if isinstance(run, TrainingRun) and not run.costs and not run.pods and not gpu_hours:
        return (
            f"cluster {name!r} has no training job metrics ({_jobs_read(settings)}) and no "
            f"GPU-hours in Container Insights{_gpus_read(settings)} {where} over the last "
            f"{settings.lookback_days} days: is the cluster name right? Nothing was analyzed"
        )
    return None


def _jobs_read(settings: Settings) -> str:
    """Where the training analyzer read the jobs' series (lambdas/training_analyzer/config.py
    ``emitter_otlp``): with PromQL where the emitter sends OTLP, else GpuInsights/Training."""
    if training_config(settings, report_bucket="").emitter_otlp:
        return "the emitter's OTLP series, by PromQL"
    return NAMESPACE_TRAINING


def _gpus_read(settings: Settings) -> str:
    """OTel mode reads the GPU-hours from DCGM's series with PromQL."""
    otel = settings.container_insights_mode is ContainerInsightsMode.OTEL
    return " (DCGM's series, by PromQL)" if otel else ""


def run(args: argparse.Namespace) -> str:
    for bucket in getattr(args, "bucket", None) or []:
        problem = bucket_problem(bucket)
        if problem:
            raise ValueError(f"--bucket {bucket!r}: {problem}")
    if args.days is not None and not 1 <= args.days <= 90:
        raise ValueError(f"--days {args.days} must be 1 to 90")
    price = getattr(args, "gpu_hour_usd", None)
    if price is not None and not (0 <= price <= 1000):
        raise ValueError(f"--gpu-hour-usd {price} must be 0 to 1000")
    # The deployment's settings (cdk.json, each -c), the options given here over them.
    placed = placed_settings(
        args,
        {
            "lookback_days": args.days,
            "storage_volume_scope": getattr(args, "scope", None),
            "storage_buckets": getattr(args, "bucket", None) or None,
            "gpu_hour_price_usd": getattr(args, "gpu_hour_usd", None),
        },
    )
    settings, line = placed.settings, placed.line()
    report_bucket = getattr(args, "report_bucket", None)
    problem = bucket_problem(report_bucket) if report_bucket is not None else None
    if problem:
        raise ValueError(f"--report-bucket {report_bucket!r}: {problem}")
    if args.target == "training" and settings.training_data_sources and not report_bucket:
        raise ValueError(
            "training_data_sources is set: --report-bucket (the stack's ReportBucketName "
            "output) is where the storage findings to link are read"
        )
    if getattr(args, "history", None) is not None:
        return said(args, line, _from_history(args, settings, report_bucket))
    # The handlers' session: its clients parse GetMetricData's epoch timestamps as fast as the
    # Lambdas' do (a plain boto3 session's parser took four times the CPU of a whole run).
    session, region = session_for(args, settings)
    _, end = analysis_window(time.time(), settings.lookback_days)
    return said(args, line, _run(args, settings, report_bucket, session, region, end))


def _run(
    args: argparse.Namespace,
    settings: Settings,
    report_bucket: str | None,
    session: Any,
    region: str,
    end: float,
) -> str:
    """The analyzer's run with ``session``'s clients over the window that ends at ``end``."""
    # Each skip is a finding (printed) or the one line of a run that read nothing: the Lambdas'
    # warning log of it would be a second line on stderr.
    clients = ClientCache()
    for service in ("ec2", "s3", "cloudwatch", "logs"):
        clients[service] = client(service, session=session, config=INTERACTIVE)
    with _lambda_logs_at(logging.ERROR):
        result, findings, gpu_hours, funnel = _analyze(
            args.target, settings, clients, report_bucket, end
        )
    if read_nothing(result):
        first = result.findings[0]
        # The summary names its resource already where the reader wrote it so.
        what = (
            first.summary
            if first.summary.startswith(first.resource)
            else (f"{first.resource}: {first.summary}")
        )
        raise AwsFailureError(f"read nothing: {what}")
    missing = _nothing_of_the_cluster(region, settings, result, gpu_hours)
    if missing:
        raise NoDataError(missing)
    findings = stamped(findings, settings.cluster_name, end)
    if args.json:
        return "\n".join(json.dumps(f.to_dict(), sort_keys=True) for f in findings)
    return table(findings) + funnel_text(funnel)


def funnel_text(document: dict[str, Any]) -> str:
    """The day's GPU-hour funnel under the findings table: each stage, then each drop named
    (docs/goodput.md); empty without one."""
    if not document.get("fleet"):
        return ""
    lines = [f"\n\nGPU-hour funnel, {document.get('day', 'the attributed day')}:"]
    for stage, v in document["fleet"].items():
        lines.append(f"  {stage:<11} {v['gpu_hours']:>10,.1f} GPU-hours  ${v['usd']:>12,.2f}")
    drops = document["drops"]
    named = [
        *(
            ("capacity no pod asked for", g, v)
            for g, v in drops["not_allocated"]["by_group"].items()
        ),
        *(
            (drop, f"{w['namespace']}/{w['workload']}", w[key])
            for w in drops["held_not_active"]["by_workload"]
            for drop, key in (
                ("held and idle", "held_idle"),
                ("held on a lost GPU", "held_faulted"),
            )
            if w[key]["gpu_hours"] or key == "held_idle"
        ),
        *(
            ("active but not productive", c, v)
            for c, v in drops["active_not_productive"]["by_category"].items()
        ),
    ]
    for drop, where, v in named:
        lines.append(f"  {drop}: {where} {v['gpu_hours']:,.1f} GPU-hours (${v['usd']:,.2f})")
    for w in document.get("workloads", []):
        if w["productive_source"] == GOODPUT_SOURCE:
            lines.append(
                f"  productive from its goodput: {w['namespace']}/{w['workload']} "
                f"{w['productive']['gpu_hours']:,.1f} of {w['active']['gpu_hours']:,.1f} active"
            )
    if document.get("clamped"):
        cut = ", ".join(f"{k} {v:,.1f}" for k, v in document["clamped"].items())
        lines.append(f"  cut to keep the stages nested (GPU-hours): {cut}")
    return "\n".join(lines)


def _from_history(args: argparse.Namespace, settings: Settings, report_bucket: str | None) -> str:
    """The training analyzer over a history file's series (docs/history.md), with no account:
    a local Prometheus serves them as CloudWatch's PromQL API (cli/demo/promql.py ``serving``)
    and OTel mode's readers (the emitter's and the exporter's series, the GPU-hours, what the
    analyzer computes from them) read them there; its other reads (EC2, S3, CloudWatch Logs,
    GetMetricData) go to an empty moto, as the demo's do, so it finds what the file holds.
    The window is the lookback's whole UTC days that end with the day of the file's last
    sample, as the daily run after that day reads them."""
    history = read_file(args.history)
    if not history.promql.series:
        raise ValueError(
            f"--history {args.history} holds no PromQL series: analyze training --history "
            "reads OTel mode's series as CloudWatch's PromQL API returns them (docs/history.md)"
        )
    if not of_cluster(history.promql, settings.cluster_name):
        raise other_cluster(args.history, settings.cluster_name, sorted(clusters(history.promql)))
    try:
        from moto import mock_aws
    except ModuleNotFoundError as err:
        raise ToolMissingError(
            "--history answers the analyzer's other reads with moto: pip install -e '.[demo]'"
        ) from err
    from lambdas.shared.aws_clients import new_session

    # The file's series are OTel mode's, read as the OTLP sink's (the default there).
    settings = replace(
        settings,
        container_insights_mode=ContainerInsightsMode.OTEL,
        exporter_sink=ExporterSink.OTLP,
    )
    region = args.region or settings.region or REPLAY_REGION
    first, last = history.promql.span()
    # The run that attributes the day of the file's last sample: at the next UTC midnight, its
    # window the lookback's whole days up to it (training_handler.training_window), no more
    # days than the file's samples touch: a finding's monthly figure is its lookback's waste
    # scaled to a month, and days the file does not hold would dilute it.
    end = last - last % 86_400 + 86_400
    held_days = int(last // 86_400 - first // 86_400) + 1
    settings = replace(settings, lookback_days=min(settings.lookback_days, held_days))
    try:
        with serving(history.promql.as_samples(), region), mock_aws():
            session = new_session(region_name=region)
            output = _run(args, settings, report_bucket, session, region, end)
    except PrometheusMissingError as err:
        raise ToolMissingError(f"--history analyzes the file on Prometheus: {err}") from err
    if args.json:  # stdout holds findings alone: each skipped series on stderr
        for line in history.skipped:
            print(f"gpu-insights analyze: skipped: {line}", file=sys.stderr)
        return output
    return output + "".join(f"\nskipped: {line}" for line in history.skipped)
