"""AWS adapters of the weekly report: read-only reads of metrics, alarm history and finding
files. Clients are injected."""

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, date, datetime
from typing import Any

from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_NODE,
    DIM_XID_CODE,
    FAIL_SLOW_CULPRIT_METRIC,
    NAMESPACE_GPU,
    NAMESPACE_TRAINING,
    OTLP_JOB,
    GpuMetric,
    TrainingMetric,
)
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.shared.exporter_promql import (
    HOUR,
    ExporterQueries,
    counter_increase,
    hourly,
    read_hours,
)
from lambdas.shared.metric_fetcher import MetricQuery, fetch, listed_dimensions
from lambdas.shared.promql import PromQLClient
from lambdas.shared.s3_objects import read_object
from lambdas.shared.serving_table import serving_key
from lambdas.training_analyzer.aws import list_jobs
from lambdas.training_analyzer.promql_jobs import JobQueries, batches, names_regex
from lambdas.training_analyzer.promql_jobs import list_jobs as list_jobs_promql
from lambdas.weekly_report.figures import GpuDay, JobCosts, read_job_costs
from lambdas.weekly_report.serving_section import ServingDays, read_days
from lambdas.weekly_report.week import days as week_days
from lambdas.weekly_report.week import epoch

DAY = 86_400


def _cluster_query(key: str, cluster: str, metric: GpuMetric, stat: str) -> MetricQuery:
    return MetricQuery((key,), NAMESPACE_GPU, str(metric), ((DIM_CLUSTER, cluster),), stat, DAY)


def gpu_days(
    cloudwatch: Any, cluster: str, start: date, end: date, interval_s: float
) -> list[GpuDay]:
    """Per day: the mean power utilization and SM activity from the cluster-level series, and
    the GPU-hours their samples cover (samples x the exporter's interval), which weight them.
    GPU-hours by class come from the GPU-hour attribution, not from here."""
    queries = [
        _cluster_query("samples", cluster, GpuMetric.POWER_UTILIZATION, "SampleCount"),
        _cluster_query("power", cluster, GpuMetric.POWER_UTILIZATION, "Average"),
        _cluster_query("sm", cluster, GpuMetric.SM_ACTIVE, "Average"),
    ]
    values: dict[str, dict[date, float]] = defaultdict(dict)
    for batch in fetch(cloudwatch, queries, start=epoch(start), end=epoch(end)):
        for series in batch:
            for t, v in zip(series.timestamps, series.values, strict=True):
                values[series.query.key[0]][t.date()] = v
    hours = interval_s / 3600
    return [
        GpuDay(
            day=day,
            sampled_gpu_hours=values["samples"].get(day, 0.0) * hours,
            power_utilization=values["power"].get(day),
            sm_active=values["sm"].get(day),
        )
        for day in week_days(start, end)
    ]


def gpu_days_promql(
    promql: PromQLClient,
    cluster: str,
    start: date,
    end: date,
    interval_s: float,
    labels: DcgmLabels = CLOUDWATCH,
) -> list[GpuDay]:
    """``gpu_days`` where the exporter sends OTLP: the cluster's samples of power utilization
    and SM activity, and their sums, hour by hour with PromQL (a day's ``[1d]`` range would
    fill a whole 24-hour scan, leaving no room to page), added up per day: a day's mean is of
    every sample in it, as the cluster series' daily ``Average`` is."""
    queries = ExporterQueries(cluster, labels)
    power, sm = str(GpuMetric.POWER_UTILIZATION), str(GpuMetric.SM_ACTIVE)
    reads = {
        "samples": queries.cluster_samples(power),
        "power_sum": queries.cluster_sum(power),
        "sm_samples": queries.cluster_samples(sm),
        "sm_sum": queries.cluster_sum(sm),
    }
    values: dict[str, dict[date, float]] = {name: defaultdict(float) for name in reads}
    for name, query in reads.items():
        for series in read_hours(promql, query, epoch(start), epoch(end)):
            for hour, value in hourly(series).items():
                values[name][datetime.fromtimestamp(hour, UTC).date()] += value

    def mean(total: str, samples: str, day: date) -> float | None:
        count = values[samples].get(day, 0.0)
        return values[total].get(day, 0.0) / count if count else None

    hours = interval_s / 3600
    return [
        GpuDay(
            day=day,
            sampled_gpu_hours=values["samples"].get(day, 0.0) * hours,
            power_utilization=mean("power_sum", "samples", day),
            sm_active=mean("sm_sum", "sm_samples", day),
        )
        for day in week_days(start, end)
    ]


