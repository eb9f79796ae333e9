"""The training analysis in shards (lambdas/training_analyzer/fleet.py) finds what one run
finds on the same data, finding for finding and in the same order, with the same job costs and
pods (what the merge's GPU-hour attribution and daily files read), whatever the shard size and
the order the Map runs the shards in. CloudWatch, Logs and S3 are real botocore clients
(benchmarks/training_fleet.py)."""

import json
from typing import Any

import pytest

from benchmarks import wire
from benchmarks.training_fleet import Fleet, bucket_client, serve_failure_logs
from lambdas.shared.shard_parts import MissingPartError
from lambdas.training_analyzer import fleet
from lambdas.training_analyzer.run import TrainingRun, analyze_training
from tests.unit.reference_data import failure_log_corpus

#: A CUDA out-of-memory line from the sourced corpus (tests/data/failure_logs/corpus.json).
OOM_LINE = next(s for s in failure_log_corpus() if s.id == "cuda-oom-torch-2x").lines[0]

END = 1_764_288_000.0  # 2025-11-28T00:00:00Z
START = END - 86_400
DAY = "2025-11-28"
JOBS = 45


def _failure_logs(logs: Any, *, refuse: str | None = None) -> Any:
    """Each failed job's pod stream printed the corpus's CUDA OOM."""
    return serve_failure_logs(logs, OOM_LINE, refuse=refuse)


def _single(cloudwatch: Any, logs: Any) -> TrainingRun:
    return analyze_training(
        cloudwatch=cloudwatch, logs=logs, cluster="bench", start=START, end=END, gpu_hour_usd=6.88
    )


def _sharded(
    cloudwatch: Any, logs: Any, s3: Any, per_shard: int, tail: TrainingRun | None = None
) -> tuple[dict[str, Any], TrainingRun]:
    planned = fleet.plan(
        cloudwatch=cloudwatch, logs=logs, s3=s3, bucket="reports", cluster="bench", day=DAY,
        start=START, end=END, related_storage=(), tail=tail or TrainingRun(), per_shard=per_shard,
    )  # fmt: skip
    for item in reversed(planned["shards"]):  # the Map runs shards in any order
        fleet.shard(
            s3=s3, cloudwatch=cloudwatch, bucket="reports", cluster="bench", day=DAY,
            start=START, end=END, gpu_hour_usd=6.88, logs=logs, **item,
        )  # fmt: skip
    merged = fleet.read_parts(
        s3=s3, bucket="reports", cluster="bench", day=DAY, shards=len(planned["shards"])
    )
    return planned, merged


@pytest.mark.parametrize(("per_shard", "shards"), [(1, 45), (7, 7), (45, 1)])
def test_shards_merge_to_the_single_runs_findings_costs_and_pods(
    per_shard: int, shards: int
) -> None:
    cloudwatch, logs = Fleet(JOBS, start=START, end=END).clients()
    single = _single(cloudwatch, _failure_logs(logs))
    kinds = {f.kind for f in single.findings}
    # 73 rule firings, less the 7 data-bound jobs whose idle GPUs are not priced twice, and
    # the 5 failed jobs' causes (every ninth job fails).
    assert len(single.findings) == 66 + 5
    assert len(kinds) == 7  # every rule fires somewhere
    causes = [f for f in single.findings if f.kind == "training_failure_cause"]
    assert [f.resource for f in causes] == [f"job/job-{j:05d}" for j in range(0, JOBS, 9)]
    assert {f.evidence["cause"] for f in causes} == {"cuda_out_of_memory"}
    # It failed in each of the day's 24 hours: its latest three are read.
    assert len(single.failures) == 5 * 3
    objects: dict[str, bytes] = {}
    planned, merged = _sharded(cloudwatch, logs, bucket_client(objects), per_shard)
    assert planned["jobs"] == JOBS
    assert len(planned["shards"]) == shards
    assert sum(s["count"] for s in planned["shards"]) == JOBS
    assert [f.to_json() for f in merged.findings] == [f.to_json() for f in single.findings]
    assert merged.costs == single.costs
    assert list(merged.costs) == list(single.costs)
    assert merged.pods == single.pods
    assert len(merged.pods) == 4 * JOBS
    # The emitter's node of each pod, for the GPU-hour attribution's exact node join.
    assert merged.pod_nodes == single.pod_nodes
    assert len(merged.pod_nodes) == 4 * JOBS
    assert merged.skipped == single.skipped == []
    assert merged.failures == single.failures
    # Every job's goodput, over the window and the attributed day, as the single run's.
    assert len(single.goodput) == len(single.day_goodput) == JOBS
    assert merged.goodput == single.goodput
    assert merged.day_goodput == single.day_goodput
    assert fleet.part_key("bench", DAY, shards - 1) in objects


