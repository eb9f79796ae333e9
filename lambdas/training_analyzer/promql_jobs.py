"""The training jobs' reads where the emitter sends OTLP (exporter_sink=otlp, OTel mode): which
jobs, each job's hourly series and baseline, each rank's steps and step time, all with PromQL
over the emitter's gauges. Read-only; what ``aws.py`` reads from ``GpuInsights/Training`` and
the training log group in the EMF path, read here from the only place OTLP puts it.

What the emitter sends (agent/gpu_insights_agent/emitter/otlp.py, ``training_points``): each
flush's values as gauges named by ``TrainingMetric``, one series per rank, with the resource
attributes ``k8s.cluster.name``, ``k8s.namespace.name``, ``k8s.pod.name``, ``k8s.node.name`` and
the datapoint attributes ``job_name``, ``rank`` and ``attempt`` (an emitter older than the
attempt label sends none); CloudWatch's PromQL names a resource
attribute ``@resource.<name>`` and a datapoint attribute bare ("PromQL querying",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-PromQL-Querying.html).
With an OTLP endpoint the emitter sends nothing else: no EMF, so no ``GpuInsights/Training``
metric and no document in the training log group (emitter/training.py ``_sink``).

The EMF path's statistics, per job and hour, are CloudWatch's over every rank's flushes in that
hour; here the same from the same samples: ``Sum`` is ``sum_over_time`` summed over the ranks,
``SampleCount`` ``count_over_time``, ``Average`` the two's quotient (``JOB_METRICS``, one table
for both paths). An hour is ``[h, h + 1h)``, a ``[1h]`` range evaluated a millisecond before its
end (gpu_hours/otel.py ``read_hours``). A rank's step time is weighted by its steps hour by hour
(each hour's mean flush times the hour's steps), where Logs Insights weights each flush: the
same wherever a rank's flushes in an hour step alike, as a steady loop's do; PromQL without a
subquery cannot multiply two series' samples before summing them over time.

Limits (lambdas/shared/promql_limits.py): a response holds fewer than 500 series. The listing
asks by job-name ranges, halved where a range returns that many; the series are read for
``BATCH_JOBS`` jobs a query (one series a job, or a job's attempt for the statistics read by
attempt), a batch halved until each returns fewer, the ranks likewise (one series per rank and
pod).
"""

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from gpu_insights_agent.contract.metrics import OTLP_ATTEMPT, OTLP_JOB, OTLP_RANK, TrainingMetric
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.shared.exporter_promql import hourly, read_hours
from lambdas.shared.promql import (
    PromQLClient,
    PromQLRequestError,
    PromQLTruncatedError,
    Series,
    duration,
    quote_label,
    quote_string,
)
from lambdas.training_analyzer.analysis import JobSeries, RankStats
from lambdas.training_analyzer.aws import COMBINED, JOB_METRICS, combined

#: Jobs a series query names: one series each, well under the 500 a response holds.
BATCH_JOBS: Final = 250
#: The metrics a job is listed by (as ``aws.list_jobs``: a job that stepped, or failed).
LISTED_BY: Final = (TrainingMetric.STEPS, TrainingMetric.JOB_FAILED)
STEPS: Final = TrainingMetric.STEPS
STEP_TIME: Final = TrainingMetric.STEP_TIME
COMPUTE: Final = TrainingMetric.COMPUTE_TIME
#: The highest code point: the listing's first range covers every job name.
_TOP: Final = 0x10FFFF
#: RE2's metacharacters, escaped in a job name matched literally (RE2 syntax: "\\ followed by
#: punctuation is that punctuation", https://github.com/google/re2/wiki/Syntax).
_RE2_SPECIAL: Final = re.compile(r"([\\.+*?()|\[\]{}^$-])")


class JobQueryError(Exception):
    """A job read PromQL cannot answer within its limits; the message says which."""


def literal(name: str) -> str:
    """``name`` as an RE2 pattern that matches it alone."""
    return _RE2_SPECIAL.sub(r"\\\1", name)


#: CloudWatch's statistics of a group's samples and how PromQL computes each over a range.
STATISTICS: Final = ("Sum", "SampleCount", "Average", "Maximum", "Minimum")


