"""Beyond one function: the fleet cut into shards (lambdas/shared/shards.py), one analysis
per shard as a Distributed Map would run them, merged in shard order.

1. The storage handler's own modes, the entry points the state machine invokes
   (cdk/constructs/fleet_map.py): ``plan``, one ``shard`` per item, ``merge``, with the plan and
   the parts written to and read from S3 (moto, in process), and EC2, GetMetricData and
   EventBridge answered in their wire formats (benchmarks/wire.py; moto is slow with millions
   of datapoints). On a fleet one run can handle, the sharded path writes the single run's
   findings file byte for byte, with the same summary.
2. A synthetic 100,000-volume fleet analysed end to end the same way, the invocations one
   after another, in shards of the deployed default (``storage_shard_volumes``): each one's
   CPU, and the wall time a Distributed Map would take, simulated from them (``CONCURRENCY``
   shards at a time, at the storage function's memory and CPU share).
3. The training analysis through its real plan, shards and merge
   (lambdas/training_analyzer/fleet.py) on a 1,000-job fleet that differs job by job
   (benchmarks/training_fleet.py), against one run on the same data: the same findings, job
   costs and pods.
4. Shard count and simulated wall time for 100,000 volumes and 10,000 jobs, from the CPU per
   volume and per job measured by the storage and training benchmarks.
"""

import math
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from unittest.mock import patch

from moto import mock_aws

from benchmarks import training_analyzer, wire
from benchmarks.storage_analyzer import END, FakeCloudWatch, ec2_client
from benchmarks.training_fleet import Fleet, bucket_client, serve_failure_logs
from cdk.function_configs import storage_config
from cdk.settings import Settings
from cli.demo.failures import corpus_lines
from lambdas.shared.findings import AnalysisRun
from lambdas.shared.metric_fetcher import MAX_DATAPOINTS_PER_CALL
from lambdas.shared.shards import (
    CALL_S,
    MAX_CONCURRENCY,
    STORAGE,
    STORAGE_SHARD_VOLUMES,
    TRAINING,
    TRAINING_SHARD_JOBS,
    FanOut,
    FunctionSize,
    per_shard,
)
from lambdas.storage_analyzer import handler as storage_handler
from lambdas.training_analyzer import fleet as training_fleet
from lambdas.training_analyzer.run import TrainingRun, analyze_training

SAME_FLEET = 2_000
SAME_SHARD = 300
BIG_FLEET = 100_000
#: The deployed default shard sizes and the functions' memory: the constants the settings
#: and the stack use (lambdas/shared/shards.py).
BIG_SHARD = STORAGE_SHARD_VOLUMES
JOBS = 10_000
SAME_JOBS = 1_000
SAME_JOB_SHARD = 250
CONCURRENCY = MAX_CONCURRENCY
BUCKET = "reports"
EVENT = {"time": datetime.fromtimestamp(END, UTC).isoformat()}


def _lines(run: AnalysisRun) -> list[str]:
    return [f.to_json() for f in run.findings]


@dataclass
class Invocation:
    """One handler invocation's CPU and the datapoints it read."""

    mode: str
    cpu_s: float
    datapoints: int

    @property
    def lambda_s(self) -> float:
        return in_lambda_s(self.cpu_s, self.datapoints, STORAGE)


@dataclass
class StorageWorld:
    """The storage handler's clients and environment for one fleet."""

    cloudwatch: FakeCloudWatch
    s3: Any
    events: list[int] = field(default_factory=list)
    invocations: list[Invocation] = field(default_factory=list)

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        cpu, points = time.process_time(), self.cloudwatch.datapoints
        summary = storage_handler.handler({**EVENT, **event}, None)
        self.invocations.append(
            Invocation(
                event.get("mode", "single"),
                time.process_time() - cpu,
                self.cloudwatch.datapoints - points,
            )
        )
        return summary

    def findings_file(self, key: str) -> bytes:
        body: bytes = self.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        return body

    def sharded(self) -> dict[str, Any]:
        """plan, every shard, merge: as the state machine invokes them."""
        planned = self.invoke({"mode": "plan"})
        for item in planned["shards"]:
            self.invoke({"mode": "shard", **item})
        return {**self.invoke({"mode": "merge", **planned}), "shards": len(planned["shards"])}


def _events_client(sent: list[int]) -> Any:
    client = wire.client("events")

    def put(params: dict[str, Any]) -> dict[str, Any]:
        sent.append(len(params["Entries"]))
        return {"FailedEntryCount": 0, "Entries": [{"EventId": "e"} for _ in params["Entries"]]}

    wire.serve_json(client, {"PutEvents": put})
    return client


