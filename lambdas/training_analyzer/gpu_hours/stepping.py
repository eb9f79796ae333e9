"""The hours in which each job stepped: the training emitter's ``steps`` per job (ClusterName,
JobName), summed hourly over the attributed window, read with GetMetricData in full batches.
An hour with steps is work for the job's pods, whatever their GPUs drew (attribution.py)."""

from collections.abc import Iterable
from typing import Any, Final

from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_JOB,
    NAMESPACE_TRAINING,
    TrainingMetric,
)
from lambdas.shared.metric_fetcher import MetricQuery, fetch

HOUR: Final = 3600


def stepping_queries(cluster: str, jobs: Iterable[str]) -> list[MetricQuery]:
    return [
        MetricQuery(
            (job,),
            NAMESPACE_TRAINING,
            str(TrainingMetric.STEPS),
            ((DIM_CLUSTER, cluster), (DIM_JOB, job)),
            "Sum",
            HOUR,
        )
        for job in sorted(set(jobs))
    ]


def stepping_hours(
    cloudwatch: Any, cluster: str, jobs: Iterable[str], *, start: float, end: float
) -> tuple[dict[str, set[int]], dict[str, str]]:
    """Per job, the hours (epoch seconds of their start) with steps; and the jobs whose series
    CloudWatch failed, with why (their hours are unknown, not stepless)."""
    hours: dict[str, set[int]] = {}
    failed: dict[str, str] = {}
    for batch in fetch(cloudwatch, stepping_queries(cluster, jobs), start=start, end=end):
        for series in batch:
            job = series.query.key[0]
            if series.error:
                failed[job] = series.error
                continue
            hours[job] = {
                int(t.timestamp()) // HOUR * HOUR
                for t, v in zip(series.timestamps, series.values, strict=True)
                if v > 0
            }
    return hours, failed