@dataclass(frozen=True)
class JobQueries:
    """The PromQL the readers send, for one cluster and label naming: each selector over
    ``window_s`` (an hour for the analyzers' hourly reads; a dashboard widget's period), pinned
    to the range's end with ``at_end`` (a dashboard ranking its jobs once over a day:
    dashboards/promql.py)."""

    cluster: str
    labels: DcgmLabels = CLOUDWATCH
    window_s: int = 3600
    at_end: bool = False

    def select(
        self, metric: TrainingMetric, jobs: str | None = None, *, job: str | None = None
    ) -> str:
        """``metric``'s series of the cluster over the window; ``jobs``: a regex on the job,
        ``job``: one job's name, matched exactly."""
        matchers = [
            f"__name__={quote_string(str(metric))}",
            f"{quote_label(self.labels.cluster)}={quote_string(self.cluster)}",
        ]
        if jobs is not None:
            matchers.append(f"{quote_label(OTLP_JOB)}=~{quote_string(jobs)}")
        if job is not None:
            matchers.append(f"{quote_label(OTLP_JOB)}={quote_string(job)}")
        at = " @ end()" if self.at_end else ""
        return "{" + ", ".join(matchers) + "}" + f"[{duration(self.window_s)}]{at}"

    def by(self, *names: str) -> str:
        """``by (<names>)``; nothing where there are no names (one series of the whole)."""
        if not names:
            return ""
        return "by (" + ", ".join(quote_label(n) for n in names) + ")"

    def statistic(
        self,
        metric: TrainingMetric,
        stat: str,
        jobs: str | None = None,
        keys: Sequence[str] = (OTLP_JOB,),
        *,
        job: str | None = None,
    ) -> str:
        """CloudWatch's ``stat`` (``STATISTICS``) of each group's samples in the window."""
        selector, by = self.select(metric, jobs, job=job), self.by(*keys)
        grouped = f" {by} " if by else " "

        def over(function: str, over_time: str) -> str:
            return f"{function}{grouped}({over_time}_over_time({selector}))"

        if stat == "Sum":
            return over("sum", "sum")
        if stat == "SampleCount":
            return over("sum", "count")
        if stat == "Average":
            return f"{over('sum', 'sum')} / {over('sum', 'count')}"
        if stat == "Maximum":
            return over("max", "max")
        if stat == "Minimum":
            return over("min", "min")
        raise JobQueryError(f"statistic {stat!r}: expected one of {', '.join(STATISTICS)}")

    def listed(self, metric: TrainingMetric, jobs: str) -> str:
        return f"count {self.by(OTLP_JOB)} (count_over_time({self.select(metric, jobs)}))"


def names_regex(jobs: Iterable[str]) -> str:
    return "|".join(literal(job) for job in sorted(jobs))


def _range_regex(prefix: str, low: int, high: int) -> str:
    """Names that are ``prefix`` or go on from it with a character in [low, high]."""
    span = f"\\x{{{low:x}}}-\\x{{{high:x}}}"
    return f"{literal(prefix)}(?:[{span}].*)?"


def list_jobs(
    promql: PromQLClient,
    cluster: str,
    *,
    start: float,
    end: float,
    labels: DcgmLabels = CLOUDWATCH,
) -> list[str]:
    """The jobs that stepped or failed in [start, end). A name range whose answer is full (500
    series, perhaps cut) is asked again in two halves, by the next character's code point."""
    queries = JobQueries(cluster, labels)
    jobs: set[str] = set()
    parts: list[tuple[str, int, int]] = [("", 0, _TOP)]
    while parts:
        prefix, low, high = parts.pop()
        regex = _range_regex(prefix, low, high)
        try:
            for metric in LISTED_BY:
                found = read_hours(promql, queries.listed(metric, regex), start, end)
                jobs.update(s.labels[OTLP_JOB] for s in found if s.labels.get(OTLP_JOB))
        except PromQLTruncatedError:
            if low == high:  # one more character: its names, by the character after it
                parts.append((prefix + chr(low), 0, _TOP))
            else:
                middle = (low + high) // 2
                parts += [(prefix, low, middle), (prefix, middle + 1, high)]
    return sorted(jobs)