def xid_counts_promql(
    promql: PromQLClient, cluster: str, start: date, end: date, labels: DcgmLabels = CLOUDWATCH
) -> list[tuple[str, str, float]]:
    """``xid_counts`` where the exporter sends OTLP: each (node, code)'s XIDs in the week from
    the exporter's cumulative counters per GPU and code (``gpu_xid_errors``), each hour's last
    value read from a day before the week (a range selector's longest reach: the base of a
    counter sent every cycle) to its end. A counter with no value in that day counts whole:
    it was born in the week, or, sent only at its XIDs, last stepped more than a day before,
    then its earlier XIDs are counted too (more, never fewer, than happened)."""
    queries = ExporterQueries(cluster, labels)
    since = epoch(start)
    found = read_hours(promql, queries.counters(str(GpuMetric.XID_ERRORS)), since - DAY, epoch(end))
    counts: dict[tuple[str, str], float] = defaultdict(float)
    for series in found:
        node = series.labels.get(labels.node, "")
        code = series.labels.get(labels.xid_code, "")
        points = [(float(hour), value) for hour, value in hourly(series).items()]
        counts[(node, code)] += counter_increase(points, since - HOUR)
    return [(node, code, n) for (node, code), n in sorted(counts.items()) if n > 0]


def xid_counts(
    cloudwatch: Any, cluster: str, start: date, end: date
) -> list[tuple[str, str, float]]:
    queries = []
    listed = listed_dimensions(
        cloudwatch, NAMESPACE_GPU, str(GpuMetric.XID_ERRORS), {DIM_CLUSTER: cluster}
    )
    for dims in listed:
        if DIM_NODE in dims and DIM_XID_CODE in dims:
            queries.append(
                MetricQuery(
                    (dims[DIM_NODE], dims[DIM_XID_CODE]),
                    NAMESPACE_GPU,
                    str(GpuMetric.XID_ERRORS),
                    tuple(sorted(dims.items())),
                    "Sum",
                    DAY * 7,
                )
            )
    counts: dict[tuple[str, str], float] = defaultdict(float)
    for batch in fetch(cloudwatch, queries, start=epoch(start), end=epoch(end)):
        for series in batch:
            node, code = series.query.key
            counts[(node, code)] += sum(series.values)
    return [(node, code, n) for (node, code), n in counts.items() if n > 0]


def fail_slow_counts(
    cloudwatch: Any, cluster: str, nodes: Iterable[str], start: date, end: date
) -> dict[str, int]:
    """Each node's fail-slow pages that named it as the culprit between ``start`` and ``end``
    (the notifier's ``fail_slow_culprits``: lambdas/notifier/culprit_record.py), read with
    GetMetricData for ``nodes`` (those the GPU-hour tables saw) and for every node ListMetrics
    lists. "ListMetrics doesn't return information about metrics if those metrics haven't
    reported data in the past two weeks. To retrieve those metrics, use GetMetricData"
    (ListMetrics, Amazon CloudWatch API Reference,
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_ListMetrics.html),
    which reads a series back 455 days at a one-hour period or longer: the tables' nodes are
    read by name over the whole window, a node no table saw only while listed."""
    metric = FAIL_SLOW_CULPRIT_METRIC
    listed = listed_dimensions(cloudwatch, NAMESPACE_GPU, metric, {DIM_CLUSTER: cluster})
    named = {dims[DIM_NODE] for dims in listed if set(dims) == {DIM_CLUSTER, DIM_NODE}}
    queries = [
        MetricQuery(
            (node,),
            NAMESPACE_GPU,
            metric,
            ((DIM_CLUSTER, cluster), (DIM_NODE, node)),
            "Sum",
            DAY,
        )
        for node in sorted(named | set(nodes))
    ]
    counts: dict[str, float] = defaultdict(float)
    for batch in fetch(cloudwatch, queries, start=epoch(start), end=epoch(end)):
        for series in batch:
            counts[series.query.key[0]] += sum(series.values)
    return {node: round(n) for node, n in sorted(counts.items()) if n > 0}


