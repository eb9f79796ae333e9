"""``gpu-insights analyze storage|training``: the analyzers the Lambdas run, read-only; the
findings are printed, not published."""

import argparse
import json
import logging
import time
from collections.abc import Sequence

from cdk.aws_values import bucket_problem
from cli.failures import AwsFailureError
from contract.resource_names import cluster_name_problem
from lambdas.shared.aws_clients import INTERACTIVE, client, new_session
from lambdas.shared.events import analysis_window
from lambdas.shared.findings import AnalysisRun, Finding
from lambdas.shared.shards import LOOKBACK_DAYS
from lambdas.storage_analyzer.aws import VolumeScope
from lambdas.storage_analyzer.run import StorageRun, analyze_storage
from lambdas.training_analyzer.gpu_prices import gpu_hour_price
from lambdas.training_analyzer.run import analyze_training


def add_arguments(parser: argparse.ArgumentParser) -> None:
    targets = parser.add_subparsers(dest="target", required=True, metavar="TARGET")
    storage = targets.add_parser("storage", help="EBS volumes and S3 buckets")
    storage.add_argument("--cluster-name", required=True)
    storage.add_argument("--scope", choices=[s.value for s in VolumeScope], default="cluster")
    storage.add_argument("--bucket", action="append", default=[], help="S3 bucket (repeatable)")
    storage.add_argument(
        "--days", type=int, default=LOOKBACK_DAYS, help=f"lookback in days ({LOOKBACK_DAYS})"
    )
    training = targets.add_parser("training", help="training jobs of the cluster")
    training.add_argument("--cluster-name", required=True)
    training.add_argument(
        "--days", type=int, default=LOOKBACK_DAYS, help=f"lookback in days ({LOOKBACK_DAYS})"
    )
    training.add_argument(
        "--gpu-hour-usd", type=float, default=gpu_hour_price(None), help="price of a GPU-hour"
    )
    for sub in (storage, training):
        sub.add_argument("--profile", help="AWS profile (standard credential chain otherwise)")
        sub.add_argument("--region", help="AWS region")
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


def run(args: argparse.Namespace) -> str:
    problem = cluster_name_problem(args.cluster_name)
    if problem:
        raise ValueError(f"--cluster-name: {problem}")
    for bucket in getattr(args, "bucket", None) or []:
        problem = bucket_problem(bucket)
        if problem:
            raise ValueError(f"--bucket {bucket!r}: {problem}")
    if not 1 <= args.days <= 90:
        raise ValueError(f"--days {args.days} must be 1 to 90")
    if args.target == "training" and not (0 <= args.gpu_hour_usd <= 1000):
        raise ValueError(f"--gpu-hour-usd {args.gpu_hour_usd} must be 0 to 1000")
    # Each skip is a finding (printed) or the one line of a run that read nothing: the Lambdas'
    # warning log of it would be a second line on stderr.
    logging.getLogger("lambdas").setLevel(logging.ERROR)
    # The handlers' session: its clients parse GetMetricData's epoch timestamps as fast as the
    # Lambdas' do (a plain boto3 session's parser took four times the CPU of a whole run).
    session = new_session(profile_name=args.profile, region_name=args.region)
    start, end = analysis_window(time.time(), args.days)
    result: AnalysisRun
    if args.target == "storage":
        result = analyze_storage(
            ec2=client("ec2", session=session, config=INTERACTIVE),
            s3=client("s3", session=session, config=INTERACTIVE),
            cloudwatch=client("cloudwatch", session=session, config=INTERACTIVE),
            cluster=args.cluster_name,
            scope=VolumeScope(args.scope),
            buckets=args.bucket,
            start=start,
            end=end,
        )
    else:
        result = analyze_training(
            cloudwatch=client("cloudwatch", session=session, config=INTERACTIVE),
            logs=client("logs", session=session, config=INTERACTIVE),
            cluster=args.cluster_name,
            start=start,
            end=end,
            gpu_hour_usd=args.gpu_hour_usd,
        )
    if read_nothing(result):
        first = result.findings[0]
        raise AwsFailureError(f"read nothing: {first.resource}: {first.summary}")
    findings = result.findings
    if args.json:
        return "\n".join(json.dumps(f.to_dict(), sort_keys=True) for f in findings)
    return table(findings)
