"""AWS adapters of the training analyzer: which jobs, their metric queries, their ranks (from
CloudWatch Logs Insights over the training log group) and their nodes' GPUs. Read-only."""

import operator
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from gpu_insights_agent.contract.metrics import (
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
    gpu_schema,
    training_log_group,
)
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.shared.exporter_promql import ExporterQueries, node_batches, per_gpu
from lambdas.shared.metric_fetcher import MetricQuery, listed_dimensions
from lambdas.shared.promql import PromQLClient
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
    # Goodput's (lambdas/training_analyzer/goodput/jobs.py): seconds by what the ranks did,
    # the step number, each attempt's first step.
    ("startup_time", TrainingMetric.STARTUP_TIME, "Sum"),
    ("compute_time", TrainingMetric.COMPUTE_TIME, "Sum"),
    ("data_wait_time", TrainingMetric.DATA_WAIT_TIME, "Sum"),
    ("checkpoint_save_time", TrainingMetric.CHECKPOINT_SAVE_TIME, "Sum"),
    ("evaluation_time", TrainingMetric.EVALUATION_TIME, "Sum"),
    ("stalled_time", TrainingMetric.STALLED_TIME, "Sum"),
    ("idle_time", TrainingMetric.IDLE_TIME, "Sum"),
    ("step_number", TrainingMetric.STEP_NUMBER, "Maximum"),
    ("resumed_from", TrainingMetric.RESUMED_FROM_STEP, "Minimum"),
    ("resumes", TrainingMetric.RESUMED_FROM_STEP, "SampleCount"),
)
#: How the hourly values of a ``JOB_METRICS`` statistic add up over groups of one job's
#: series (its attempts' series into the job's); an Average is none of them.
COMBINED: Final[dict[str, Callable[[float, float], float]]] = {
    "Sum": operator.add,
    "SampleCount": operator.add,
    "Maximum": max,
    "Minimum": min,
}


def combined(stat: str, groups: Iterable[Mapping[float, float]]) -> dict[float, float]:
    """The hourly values of ``stat`` over ``groups`` as one series (``COMBINED``)."""
    combine = COMBINED[stat]
    values: dict[float, float] = {}
    for group in groups:
        for hour, value in group.items():
            values[hour] = combine(values[hour], value) if hour in values else value
    return values


#: The fields whose rules read only their sum over the window (failures, successes, saves
#: counted): one point over the window gives the same sum as every hour's.
WINDOW_SUMS: Final = frozenset({"checkpoint_saves", "failures", "successes"})
#: A job's GPUs' readings: power against the limit of the GPUs in use only (the exporter's
#: allocated reading, which it sends only for a GPU a process or a job's memory holds), so the
#: GPUs of a node that no pod asked for, idle, never lower a job's figures; and SM activity,
#: which the job's reading keeps for the GPU-hours that power reading has.
GPU_METRICS: Final = (
    ("power", GpuMetric.ALLOCATED_POWER_UTILIZATION),
    ("sm", GpuMetric.SM_ACTIVE),
)

#: Logs Insights' row caps: "If you omit limit, the query defaults to returning up to 10,000 log
#: events. You can specify a limit value of up to 100,000." (CloudWatch Logs User Guide,
#: query syntax, ``limit``: https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/CWL_QuerySyntax-Limit.html);
#: "You can retrieve up to 100,000 log event results from a query, if available, by using
#: pagination. Use the nextToken returned in the response to request additional pages of
#: results, with each page returning up to 10,000 log events." (CloudWatch Logs API Reference,
#: GetQueryResults: https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_GetQueryResults.html).
QUERY_DEFAULT_ROWS: Final = 10_000
QUERY_MAX_ROWS: Final = 100_000
PAGE_MAX_ROWS: Final = 10_000
#: A row is one job's rank; this many rows fill a query, so a part that returns as many may
#: have been cut, and is split (``rank_stats``).
RANK_QUERY_LIMIT: Final = QUERY_MAX_ROWS
#: Splits of the job-name range before a rank read gives up (each split halves the jobs a
#: part returned: 2**32 parts are more jobs than any cluster runs).
MAX_SPLITS: Final = 32
#: Characters a job name may have to be a split point inside a query's string literal.
_LITERAL_SAFE = re.compile(r"^[A-Za-z0-9._:/@+=, -]+$")


def rank_query(
    first: str | None = None, before: str | None = None, limit: int = RANK_QUERY_LIMIT
) -> str:
    """Per rank of the jobs named from ``first`` (inclusive) to ``before`` (exclusive), by
    string comparison ("Comparison operators accept all data types as arguments", query syntax,
    "Boolean, comparison, numeric, datetime, and other functions"): steps, step time weighted
    by steps, its steps' work seconds (goodput's wait on the slowest rank), and the node and
    pod it ran on; at most ``limit`` rows."""
    bounds = "".join(
        f' and {DIM_JOB} {op} "{name}"' for op, name in ((">=", first), ("<", before)) if name
    )
    return (
        f"filter ispresent(steps) and ispresent(step_time_seconds){bounds}"
        " | stats sum(steps) as steps, sum(step_time_seconds * steps) / sum(steps) as step_time,"
        f" sum({TrainingMetric.COMPUTE_TIME}) as compute,"
        f" latest({DIM_NODE}) as node, latest({PROP_POD_NAME}) as pod by {DIM_JOB}, {PROP_RANK}"
        f" | limit {limit}"
    )


