"""The hours in which each job stepped: the training emitter's ``steps`` per job (ClusterName,
JobName), summed hourly over the attributed window, read with GetMetricData in full batches;
where the emitter sends OTLP (exporter_sink=otlp, OTel mode), with PromQL over its ``steps``
gauges (``stepping_hours_promql``: there is no ``GpuInsights/Training`` metric to read then).
An hour with steps is work for the job's pods, whatever their GPUs drew (attribution.py)."""

from collections.abc import Iterable
from typing import Any, Final

from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_JOB,
    NAMESPACE_TRAINING,
    OTLP_JOB,
    TrainingMetric,
)
from lambdas.shared.exporter_promql import hourly, read_hours
from lambdas.shared.metric_fetcher import MetricQuery, fetch
from lambdas.shared.promql import PromQLClient
from lambdas.training_analyzer.promql_jobs import JobQueries, batches, names_regex

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


def stepping_hours_promql(
    promql: PromQLClient, cluster: str, jobs: Iterable[str], *, start: float, end: float
) -> tuple[dict[str, set[int]], dict[str, str]]:
    """``stepping_hours`` from the emitter's OTLP series: each job's steps summed hourly over
    its ranks (promql_jobs.py ``JobQueries``, ``BATCH_JOBS`` jobs a query). A PromQL error
    fails the whole read (the caller skips the attribution, saying why)."""
    queries = JobQueries(cluster)
    hours: dict[str, set[int]] = {}
    for batch in batches(list(set(jobs))):
        query = queries.statistic(TrainingMetric.STEPS, "Sum", names_regex(batch))
        for series in read_hours(promql, query, start, end):
            job = series.labels.get(OTLP_JOB, "")
            if job in batch:
                hours[job] = {h for h, v in hourly(series).items() if v > 0}
    return hours, {}