@contextmanager
def storage_world(volumes: int, shard_volumes: int) -> Iterator[StorageWorld]:
    """The handler with its clients put in, as the functional tests do, and the environment
    its construct is given for a deployment with this shard size; restored after."""
    settings = Settings(cluster_name="bench", storage_shard_volumes=shard_volumes)
    env = storage_config(settings, report_bucket=BUCKET).environment()
    saved = dict(storage_handler._clients)
    with mock_aws(), patch.dict(os.environ, env):
        fake = FakeCloudWatch()
        world = StorageWorld(fake, wire.client("s3"))
        world.s3.create_bucket(Bucket=BUCKET)
        clients = {
            "ec2": ec2_client(volumes),
            "s3": world.s3,
            "cloudwatch": fake.client(),
            "events": _events_client(world.events),
        }
        storage_handler._clients.clear()
        storage_handler._clients.update(clients)
        try:
            yield world
        finally:
            storage_handler._clients.clear()
            storage_handler._clients.update(saved)


def same_findings() -> bool:
    """One run, then plan, shards and merge, through the handler: the same file, summary."""
    with storage_world(SAME_FLEET, SAME_SHARD) as world:
        single = world.invoke({})
        expected = world.findings_file(single["key"])
        world.s3.delete_object(Bucket=BUCKET, Key=single["key"])
        merged = world.sharded()
        return (
            merged["shards"] == math.ceil(SAME_FLEET / SAME_SHARD)
            and {k: v for k, v in merged.items() if k != "shards"} == single
            and world.findings_file(merged["key"]) == expected
            and single["findings"] > 0
        )


def simulated_wall_s(invocations: list[Invocation]) -> float:
    """The Distributed Map's wall time from each invocation's measured CPU and datapoints:
    the plan, the shards ``CONCURRENCY`` at a time (a wave lasts as long as its slowest),
    then the merge."""
    shard_s = [i.lambda_s for i in invocations if i.mode == "shard"]
    waves = [shard_s[i : i + CONCURRENCY] for i in range(0, len(shard_s), CONCURRENCY)]
    once = sum(i.lambda_s for i in invocations if i.mode != "shard")
    return once + sum(max(wave) for wave in waves)


def big_fleet() -> dict[str, float]:
    started = time.perf_counter()
    with storage_world(BIG_FLEET, BIG_SHARD) as world:
        merged = world.sharded()
        lines = world.findings_file(merged["key"]).count(b"\n")
    calls = world.invocations
    shard_cpu = [i.cpu_s for i in calls if i.mode == "shard"]
    return {
        "volumes": float(merged["volumes"]),
        "shards": float(merged["shards"]),
        "findings": float(merged["findings"]),
        "file_lines": float(lines),
        "events": float(sum(world.events)),
        "plan_cpu_s": calls[0].cpu_s,
        "shard_cpu_s": sum(shard_cpu),
        "slowest_shard_cpu_s": max(shard_cpu),
        "merge_cpu_s": calls[-1].cpu_s,
        "cpu_s": sum(i.cpu_s for i in calls),
        "simulated_wall_s": simulated_wall_s(calls),
        "wall_s": time.perf_counter() - started,
    }


def same_training() -> dict[str, float]:
    """One run, then plan, every shard, merge (each shard as its own invocation would run it:
    the staged plan read back from S3, its part written there), on the same data."""
    start, end = training_analyzer.START, training_analyzer.END
    cloudwatch, logs = Fleet(SAME_JOBS, start=start, end=end).clients()
    # The failed jobs' logs: each printed the corpus's CUDA out-of-memory.
    serve_failure_logs(logs, corpus_lines("cuda-oom-torch-2x")[0])
    cpu = time.process_time()
    single = analyze_training(
        cloudwatch=cloudwatch, logs=logs, cluster="bench", start=start, end=end, gpu_hour_usd=6.88,
        failure_log_jobs=SAME_JOBS,
    )  # fmt: skip
    single_cpu, cpu = time.process_time() - cpu, time.process_time()
    objects: dict[str, bytes] = {}
    s3 = bucket_client(objects)
    where: dict[str, Any] = {"s3": s3, "bucket": "reports", "cluster": "bench", "day": "bench"}
    planned = training_fleet.plan(
        **where, cloudwatch=cloudwatch, logs=logs, start=start, end=end, related_storage=(),
        tail=TrainingRun(), per_shard=SAME_JOB_SHARD,
    )  # fmt: skip
    for item in planned["shards"]:
        training_fleet.shard(
            **where,
            cloudwatch=cloudwatch,
            logs=logs,
            failure_log_jobs=SAME_JOBS,
            start=start,
            end=end,
            gpu_hour_usd=6.88,
            **item,
        )
    merged = training_fleet.read_parts(**where, shards=len(planned["shards"]))
    same = (
        _lines(single) == _lines(merged)
        and single.costs == merged.costs
        and single.pods == merged.pods
        and len(single.findings) > 0
    )
    return {
        "jobs": float(planned["jobs"]),
        "shards": float(len(planned["shards"])),
        "findings": float(len(merged.findings)),
        "same": float(same),
        "single_cpu_s": single_cpu,
        "sharded_cpu_s": time.process_time() - cpu,
    }