def test_a_failed_jobs_logs_refused_loses_no_other_finding() -> None:
    """One job's logs read refused: that job is named, every other finding stands."""
    cloudwatch, logs = Fleet(JOBS, start=START, end=END).clients()
    single = _single(cloudwatch, _failure_logs(logs, refuse="job-00009-0"))
    causes = [f.resource for f in single.findings if f.kind == "training_failure_cause"]
    assert causes == ["job/job-00000", "job/job-00018", "job/job-00027", "job/job-00036"]
    assert single.skipped == ["job/job-00009"]
    assert len(single.findings) == 66 + 4 + 1
    (error,) = [f for f in single.findings if f.kind == "analysis_error"]
    assert (error.resource, "(AccessDeniedException)" in error.summary) == ("job/job-00009", True)
    assert {f.job for f in single.failures} == {"job-00000", "job-00018", "job-00027", "job-00036"}


def test_failed_jobs_over_the_cap_are_named_the_most_failures_first() -> None:
    cloudwatch, logs = Fleet(JOBS, start=START, end=END).clients()
    run = analyze_training(
        cloudwatch=cloudwatch, logs=_failure_logs(logs), cluster="bench", start=START, end=END,
        gpu_hour_usd=6.88, failure_log_jobs=2,
    )  # fmt: skip
    causes = [f.resource for f in run.findings if f.kind == "training_failure_cause"]
    # Each failed twice in the window: by name.
    assert causes == ["job/job-00000", "job/job-00009"]
    assert run.skipped == ["job/job-00018", "job/job-00027", "job/job-00036"]
    errors = [f for f in run.findings if f.kind == "analysis_error"]
    assert "over the failure_log_jobs setting's 2 a run" in errors[0].summary


def test_what_the_plan_and_the_storage_read_skip_keeps_its_place_in_the_findings() -> None:
    """The rank query failing (the plan's skip, first) and the storage findings unreadable
    (the handler's tail, after the jobs'): the merged run is still the single run."""
    failing = Fleet(12, start=START, end=END)
    failing.ranks = lambda params: {"status": "Failed", "results": []}  # type: ignore[method-assign]
    cloudwatch, logs = failing.clients()
    _failure_logs(logs)
    tail = TrainingRun()
    tail.skip("s3://reports/findings/storage.jsonl", OSError("refused"))
    single = _single(cloudwatch, logs)
    single.findings += tail.findings
    single.skipped += tail.skipped
    _, merged = _sharded(cloudwatch, logs, bucket_client({}), 5, tail)
    assert (
        merged.skipped
        == single.skipped
        == ["ranks of bench's training jobs", "s3://reports/findings/storage.jsonl"]
    )
    # Failed, with no pod or node known yet: kept, for the GPU-hour attribution to place.
    assert merged.unplaced_failures == single.unplaced_failures
    assert [f.job for f in merged.unplaced_failures] == ["job-00000", "job-00009"]
    assert [f.to_json() for f in merged.findings] == [f.to_json() for f in single.findings]
    assert merged.pods == {}


def test_a_missing_part_is_an_error_naming_the_shard() -> None:
    cloudwatch, logs = Fleet(10, start=START, end=END).clients()
    _failure_logs(logs)
    objects: dict[str, bytes] = {}
    s3 = bucket_client(objects)
    _sharded(cloudwatch, logs, s3, 4)
    del objects[fleet.part_key("bench", DAY, 1)]
    with pytest.raises(MissingPartError, match=r"training-part-00001\.json is missing: shard 1"):
        fleet.read_parts(s3=s3, bucket="reports", cluster="bench", day=DAY, shards=3)
    part = json.loads(objects[fleet.part_key("bench", DAY, 2)])
    assert sorted(part) == [
        "costs", "day_goodput", "failures", "findings", "goodput", "skipped", "unplaced_failures"
    ]  # fmt: skip
    assert len(part["costs"]) == 2  # jobs 8 and 9


def test_the_pods_gpus_unreadable_loses_no_finding_and_no_gpu_figure() -> None:
    """Container Insights' pod series refused (access denied) where the run reads which GPUs
    the pods held: that read is named, and each job is judged on its nodes' GPUs as without
    pod series, every finding of the run without them standing."""
    cloudwatch, logs = Fleet(JOBS, start=START, end=END).clients()
    single = _single(cloudwatch, _failure_logs(logs))
    refusing = Fleet(JOBS, start=START, end=END)
    listed = refusing.list_metrics

    def list_metrics(params: dict[str, Any]) -> dict[str, Any]:
        if params["Namespace"] == "ContainerInsights":
            raise wire.RefusedError("AccessDenied", "not authorized to list Container Insights")
        return listed(params)

    refusing.list_metrics = list_metrics  # type: ignore[method-assign]
    cloudwatch, logs = refusing.clients()
    run = analyze_training(
        cloudwatch=cloudwatch, logs=_failure_logs(logs), cluster="bench", start=START, end=END,
        gpu_hour_usd=6.88, classic_pods=True,
    )  # fmt: skip
    errors = [f.resource for f in run.findings if f.kind == "analysis_error"]
    # (its pods' pending time, read from the same series in Classic, is named too)
    assert errors == [
        "the GPUs bench's training pods held (Container Insights)",
        "pending pods of bench's training jobs",
    ]
    kept = [f.to_json() for f in run.findings if f.kind != "analysis_error"]
    assert kept == [f.to_json() for f in single.findings]
