"""``gpu-insights analyze storage`` end to end on 2,000 volumes x 14 days: the command's own
run (``cli.analyze.run``) with the clients it builds, answered at the HTTP layer in
CloudWatch's JSON and EC2's XML wire formats (benchmarks/wire.py) by the storage benchmark's
fleet (benchmarks/storage_analyzer.py). Prints CPU seconds and the share botocore spent
parsing, with the handlers' session (what the command builds: lambdas/shared/aws_clients.py
``new_session``, which cli/settings_args.py ``session_for`` calls) and with a plain boto3
session (what it built before), each in a fresh process; the findings must be the same."""

import os
import time
from argparse import Namespace
from typing import Any
from unittest.mock import patch

from benchmarks import wire
from benchmarks.storage_analyzer import DAYS, END, FakeCloudWatch, ec2_answers, in_fresh_process
from lambdas.shared import aws_clients
from lambdas.shared.shards import STORAGE

VOLUMES = 2_000
SESSIONS = ("plain boto3", "handlers'")


class _Clock:
    """``time`` as cli.analyze sees it: the benchmark fleet's end, so the command's window is
    the fleet's 14 days."""

    @staticmethod
    def time() -> float:
        return END


def measure(session: str, volumes: int) -> dict[str, float]:
    """One ``analyze storage --json`` in this process, with ``session`` ("plain boto3" or
    "handlers'")."""
    import boto3

    from cli import analyze

    os.environ.update(
        AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_EC2_METADATA_DISABLED="true"
    )
    fake = FakeCloudWatch()

    def served(service: str, **kwargs: Any) -> Any:
        """The command's own client for ``service``, answered by the fakes."""
        client = aws_clients.client(service, **kwargs)
        if service == "ec2":
            wire.serve_xml(client, ec2_answers(volumes))
        elif service == "cloudwatch":
            fake.serve(client)
        return client

    args = Namespace(
        target="storage", cluster_name="bench", scope="cluster", bucket=[], days=DAYS,
        profile=None, region="us-east-1", json=True, context=[], cdk_json=None,
    )  # fmt: skip
    plain = patch.object(aws_clients, "new_session", boto3.Session)
    with patch.object(analyze, "client", served), patch.object(analyze, "time", _Clock):
        if session == SESSIONS[0]:
            plain.start()
        try:
            with wire.ParseClock() as parsing:
                started = time.process_time()
                out = analyze.run(args)
                cpu = time.process_time() - started
        finally:
            if session == SESSIONS[0]:
                plain.stop()
    return {
        "volumes": float(volumes),
        "cpu_s": cpu,
        "parse_s": parsing.cpu_s,
        "datapoints": float(fake.datapoints),
        "findings": float(len(out.splitlines())),
    }


def main() -> dict[str, dict[str, float]]:
    runs = {s: in_fresh_process(s, VOLUMES, run=measure) for s in SESSIONS}
    before, after = runs[SESSIONS[0]], runs[SESSIONS[1]]
    if before["findings"] != after["findings"]:
        raise AssertionError(f"the sessions found differently: {before} {after}")
    lambda_s = STORAGE.item.cpu_s_per_day * VOLUMES * DAYS
    print(f"gpu-insights analyze storage: {VOLUMES:,} volumes x {DAYS} days, wire format")
    for name, f in runs.items():
        print(
            f"  {name + ' session':<22} CPU {f['cpu_s']:6.1f} s ({f['parse_s'] / f['cpu_s']:.0%} "
            f"parsing)  datapoints {f['datapoints']:,.0f}  findings {f['findings']:,.0f}"
        )
    print(
        f"  the storage function's sizing assumes {lambda_s:.1f} s for this many volume-days "
        f"(lambdas/shared/shards.py STORAGE); before/after {before['cpu_s'] / after['cpu_s']:.1f}x"
    )
    return runs


if __name__ == "__main__":
    main()