def batches(jobs: Sequence[str]) -> list[list[str]]:
    """The jobs in sorted batches of ``BATCH_JOBS``, each one query's."""
    ordered = sorted(jobs)
    return [ordered[i : i + BATCH_JOBS] for i in range(0, len(ordered), BATCH_JOBS)]


def job_series(
    promql: PromQLClient,
    cluster: str,
    jobs: Sequence[str],
    *,
    start: float,
    end: float,
    labels: DcgmLabels = CLOUDWATCH,
    refused: dict[str, str] | None = None,
) -> dict[str, JobSeries]:
    """Each job's hourly series (``JOB_METRICS``: the EMF path's statistics, hour by hour),
    and each attempt's (``JobSeries.attempts``, by the ``attempt`` label) where its series
    carry one: a statistic that adds up over groups (``COMBINED``) is read by job and attempt
    and added up into the job's, in the same query. A job whose attempts fill an answer is
    read as one, without its attempts; a job whose read PromQL refuses is in ``refused`` with
    why (``_split_until_whole``)."""
    queries = JobQueries(cluster, labels)
    series = {job: JobSeries(job=job) for job in jobs}
    #: The jobs read without their attempts (one statistic's groups filled an answer).
    whole: set[str] = set()

    def statistic(field: str, metric: TrainingMetric, stat: str, batch: Sequence[str]) -> None:
        regex = names_regex(batch)
        keys = (OTLP_JOB, OTLP_ATTEMPT) if stat in COMBINED else (OTLP_JOB,)
        try:
            found = read_hours(promql, queries.statistic(metric, stat, regex, keys), start, end)
        except PromQLTruncatedError:
            if len(batch) > 1 or len(keys) == 1:
                raise
            whole.add(batch[0])
            keys = (OTLP_JOB,)
            found = read_hours(promql, queries.statistic(metric, stat, regex, keys), start, end)
        by_job: dict[str, list[Series]] = {}
        for one in found:
            if one.labels.get(OTLP_JOB) in series:
                by_job.setdefault(one.labels[OTLP_JOB], []).append(one)
        for job, groups in by_job.items():
            values = [{float(hour): v for hour, v in hourly(g).items()} for g in groups]
            setattr(series[job], field, combined(stat, values) if len(keys) > 1 else values[0])
            for group, own in zip(groups, values, strict=True):
                attempt = group.labels.get(OTLP_ATTEMPT) if len(keys) > 1 else None
                if attempt:
                    setattr(series[job].attempts.setdefault(attempt, JobSeries(job)), field, own)

    def read(batch: Sequence[str]) -> None:
        for field, metric, stat in JOB_METRICS:
            statistic(field, metric, stat, batch)

    for batch in batches(jobs):
        _split_until_whole(batch, read, refused)
    for job in whole:
        series[job].attempts = {}  # some statistic read without them: goodput by the hour
    return series


def baselines(
    promql: PromQLClient,
    cluster: str,
    jobs: Sequence[str],
    *,
    start: float,
    lookback_s: float,
    labels: DcgmLabels = CLOUDWATCH,
    refused: dict[str, str] | None = None,
) -> dict[str, float]:
    """Each job's mean throughput over the ``lookback_s`` before ``start`` (its earlier runs):
    every flush's ``samples_per_second`` in it, as ``aws.baseline_query``'s one Average; a job
    whose read PromQL refuses is in ``refused`` with why."""
    queries = JobQueries(cluster, labels)
    metric = TrainingMetric.SAMPLES_PER_SECOND
    found: dict[str, float] = {}

    def read(batch: Sequence[str]) -> None:
        regex = names_regex(batch)
        totals = {
            stat: _totals(
                read_hours(
                    promql, queries.statistic(metric, stat, regex), start - lookback_s, start
                )
            )
            for stat in ("Sum", "SampleCount")
        }
        for job, count in totals["SampleCount"].items():
            if count > 0:
                found[job] = totals["Sum"].get(job, 0.0) / count

    for batch in batches(jobs):
        _split_until_whole(batch, read, refused)
    return found


def _totals(series: Iterable[Series]) -> dict[str, float]:
    return {s.labels.get(OTLP_JOB, ""): sum(v for _, v in s.points) for s in series}


