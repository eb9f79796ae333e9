"""The four job alarms as PromQL alarms: OTel mode, where the training emitter sends OTLP.

There the emitter sends the same per-window values as its EMF path, as OTLP gauges named by
``TrainingMetric``, one series per rank and attempt: the resource attributes ``k8s.cluster.name``,
``k8s.namespace.name``, ``k8s.pod.name``, ``k8s.node.name`` and the datapoint attributes
``job_name``, ``rank`` and ``attempt`` (contract.metrics ``OTLP_*``; a restart begins new series,
which the ``by`` below adds to the old within a range), which CloudWatch's PromQL names
``@resource.k8s.cluster.name`` and so on, and bare ``job_name``, ``rank`` ("attributes use a
single-@ scope prefix, for example, @resource.service.name. Datapoint attributes also support
bare (un-prefixed) access", "PromQL querying",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-PromQL-Querying.html).

Each kind is one alarm, no shards: its query aggregates the ranks ``by`` cluster, namespace and
job, as the Metrics Insights alarm's GROUP BY does (cdk/alarms/jobs.py: the same thresholds,
windows and rank function), and keeps only the jobs that breach. "All matching time series
returned by the query are considered to be breaching" and each is a contributor "identified by
its unique set of attributes" ("PromQL alarms",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-promql.html): the
contributor is the job, named by those three labels, and a rank or pod that changes never makes
a second contributor (a second page) of the same job. The notifier names the job from them.

Limits: a query returns at most 500 series before ``PARTIAL_DATA``, and at most 100
contributors are kept in ALARM ("Limits that apply to alarms based on PromQL queries",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-limits.html). Only
breaching jobs are returned, so the 500 bound breaching jobs at once, not jobs; the fleet count
alarm (``catalog.cap_alarms``: ``count(...) >= 90``) pages a mass event before 100. What a query
reads is one series per rank of the cluster: at 10,000 GPUs at most 10,000 ranks (one GPU
each), each range holding two (five for the throughput) one-minute samples. No limit calls for
a split by a label.
"""

from dataclasses import replace
from typing import Final

from cdk.alarms.jobs import (
    GOODPUT_PERIOD_S,
    JOB_GOODPUT_LOW,
    JOB_HUNG,
    JOB_LOSS_NOT_FINITE,
    JOB_LOSS_SPIKE,
    JOB_STEP_TIME_RISE,
    JOB_THROUGHPUT_COLLAPSED,
    MINUTE,
    NAMES_THE_JOB,
    THROUGHPUT_PERIOD_S,
    JobAlarmSettings,
    job_kind_specs,
)
from cdk.alarms.model import AlarmSpec, Comparison
from cdk.alarms.promql import RECOVERY_S, PromQLQuery
from gpu_insights_agent.contract.metrics import OTLP_JOB, TrainingMetric
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.shared.promql import quote_label, quote_string

#: A rank flushes once a minute, at any second of it: the last two minutes hold its newest
#: flush whatever the second the alarm evaluates at, so a rank is never missing from a job's
#: aggregate (a missing rank saving a checkpoint would let ``min`` read the job as hung).
FLUSH_RANGE_S: Final = 2 * MINUTE
NAMES_THE_JOB_PROMQL: Final = (
    "Each contributor (the series' cluster, namespace and job_name labels) names the job."
)

