"""AWS adapters of the training analyzer: which jobs, their metric queries, their ranks (from
CloudWatch Logs Insights over the training log group) and their nodes' GPUs. Read-only."""

import time
from collections.abc import Callable, Iterable
from typing import Any, Final

from contract.metrics import (
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_JOB,
    DIM_NODE,
    NAMESPACE_GPU,
    NAMESPACE_TRAINING,
    PROP_POD_NAME,
    PROP_RANK,
    GpuMetric,
    TrainingMetric,
    training_log_group,
)
from lambdas.shared.metric_fetcher import MetricQuery, listed_dimensions
from lambdas.training_analyzer.analysis import RankStats

PERIOD_S: Final = 3600

#: (field of JobSeries, metric, statistic)
JOB_METRICS: Final = (
    ("steps", TrainingMetric.STEPS, "Sum"),
    ("step_time", TrainingMetric.STEP_TIME, "Average"),
    ("data_wait", TrainingMetric.DATA_WAIT, "Average"),
    ("samples_per_second", TrainingMetric.SAMPLES_PER_SECOND, "Average"),
    ("checkpoint_save", TrainingMetric.CHECKPOINT_SAVE, "Average"),
    ("checkpoint_saves", TrainingMetric.CHECKPOINT_SAVE, "SampleCount"),
    ("failures", TrainingMetric.JOB_FAILED, "Sum"),
    ("successes", TrainingMetric.JOB_SUCCEEDED, "Sum"),
)
#: The fields whose rules read only their sum over the window (failures, successes, saves
#: counted): one point over the window gives the same sum as every hour's.
WINDOW_SUMS: Final = frozenset({"checkpoint_saves", "failures", "successes"})
GPU_METRICS: Final = (("power", GpuMetric.POWER_UTILIZATION), ("sm", GpuMetric.SM_ACTIVE))

#: Per rank: steps, step time weighted by steps, and the node it ran on.
RANK_QUERY: Final = (
    "filter ispresent(steps) and ispresent(step_time_seconds)"
    " | stats sum(steps) as steps, sum(step_time_seconds * steps) / sum(steps) as step_time,"
    f" latest({DIM_NODE}) as node, latest({PROP_POD_NAME}) as pod by {DIM_JOB}, {PROP_RANK}"
    " | limit 10000"
)


class QueryTimeoutError(Exception):
    """Logs Insights did not finish the rank query in time."""


def list_jobs(cloudwatch: Any, cluster: str) -> list[str]:
    jobs: set[str] = set()
    for metric in (TrainingMetric.STEPS, TrainingMetric.JOB_FAILED):
        for dims in listed_dimensions(
            cloudwatch, NAMESPACE_TRAINING, str(metric), {DIM_CLUSTER: cluster}
        ):
            if set(dims) == {DIM_CLUSTER, DIM_JOB}:
                jobs.add(dims[DIM_JOB])
    return sorted(jobs)


def job_queries(cluster: str, job: str, window_s: int | None = None) -> list[MetricQuery]:
    """Every series of the job hourly; given the window's length, the ``WINDOW_SUMS`` as one
    point over it (the datapoint floor of the rules that read them)."""
    dims = ((DIM_CLUSTER, cluster), (DIM_JOB, job))
    return [
        MetricQuery(
            (job, field),
            NAMESPACE_TRAINING,
            str(metric),
            dims,
            stat,
            window_s if window_s and field in WINDOW_SUMS else PERIOD_S,
        )
        for field, metric, stat in JOB_METRICS
    ]


def baseline_query(cluster: str, job: str, lookback_s: int) -> MetricQuery:
    """The job's mean throughput over the window before this one: its earlier runs."""
    dims = ((DIM_CLUSTER, cluster), (DIM_JOB, job))
    return MetricQuery(
        (job, "baseline"),
        NAMESPACE_TRAINING,
        str(TrainingMetric.SAMPLES_PER_SECOND),
        dims,
        "Average",
        lookback_s,
    )


def rank_stats(
    logs: Any,
    cluster: str,
    *,
    start: float,
    end: float,
    sleep: Callable[[float], None] = time.sleep,
    timeout_s: float = 120.0,
) -> dict[str, list[RankStats]]:
    query_id = logs.start_query(
        logGroupName=training_log_group(cluster),
        startTime=int(start),
        endTime=int(end),
        queryString=RANK_QUERY,
    )["queryId"]
    waited = 0.0
    while True:
        response = logs.get_query_results(queryId=query_id)
        status = response["status"]
        if status == "Complete":
            break
        if status in {"Failed", "Cancelled", "Timeout", "Unknown"}:
            raise QueryTimeoutError(f"the rank query ended {status}")
        if waited >= timeout_s:
            raise QueryTimeoutError(f"the rank query took longer than {timeout_s:.0f} s")
        sleep(1.0)
        waited += 1.0
    ranks: dict[str, list[RankStats]] = {}
    for row in response.get("results", []):
        fields = {cell["field"]: cell["value"] for cell in row}
        try:
            ranks.setdefault(fields[DIM_JOB], []).append(
                RankStats(
                    rank=str(fields[PROP_RANK]),
                    steps=float(fields["steps"]),
                    mean_step_time=float(fields["step_time"]),
                    node=fields.get("node") or None,
                    pod=fields.get("pod") or None,
                )
            )
        except (KeyError, ValueError):
            continue  # a row without a job or rank, or without numbers: nothing to compare
    return ranks


def gpu_series(cloudwatch: Any, cluster: str, nodes: Iterable[str]) -> list[MetricQuery]:
    """Power utilization and SM activity of every GPU on these nodes, one query each (the
    listing yields each series once, though moto lists one per stored datapoint)."""
    wanted = set(nodes)
    queries = []
    for name, metric in GPU_METRICS:
        for dims in listed_dimensions(
            cloudwatch, NAMESPACE_GPU, str(metric), {DIM_CLUSTER: cluster}
        ):
            if set(dims) == {DIM_CLUSTER, DIM_NODE, DIM_GPU_INDEX} and dims[DIM_NODE] in wanted:
                queries.append(
                    MetricQuery(
                        (dims[DIM_NODE], dims[DIM_GPU_INDEX], name),
                        NAMESPACE_GPU,
                        str(metric),
                        tuple(sorted(dims.items())),
                        "Average",
                        PERIOD_S,
                    )
                )
    return queries