def alarms_raised(
    cloudwatch: Any, alarm_names: Sequence[str], start: date, end: date
) -> list[tuple[str, str]]:
    """The app's metric alarms that went into ALARM during the week, with when: each alarm's
    state updates by its exact name (``alarm_names``, ReportConfig.alarm_names). An
    AlarmName is the one way DescribeAlarmHistory narrows to an alarm (it has no name prefix),
    and the role may read the history of this deployment's alarms only
    (DescribeAlarmHistory's resource is the alarm, ``arn:...:alarm:NAME``, Service
    Authorization Reference, Amazon CloudWatch): one call per alarm, a few hundred a week at
    the largest fleet."""
    raised = []
    for name in alarm_names:
        pages = cloudwatch.get_paginator("describe_alarm_history").paginate(
            AlarmName=name,
            HistoryItemType="StateUpdate",
            StartDate=datetime.fromtimestamp(epoch(start), UTC),
            EndDate=datetime.fromtimestamp(epoch(end), UTC),
        )
        for page in pages:
            for item in page["AlarmHistoryItems"]:
                if item.get("AlarmName") != name:
                    continue
                try:
                    state = json.loads(item.get("HistoryData", "{}"))["newState"]["stateValue"]
                except (ValueError, KeyError, TypeError):
                    continue
                if state == "ALARM":
                    raised.append((name, item["Timestamp"].strftime("%Y-%m-%d %H:%M")))
    return sorted(raised, key=lambda a: a[1])


def finding_texts(
    s3: Any, bucket: str, cluster: str, days: Sequence[date], analyzers: set[str] | None = None
) -> Iterator[str]:
    """Every finding file of these days; each file's analyzer (``<analyzer>.jsonl``) is added
    to ``analyzers``: an analyzer that ran writes its file even when it found nothing."""
    for day in days:
        prefix = f"findings/cluster={cluster}/date={day.isoformat()}/"
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                if analyzers is not None:
                    analyzers.add(item["Key"].rsplit("/", 1)[-1].removesuffix(".jsonl"))
                yield (
                    s3.get_object(Bucket=bucket, Key=item["Key"])["Body"]
                    .read()
                    .decode("utf-8", "replace")
                )


def job_costs(s3: Any, bucket: str, key: str) -> JobCosts:
    """The day's job costs; a corrupt file or entry is skipped and counted (``malformed``)."""
    return read_job_costs(read_object(s3, bucket, key))


def serving_days(s3: Any, bucket: str, cluster: str, start: date, end: date) -> ServingDays:
    """The days' serving tables (the training analyzer's, one a UTC day), one read each."""
    keys = {d: serving_key(cluster, d) for d in week_days(start, end)}
    return read_days({d: read_object(s3, bucket, key) for d, key in keys.items()})


def throughput_by_job_promql(
    promql: PromQLClient, cluster: str, start: date, end: date
) -> dict[str, list[float | None]]:
    """``throughput_by_job`` where the emitter sends OTLP (exporter_sink=otlp): the jobs that
    stepped or failed in the week (promql_jobs.py ``list_jobs``), each day's mean of every rank's
    ``samples_per_second`` in it, from hourly sums and counts (as the daily ``Average`` of the
    EMF path: every flush in the day, not a mean of means)."""
    first, last = epoch(start), epoch(end)
    jobs = list_jobs_promql(promql, cluster, start=first, end=last)
    queries = JobQueries(cluster)
    metric = TrainingMetric.SAMPLES_PER_SECOND
    totals: dict[str, dict[str, dict[date, float]]] = {
        stat: defaultdict(lambda: defaultdict(float)) for stat in ("Sum", "SampleCount")
    }
    for batch in batches(jobs):
        for stat, by_job in totals.items():
            query = queries.statistic(metric, stat, names_regex(batch))
            for series in read_hours(promql, query, first, last):
                job = series.labels.get(OTLP_JOB, "")
                for hour, value in hourly(series).items():
                    by_job[job][datetime.fromtimestamp(hour, UTC).date()] += value
    found: dict[str, list[float | None]] = {}
    for job, counts in totals["SampleCount"].items():
        sums = totals["Sum"].get(job, {})
        by_day = {d: sums.get(d, 0.0) / n for d, n in counts.items() if n}
        if by_day:
            found[job] = [by_day.get(d) for d in week_days(start, end)]
    return dict(sorted(found.items()))


def throughput_by_job(
    cloudwatch: Any, cluster: str, start: date, end: date
) -> dict[str, list[float | None]]:
    jobs = list_jobs(cloudwatch, cluster)
    queries = [
        MetricQuery(
            (job,),
            NAMESPACE_TRAINING,
            str(TrainingMetric.SAMPLES_PER_SECOND),
            ((DIM_CLUSTER, cluster), ("JobName", job)),
            "Average",
            DAY,
        )
        for job in jobs
    ]
    all_days = week_days(start, end)
    found: dict[str, list[float | None]] = {}
    for batch in fetch(cloudwatch, queries, start=epoch(start), end=epoch(end)):
        for series in batch:
            by_day = {t.date(): v for t, v in zip(series.timestamps, series.values, strict=True)}
            if by_day:
                found[series.query.key[0]] = [by_day.get(d) for d in all_days]
    return found