#: Per kind: the metric, how one rank's samples in the range are read, how the ranks of a job
#: are combined (the Metrics Insights alarm's function), and the range. Hung reads each rank's
#: newest overdue seconds and the job's least of them: one rank saving a checkpoint (0) keeps
#: the job from paging. Loss not finite: the job's NaN counts of each rank's worst window.
_KINDS: Final = {
    JOB_HUNG: (TrainingMetric.STEP_OVERDUE, "last_over_time", "min", FLUSH_RANGE_S),
    JOB_LOSS_NOT_FINITE: (TrainingMetric.LOSS_NOT_FINITE, "max_over_time", "sum", FLUSH_RANGE_S),
    JOB_LOSS_SPIKE: (TrainingMetric.LOSS_DEVIATION, "max_over_time", "max", FLUSH_RANGE_S),
    # Even the fastest rank, in each five-minute range (the Metrics Insights period).
    JOB_THROUGHPUT_COLLAPSED: (
        TrainingMetric.THROUGHPUT_RATIO,
        "max_over_time",
        "max",
        THROUGHPUT_PERIOD_S,
    ),
    # Fail-slow: even the fastest rank's newest flush under the ratio, for the whole window.
    JOB_STEP_TIME_RISE: (
        TrainingMetric.THROUGHPUT_RATIO,
        "max_over_time",
        "max",
        FLUSH_RANGE_S,
    ),
    # Goodput now: every rank's every window of the last hour, averaged (each window is one
    # flush long, so the mean is the hour's share of productive step time).
    JOB_GOODPUT_LOW: (TrainingMetric.GOODPUT, "avg_over_time", "avg", GOODPUT_PERIOD_S),
}
_OPERATORS: Final = {Comparison.GREATER_OR_EQUAL: ">=", Comparison.LESS: "<"}


def job_query(
    cluster: str,
    metric: TrainingMetric,
    over_time: str,
    across_ranks: str,
    range_s: int,
    comparison: Comparison,
    threshold: float,
    window_s: int,
    labels: DcgmLabels = CLOUDWATCH,
) -> PromQLQuery:
    """The jobs of ``cluster`` whose ranks' ``metric`` breaches, one series per job. Pending for
    what of ``window_s`` the range does not cover (none for the one-minute kinds): a job whose
    ranks' ranges stay under the throughput fraction from the first to the pending period's end
    has been under it for the whole window, as in every period of the Metrics Insights alarm."""
    q = quote_label
    series = (
        f"{{__name__={quote_string(str(metric))}, {q(labels.cluster)}={quote_string(cluster)}}}"
    )
    selector = f"{series}[{range_s // 60}m]"
    by = ", ".join(q(n) for n in (labels.cluster, labels.namespace, OTLP_JOB))
    query = (
        f"{across_ranks} by ({by}) ({over_time}({selector})) {_OPERATORS[comparison]} {threshold:g}"
    )
    if over_time == "avg_over_time" and range_s > FLUSH_RANGE_S:
        # A mean over the hour, of a job still flushing: once its ranks stop, the range's mean
        # is of ever fewer windows, its last ones (a final save), and would page a job that
        # had ended (the Metrics Insights alarm reads whole clock hours, a job's last one its
        # own windows).
        fresh = f"{series}[{FLUSH_RANGE_S // 60}m]"
        query += f" and {across_ranks} by ({by}) (last_over_time({fresh}))"
    return PromQLQuery(
        query=query,
        evaluation_interval_s=MINUTE,
        pending_period_s=max(0, window_s - range_s),
        recovery_period_s=RECOVERY_S,
        labels=labels,
        lookback_s=range_s,
    )


def promql_job_alarms(
    cluster: str, settings: JobAlarmSettings, labels: DcgmLabels = CLOUDWATCH
) -> list[AlarmSpec]:
    """Each job alarm kind once, a PromQL alarm, with the Metrics Insights alarm's title,
    severity, threshold and window (``job_kind_specs``)."""
    alarms = []
    for spec in job_kind_specs(cluster, settings, shard="0"):
        metric, over_time, across_ranks, range_s = _KINDS[spec.key]
        query = job_query(
            cluster,
            metric,
            over_time,
            across_ranks,
            range_s,
            spec.comparison,
            spec.threshold,
            spec.period_s * spec.datapoints_to_alarm,
            labels,
        )
        alarms.append(
            replace(
                spec,
                kind=spec.key,
                shard=None,
                metric=query,
                period_s=query.evaluation_interval_s,
                evaluation_periods=1,
                datapoints_to_alarm=1,
                description=spec.description.replace(NAMES_THE_JOB, NAMES_THE_JOB_PROMQL),
            )
        )
    return alarms