@dataclass
class _Rank:
    steps: float = 0.0
    step_seconds: float = 0.0
    #: Its steps' work seconds (the emitter's ``compute_seconds``), None where none was read.
    compute: float | None = None
    #: (time of its last sample, node, pod) of the series seen latest: Logs Insights' latest().
    last: tuple[float, str, str] = (float("-inf"), "", "")


def rank_stats(
    promql: PromQLClient,
    cluster: str,
    jobs: Sequence[str],
    *,
    start: float,
    end: float,
    labels: DcgmLabels = CLOUDWATCH,
    refused: dict[str, str] | None = None,
) -> dict[str, list[RankStats]]:
    """Each job's ranks: steps over [start, end), step time weighted by each hour's steps, and
    the node and pod of the rank's latest series (a restarted rank's newest pod); a job whose
    read PromQL refuses is in ``refused`` with why, and has none."""
    queries = JobQueries(cluster, labels)
    keys = (OTLP_JOB, OTLP_RANK, labels.node, labels.pod)
    ranks: dict[tuple[str, str], _Rank] = {}

    def read(batch: Sequence[str]) -> None:
        regex = names_regex(batch)
        steps = read_hours(promql, queries.statistic(STEPS, "Sum", regex, keys), start, end)
        mean = read_hours(promql, queries.statistic(STEP_TIME, "Average", regex, keys), start, end)
        means = {_key(s, keys): hourly(s) for s in mean}
        work = read_hours(promql, queries.statistic(COMPUTE, "Sum", regex, keys), start, end)
        for s in work:
            job, rank, _, _ = _key(s, keys)
            if job and rank:
                stats = ranks.setdefault((job, rank), _Rank())
                stats.compute = (stats.compute or 0.0) + sum(hourly(s).values())
        for s in steps:
            job, rank, node, pod = _key(s, keys)
            if not job or not rank:
                continue
            rank_means = means.get((job, rank, node, pod), {})
            stats = ranks.setdefault((job, rank), _Rank())
            for hour, count in hourly(s).items():
                if hour in rank_means:
                    stats.steps += count
                    stats.step_seconds += count * rank_means[hour]
            latest = max((t for t, _ in s.points), default=float("-inf"))
            stats.last = max(stats.last, (latest, node, pod))

    for batch in batches(jobs):
        _split_until_whole(batch, read, refused)
    out: dict[str, list[RankStats]] = {}
    for (job, rank), stats in sorted(ranks.items()):
        if stats.steps > 0:
            out.setdefault(job, []).append(
                RankStats(
                    rank=rank,
                    steps=stats.steps,
                    mean_step_time=stats.step_seconds / stats.steps,
                    node=stats.last[1] or None,
                    pod=stats.last[2] or None,
                    compute_seconds=stats.compute,
                )
            )
    return out


def _key(series: Series, keys: Sequence[str]) -> tuple[str, str, str, str]:
    job, rank, node, pod = (series.labels.get(k, "") for k in keys)
    return job, rank, node, pod


#: The status of a query the API refuses as written (Prometheus's ``bad_data``: "400 Bad
#: Request when parameters are missing or incorrect", HTTP API, "Format overview",
#: https://prometheus.io/docs/prometheus/latest/querying/api/#format-overview).
BAD_REQUEST: Final = 400


def _split_until_whole(
    batch: Sequence[str],
    read: Callable[[Sequence[str]], None],
    refused: dict[str, str] | None = None,
) -> None:
    """``read(batch)``, or where its answer is full (500 series), each half's. With
    ``refused``, a batch the API refuses as written (one job's name it cannot parse) is read
    in halves too, so that the refusal costs that job's read alone: the job goes in
    ``refused`` with why, and the batch's others are read."""
    try:
        read(batch)
    except PromQLTruncatedError as err:
        if len(batch) == 1:
            raise JobQueryError(f"job {batch[0]}: its ranks fill a PromQL answer: {err}") from err
    except PromQLRequestError as err:
        if refused is None or err.status != BAD_REQUEST:
            raise
        if len(batch) == 1:
            refused[batch[0]] = f"PromQL refused its read: {err}"
            return
    else:
        return
    middle = len(batch) // 2
    _split_until_whole(batch[:middle], read, refused)
    _split_until_whole(batch[middle:], read, refused)
