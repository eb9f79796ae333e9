"""Beyond one function: the fleet cut into shards (lambdas/shared/shards.py), one analysis
per shard as a Distributed Map would run them, merged in shard order.

1. On a fleet one run can handle, the merged shards' findings are the single run's, line for
   line.
2. A synthetic 100,000-volume fleet analysed end to end through shard + merge (the shards run
   two at a time in fresh processes, each with its own real botocore client, as invocations).
3. The training analysis through its real plan, shards and merge
   (lambdas/training_analyzer/fleet.py) on a 1,000-job fleet that differs job by job
   (benchmarks/training_fleet.py), against one run on the same data: the same findings, job
   costs and pods.
4. Shard count and simulated wall time for 100,000 volumes and 10,000 jobs, from the CPU per
   volume and per job measured by the storage and training benchmarks.
"""

import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any

from benchmarks import training_analyzer
from benchmarks.storage_analyzer import END, START, FakeCloudWatch, ec2_client
from benchmarks.training_fleet import Fleet, bucket_client
from cdk.settings import Settings
from lambdas.shared.findings import AnalysisRun
from lambdas.shared.shards import FanOut, merge, per_shard, shards
from lambdas.storage_analyzer.aws import VolumeScope, discover_volumes
from lambdas.storage_analyzer.ebs_analysis import Volume
from lambdas.storage_analyzer.run import StorageRun, analyze_storage, analyze_volumes
from lambdas.training_analyzer import fleet as training_fleet
from lambdas.training_analyzer.run import TrainingRun, analyze_training

SAME_FLEET = 2_000
SAME_SHARD = 300
BIG_FLEET = 100_000
BIG_SHARD = 10_000
JOBS = 10_000
SAME_JOBS = 1_000
SAME_JOB_SHARD = 250
CONCURRENCY = 10
#: A 1,024 MB function gets this share of a vCPU (1,769 MB is one full vCPU:
#: https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html).
LAMBDA_VCPU = 1024 / 1769
#: Assumed seconds CloudWatch takes to answer one full GetMetricData call (100,800 points).
CALL_S = 1.0
POINTS_PER_CALL = 100_800


def _shard(volumes: list[Volume]) -> StorageRun:
    """One invocation: its own client, its shard's volumes."""
    return analyze_volumes(FakeCloudWatch().client(), volumes, START, END)


def _lines(run: AnalysisRun) -> list[str]:
    return [f.to_json() for f in run.findings]


def same_findings() -> bool:
    single = analyze_storage(
        ec2=ec2_client(SAME_FLEET),
        s3=None,
        cloudwatch=FakeCloudWatch().client(),
        cluster="bench",
        scope=VolumeScope.CLUSTER,
        buckets=[],
        start=START,
        end=END,
    )
    volumes = discover_volumes(ec2_client(SAME_FLEET), cluster="bench", scope=VolumeScope.CLUSTER)
    merged = merge((_shard(list(s)) for s in shards(volumes, SAME_SHARD)), StorageRun())
    return _lines(single) == _lines(merged) and len(single.findings) > 0


def big_fleet() -> dict[str, float]:
    started, cpu = time.perf_counter(), time.process_time()
    volumes = discover_volumes(ec2_client(BIG_FLEET), cluster="bench", scope=VolumeScope.CLUSTER)
    cut = [list(s) for s in shards(volumes, BIG_SHARD)]
    with ProcessPoolExecutor(max_workers=2, mp_context=get_context("spawn")) as pool:
        parts = list(pool.map(_shard, cut))
    run = merge(parts, StorageRun())
    return {
        "volumes": float(len(volumes)),
        "shards": float(len(cut)),
        "findings": float(len(run.findings)),
        "analysed": float(sum(1 for f in run.findings if f.resource.startswith("vol-"))),
        "wall_s": time.perf_counter() - started,
        "parent_cpu_s": time.process_time() - cpu,
    }


def same_training() -> dict[str, float]:
    """One run, then plan, every shard, merge (each shard as its own invocation would run it:
    the staged plan read back from S3, its part written there), on the same data."""
    start, end = training_analyzer.START, training_analyzer.END
    cloudwatch, logs = Fleet(SAME_JOBS, start=start, end=end).clients()
    cpu = time.process_time()
    single = analyze_training(
        cloudwatch=cloudwatch, logs=logs, cluster="bench", start=start, end=end, gpu_hour_usd=6.88
    )
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
            **where, cloudwatch=cloudwatch, start=start, end=end, gpu_hour_usd=6.88, **item
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


def in_lambda_s(cpu_s: float, datapoints: float) -> float:
    """Wall seconds in a 1,024 MB function: its CPU at that share of a vCPU, and the calls."""
    return cpu_s / LAMBDA_VCPU + datapoints / POINTS_PER_CALL * CALL_S


def main(storage: dict[str, float], training: dict[str, float]) -> dict[str, Any]:
    """``storage`` and ``training``: the floor plan's figures (10,000 volumes, 1,000 jobs)."""
    same = same_findings()
    big = big_fleet()
    sharded = same_training()
    per_volume = in_lambda_s(storage["cpu_s"], storage["datapoints"]) / 10_000
    per_job = in_lambda_s(training["cpu_s"], training["datapoints"]) / 1_000
    volumes = FanOut(BIG_FLEET, min(BIG_SHARD, per_shard(per_volume)), CONCURRENCY, per_volume)
    shard_jobs = Settings().training_shard_jobs
    jobs = FanOut(JOBS, min(shard_jobs, per_shard(per_job)), CONCURRENCY, per_job)
    print("fan-out (Distributed Map shards, merged in shard order)")
    print(f"  {SAME_FLEET:,} volumes: shards of {SAME_SHARD} merge to the single run: {same}")
    print(
        f"  {BIG_FLEET:,} volumes end to end: {big['shards']:.0f} shards, "
        f"{big['findings']:,.0f} findings, {big['wall_s']:.0f} s wall on 2 processes"
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
    return {"same": same, "big": big, "training": sharded, "volumes": volumes, "jobs": jobs}
