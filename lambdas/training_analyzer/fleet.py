"""The training analysis as a Step Functions Distributed Map runs it (cdk/constructs/fleet_map.py)
when a fleet outgrows one function run.

``plan`` lists the jobs once and reads their ranks once (one Logs Insights query for the
cluster, not one per shard) and the day's storage findings about the data sources, and stages
them in the report bucket; each ``shard`` analyzes its slice of the jobs (their series, GPUs,
findings and costs: what grows with the fleet) and writes its part; ``merge`` reads the parts
in shard order into the single run's TrainingRun. What reads the whole cluster once (the
GPU-hour attribution of lambdas/training_analyzer/gpu_hours, which needs every job's pods and
findings) and
what is written once a day (training-jobs.json, gpu-hours.json, the findings file, its events
and counts) stays in the handler's merge, as in a single run.
"""

import json
from dataclasses import asdict
from typing import Any

from lambdas.shared.promql import PromQLClient
from lambdas.shared.shard_parts import add_run, read_required, run_document, shard_key
from lambdas.shared.shards import map_items
from lambdas.training_analyzer.analysis import JobCost, RankStats
from lambdas.training_analyzer.failure_run import FAILURE_LOG_JOBS, FailedRun, UnplacedFailure
from lambdas.training_analyzer.goodput.jobs import JobGoodput
from lambdas.training_analyzer.run import TrainingRun, analyze_jobs, plan_jobs


def plan_key(cluster: str, day: str) -> str:
    return shard_key(cluster, day, "training-jobs.json")


def part_key(cluster: str, day: str, index: int) -> str:
    return shard_key(cluster, day, f"training-part-{index:05d}.json")


def _run_document(run: TrainingRun) -> dict[str, Any]:
    return {
        **run_document(run),
        "costs": {job: asdict(c) for job, c in run.costs.items()},
        "failures": [f.to_json() for f in run.failures],
        "unplaced_failures": [f.to_json() for f in run.unplaced_failures],
        "goodput": [g.to_json() for g in run.goodput.values()],
        "day_goodput": [g.to_json() for g in run.day_goodput.values()],
    }


def _add(run: TrainingRun, document: dict[str, Any]) -> None:
    add_run(run, document)
    run.costs.update({job: JobCost(**cost) for job, cost in document["costs"].items()})
    run.failures += [FailedRun.from_json(f) for f in document.get("failures", [])]
    run.unplaced_failures += [
        UnplacedFailure.from_json(f) for f in document.get("unplaced_failures", [])
    ]
    for goodput in document.get("goodput", []):
        run.goodput[goodput["job"]] = JobGoodput.from_json(goodput)
    for goodput in document.get("day_goodput", []):
        run.day_goodput[goodput["job"]] = JobGoodput.from_json(goodput)


def plan(
    *,
    cloudwatch: Any,
    logs: Any,
    s3: Any,
    bucket: str,
    cluster: str,
    day: str,
    start: float,
    end: float,
    related_storage: tuple[str, ...],
    tail: TrainingRun,
    per_shard: int,
    emitter_promql: PromQLClient | None = None,
) -> dict[str, Any]:
    """Stages the jobs, their ranks and pods, the related storage findings, what the listing
    skipped (``head``, first in the findings) and what reading storage skipped (``tail``,
    after the jobs'); returns the shards by index (Step Functions passes at most 256 KiB).
    ``emitter_promql``: the jobs and ranks read with PromQL (run.plan_jobs)."""
    head = TrainingRun()
    jobs, ranks = plan_jobs(cloudwatch, logs, cluster, start, end, head, emitter_promql)
    document = {
        "jobs": jobs,
        "ranks": {job: [asdict(r) for r in rs] for job, rs in ranks.items()},
        "pods": head.pods,
        "pod_nodes": head.pod_nodes,
        "related_storage": list(related_storage),
        "head": _run_document(head),
        "tail": _run_document(tail),
    }
    s3.put_object(Bucket=bucket, Key=plan_key(cluster, day), Body=json.dumps(document).encode())
    items = map_items(len(jobs), per_shard)
    return {"day": day, "jobs": len(jobs), "shards": items}


def _plan(s3: Any, bucket: str, cluster: str, day: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(read_required(s3, bucket, plan_key(cluster, day)))
    return document


def shard(
    *,
    s3: Any,
    cloudwatch: Any,
    bucket: str,
    cluster: str,
    day: str,
    index: int,
    first: int,
    count: int,
    start: float,
    end: float,
    gpu_hour_usd: float,
    logs: Any = None,
    failure_log_jobs: int = FAILURE_LOG_JOBS,
    exporter_promql: PromQLClient | None = None,
    emitter_promql: PromQLClient | None = None,
    ksm_promql: PromQLClient | None = None,
    dcgm_promql: PromQLClient | None = None,
    classic_pods: bool = False,
) -> dict[str, Any]:
    """One shard's jobs analyzed, their failed jobs' logs read (``failure_log_jobs`` a
    shard, as a whole run reads them), its part written; ``exporter_promql``,
    ``emitter_promql``, ``ksm_promql``, ``dcgm_promql`` and ``classic_pods`` as
    run.analyze_jobs reads them."""
    planned = _plan(s3, bucket, cluster, day)
    jobs = planned["jobs"][first : first + count]
    ranks = {
        job: [RankStats(**r) for r in planned["ranks"][job]]
        for job in jobs
        if job in planned["ranks"]
    }
    run = analyze_jobs(
        cloudwatch=cloudwatch, cluster=cluster, jobs=jobs, ranks=ranks, start=start, end=end,
        gpu_hour_usd=gpu_hour_usd, related_storage=tuple(planned["related_storage"]),
        logs=logs, failure_log_jobs=failure_log_jobs, exporter_promql=exporter_promql,
        emitter_promql=emitter_promql, ksm_promql=ksm_promql, dcgm_promql=dcgm_promql,
        classic_pods=classic_pods,
    )  # fmt: skip
    body = json.dumps(_run_document(run)).encode()
    s3.put_object(Bucket=bucket, Key=part_key(cluster, day, index), Body=body)
    return {"index": index, "jobs": len(jobs), "findings": len(run.findings)}


def read_parts(*, s3: Any, bucket: str, cluster: str, day: str, shards: int) -> TrainingRun:
    """The plan's skips, every part in shard order, then the storage skip: the single run's
    TrainingRun (findings in its order, costs, pods). A missing part is an error, not nothing."""
    planned = _plan(s3, bucket, cluster, day)
    run = TrainingRun(pods=dict(planned["pods"]), pod_nodes=dict(planned.get("pod_nodes", {})))
    _add(run, planned["head"])
    for index in range(shards):
        key = part_key(cluster, day, index)
        _add(run, json.loads(read_required(s3, bucket, key, f": shard {index} did not finish")))
    _add(run, planned["tail"])
    return run
