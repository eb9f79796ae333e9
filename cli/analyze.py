"""``gpu-insights analyze storage``: the analyzer the Lambda runs, read-only, findings printed."""

import argparse
import json
import time
from collections.abc import Sequence
from typing import Any

from lambdas.shared.aws_clients import client
from lambdas.shared.findings import Finding
from lambdas.storage_analyzer.aws import VolumeScope
from lambdas.storage_analyzer.run import analyze_storage


def add_arguments(parser: argparse.ArgumentParser) -> None:
    targets = parser.add_subparsers(dest="target", required=True, metavar="TARGET")
    storage = targets.add_parser("storage", help="EBS volumes and S3 buckets")
    storage.add_argument("--cluster-name", required=True)
    storage.add_argument("--scope", choices=[s.value for s in VolumeScope], default="cluster")
    storage.add_argument("--bucket", action="append", default=[], help="S3 bucket (repeatable)")
    storage.add_argument("--days", type=int, default=14, help="lookback in days (14)")
    for sub in (storage,):
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


def run(args: argparse.Namespace) -> str:
    import boto3

    if not 1 <= args.days <= 90:
        raise ValueError(f"--days {args.days} must be 1 to 90")
    session = boto3.Session(profile_name=args.profile, region_name=args.region)
    clients: dict[str, Any] = {s: client(s, session=session) for s in ("ec2", "s3", "cloudwatch")}
    end = time.time()
    end -= end % 3600
    result = analyze_storage(
        ec2=clients["ec2"],
        s3=clients["s3"],
        cloudwatch=clients["cloudwatch"],
        cluster=args.cluster_name,
        scope=VolumeScope(args.scope),
        buckets=args.bucket,
        start=end - args.days * 86_400,
        end=end,
    )
    if args.json:
        return "\n".join(json.dumps(f.to_dict(), sort_keys=True) for f in result.findings)
    return table(result.findings)