def in_lambda_s(cpu_s: float, datapoints: float, size: FunctionSize) -> float:
    """Wall seconds in the function: its CPU at the function's share of a vCPU, and the calls
    (the model the settings' shard-size check uses, ``FunctionSize.run_s``)."""
    return cpu_s / size.vcpu + datapoints / MAX_DATAPOINTS_PER_CALL * CALL_S


def main(storage: dict[str, float], training: dict[str, float]) -> dict[str, Any]:
    """``storage`` and ``training``: the floor plan's figures (10,000 volumes, 1,000 jobs)."""
    same = same_findings()
    big = big_fleet()
    sharded = same_training()
    per_volume = in_lambda_s(storage["cpu_s"], storage["datapoints"], STORAGE) / 10_000
    per_job = in_lambda_s(training["cpu_s"], training["datapoints"], TRAINING) / 1_000
    volumes = FanOut(
        BIG_FLEET,
        min(BIG_SHARD, per_shard(per_volume, budget_s=STORAGE.budget_s)),
        CONCURRENCY,
        per_volume,
    )
    shard_jobs = TRAINING_SHARD_JOBS
    jobs = FanOut(
        JOBS, min(shard_jobs, per_shard(per_job, budget_s=TRAINING.budget_s)), CONCURRENCY, per_job
    )
    print("fan-out (Distributed Map shards, merged in shard order)")
    print(
        f"  {SAME_FLEET:,} volumes through the handler's plan, shards of {SAME_SHARD} and merge "
        f"(parts in S3): the single run's findings file and summary: {same}"
    )
    print(
        f"  {BIG_FLEET:,} volumes end to end through the handler's modes: "
        f"{big['shards']:.0f} shards, {big['findings']:,.0f} findings in the day's file "
        f"({big['events']:,.0f} events); CPU {big['cpu_s']:.0f} s (plan {big['plan_cpu_s']:.1f} s, "
        f"shards {big['shard_cpu_s']:.0f} s, slowest {big['slowest_shard_cpu_s']:.1f} s, "
        f"merge {big['merge_cpu_s']:.1f} s); simulated Distributed Map wall "
        f"{big['simulated_wall_s']:.0f} s ({CONCURRENCY} shards at a time, "
        f"{STORAGE.memory_mb:,} MB); "
        f"{big['wall_s']:.0f} s wall here, one invocation after another"
    )
    print(
        f"  {sharded['jobs']:,.0f} jobs: plan, {sharded['shards']:.0f} shards of "
        f"{SAME_JOB_SHARD}, merge: the single run's {sharded['findings']:,.0f} findings, "
        f"costs and pods: {bool(sharded['same'])} (CPU {sharded['single_cpu_s']:.1f} s one "
        f"run, {sharded['sharded_cpu_s']:.1f} s in shards)"
    )
    for name, fan in (("volumes", volumes), ("jobs", jobs)):
        print(
            f"  simulated {fan.items:,} {name}: {fan.shards} shard(s) of up to {fan.per_shard:,}, "
            f"{CONCURRENCY} at a time: {fan.wall_s:,.0f} s wall"
        )
    if not same:
        raise AssertionError(f"the sharded path's findings differ from one run's on {SAME_FLEET}")
    if (big["volumes"], big["file_lines"]) != (BIG_FLEET, big["findings"]):
        raise AssertionError(f"the {BIG_FLEET:,}-volume merge lost volumes or findings: {big}")
    return {"same": same, "big": big, "training": sharded, "volumes": volumes, "jobs": jobs}