#: The whole cluster's ranks in one query, the first a run starts.
RANK_QUERY: Final = rank_query()


class RankQueryError(Exception):
    """The rank query could not be read completely; the message says why."""


class QueryTimeoutError(RankQueryError):
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


def _query_rows(
    logs: Any,
    group: str,
    query: str,
    start: float,
    end: float,
    sleep: Callable[[float], None],
    timeout_s: float,
) -> list[list[dict[str, str]]]:
    """Every row of one query: it waits for the query to complete, then reads the pages that
    follow its first (``nextToken``), up to the query's ``limit``."""
    query_id = logs.start_query(
        logGroupName=group, startTime=int(start), endTime=int(end), queryString=query
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
    rows: list[list[dict[str, str]]] = list(response.get("results", []))
    while response.get("nextToken"):
        response = logs.get_query_results(queryId=query_id, nextToken=response["nextToken"])
        rows += response.get("results", [])
    return rows


def _split_point(rows: list[list[dict[str, str]]]) -> str:
    """A job name that cuts the jobs a full part returned in two, each half holding some: the
    median of the names above the lowest that can stand in the query's string literal."""
    names = sorted({cell["value"] for row in rows for cell in row if cell["field"] == DIM_JOB})
    above = [n for n in names[1:] if _LITERAL_SAFE.match(n)]
    if not above:
        raise RankQueryError(
            f"a rank query returned {len(rows):,} rows, all Logs Insights returns, of jobs "
            "whose names cannot split it"
        )
    return above[len(above) // 2]


def rank_stats(
    logs: Any,
    cluster: str,
    *,
    start: float,
    end: float,
    sleep: Callable[[float], None] = time.sleep,
    timeout_s: float = 120.0,
    limit: int = RANK_QUERY_LIMIT,
) -> dict[str, list[RankStats]]:
    """Every job's ranks: one query for the cluster, and where a query returns ``limit`` rows
    (all Logs Insights gives, so perhaps cut), its job-name range split in two and each half
    asked again, until every part returns fewer. A job's ranks are all in one part."""
    group = training_log_group(cluster)
    parts: list[tuple[str | None, str | None, int]] = [(None, None, 0)]
    rows: list[list[dict[str, str]]] = []
    while parts:
        first, before, splits = parts.pop()
        found = _query_rows(
            logs, group, rank_query(first, before, limit), start, end, sleep, timeout_s
        )
        # A part that ends on a whole page without reaching the limit may still be cut: an SDK
        # whose model predates GetQueryResults' paging drops nextToken from the answer, and the
        # read stops at 10,000 rows that look complete. Such a part is split like a full one.
        if len(found) < limit and not (found and len(found) % PAGE_MAX_ROWS == 0):
            rows += found
            continue
        if splits >= MAX_SPLITS:
            raise RankQueryError(f"the rank query was still full after {MAX_SPLITS} splits")
        middle = _split_point(found)
        parts += [(first, middle, splits + 1), (middle, before, splits + 1)]
    return _ranks(rows)


def _ranks(rows: list[list[dict[str, str]]]) -> dict[str, list[RankStats]]:
    ranks: dict[str, list[RankStats]] = {}
    for row in rows:
        fields = {cell["field"]: cell["value"] for cell in row}
        try:
            ranks.setdefault(fields[DIM_JOB], []).append(
                RankStats(
                    rank=str(fields[PROP_RANK]),
                    steps=float(fields["steps"]),
                    mean_step_time=float(fields["step_time"]),
                    node=fields.get("node") or None,
                    pod=fields.get("pod") or None,
                    compute_seconds=float(fields["compute"]) if fields.get("compute") else None,
                )
            )
        except (KeyError, ValueError):
            continue  # a row without a job or rank, or without numbers: nothing to compare
    return ranks


def gpu_series(cloudwatch: Any, cluster: str, nodes: Iterable[str]) -> list[MetricQuery]:
    """``GPU_METRICS`` of every GPU on these nodes, one query each, keyed (node, GPU,
    name) (the listing yields each series once, though moto lists one per stored datapoint);
    the per-GPU set of each metric (``gpu_schema``: the allocated reading's has its Shard)."""
    wanted = set(nodes)
    queries = []
    for name, metric in GPU_METRICS:
        schema = set(gpu_schema(metric))
        for dims in listed_dimensions(
            cloudwatch, NAMESPACE_GPU, str(metric), {DIM_CLUSTER: cluster}
        ):
            if set(dims) == schema and dims[DIM_NODE] in wanted:
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


def gpu_hours_promql(
    promql: PromQLClient,
    cluster: str,
    nodes: Iterable[str],
    *,
    start: float,
    end: float,
    labels: DcgmLabels = CLOUDWATCH,
) -> dict[tuple[str, str, str], dict[float, float]]:
    """(node, GPU, ``GPU_METRICS`` name) -> hour -> the GPU's mean that hour: ``gpu_series``'s
    reading where the exporter sends OTLP (exporter_sink=otlp), with PromQL over its series,
    a batch of nodes a query."""
    queries = ExporterQueries(cluster, labels)
    found: dict[tuple[str, str, str], dict[float, float]] = {}
    for batch in node_batches(nodes):
        for name, metric in GPU_METRICS:
            for (node, gpu), values in per_gpu(
                promql, queries.gpu_mean(str(metric), batch), start, end, labels
            ).items():
                per_hour = found.setdefault((node, gpu, name), {})
                per_hour.update({float(hour): value for hour, value in values.items()})
    return found
