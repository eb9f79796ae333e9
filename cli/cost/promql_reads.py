"""What the analyzers' and the weekly report's PromQL costs to send in OTel mode: a model of
the requests each reader sends and the samples they scan, reader by reader, from the queries
the readers build (their own query builders) and the fleet's size, in time linear in the jobs
and nodes. It counts:

- every OTel run: the GPU-hour attribution's ``read_holds`` over the day a run attributes, and
  the GPU memory right-sizing's ``read_gpu_memory_otel`` over its lookback;
- with the OTLP sink (exporter_sink=otlp: the exporter's and the training emitter's series are
  in CloudWatch's OTLP store only), the training analyzer's job reads too (promql_jobs.py: the
  listing, the ranks, the series, the baselines; aws.py ``gpu_hours_promql`` for the jobs'
  nodes), the attribution's exporter GPU-hours and stepping hours, and, once a week, the weekly
  report's GPU days, XIDs and throughput.

Each read is ``read_hours``: a query paged within the API's 24-hour scans
(lambdas/shared/promql.py ``pages``), one request a page. Its answer is as a fleet (``Fleet``)
would give it: a query grouped by node alone holds the nodes it selects, one grouped by job the
jobs it matches, one grouped by rank each matched job's ranks (one a GPU, the fleet's GPUs
shared among the jobs, on consecutive nodes); an answer of ``MAX_SERIES`` series or more is
refused as truncated at its first page, and its reader goes on as it does then (the listing
halves its name range, the ranks halve their batch, the node-led reads stop). Each range
selector scans, at each evaluation, its range's samples of every series it selects, at its
sender's rate (``rate_per_hour``): DCGM's at the add-on's scrape (every GPU of the cluster, or
of the node it names; a pod's selector counted as every GPU of its node, an upper bound), the
exporter's at its interval (the XID counters as one a GPU, an upper bound), the emitter's at
its flush (every rank of the jobs it matches). The job names are the fleet's ``job_names``.

tests/oracles/promql_recorder.py runs the real readers against a client that records each
request and answers as the same fleet; tests/unit/cli/cost/test_promql_model.py holds the model
to it within 1% on fleets up to 500 jobs.
"""

import bisect
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

from gpu_insights_agent.contract.metrics import OTLP_JOB, OTLP_RANK, GpuMetric, TrainingMetric
from lambdas.shared.events import attributed_day
from lambdas.shared.exporter_promql import EDGE, HOUR, NODES_PER_QUERY, ExporterQueries
from lambdas.shared.promql import MAX_SERIES, pages
from lambdas.training_analyzer import promql_jobs
from lambdas.training_analyzer.aws import GPU_METRICS, JOB_METRICS
from lambdas.training_analyzer.goodput.capacity import CapacityQueries
from lambdas.training_analyzer.goodput.lemon import WINDOW_DAYS as LEMON_DAYS
from lambdas.training_analyzer.goodput.pending import PendingQueries
from lambdas.training_analyzer.gpu_hours.aws import EXPORTER
from lambdas.training_analyzer.gpu_hours.otel import SAMPLES_PER_HOUR, OtelQueries
from lambdas.training_analyzer.gpu_memory.otel import MemoryQueries
from lambdas.training_analyzer.handler import training_window
from lambdas.weekly_report.week import epoch, report_week

CLUSTER: Final = "cluster"
#: A run at the default training schedule's time (07:00 UTC), of a day as the handler sees one.
A_RUN: Final = datetime(2026, 12, 1, 7, tzinfo=UTC)
#: One selector: its matchers (a bare or quoted label, an operator, a quoted value) and range.
SELECTOR: Final = re.compile(r"\{((?:[^{}\"]|\"(?:[^\"\\]|\\.)*\")*)\}\[(\d+)([smhd])\]")
_STRING: Final = r'"(?:[^"\\]|\\.)*"'
MATCHER: Final = re.compile(rf"\s*([A-Za-z_]\w*|{_STRING})\s*(=~|!=|!~|=)\s*({_STRING})")
UNIT_S: Final = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
_EXPORTER: Final = frozenset(str(m) for m in GpuMetric)
_EMITTER: Final = frozenset(str(m) for m in TrainingMetric)
#: The highest code point: the listing's first range covers every job name.
_TOP: Final = 0x10FFFF


@dataclass(frozen=True)
class PromQLReads:
    """One run's PromQL: requests sent, and samples they scan at most."""

    requests: int
    samples: float
    #: A node query held the API's most series a response: that read stops there, and says so.
    truncated: bool = False


@dataclass(frozen=True)
class Fleet:
    """What the readers' answers are counted for: ``jobs`` training jobs (none: no job read),
    the exporter sending every ``exporter_interval_s`` and the emitter every
    ``emitter_flush_s``."""

    nodes: int
    gpus_per_node: int
    jobs: int = 0
    exporter_interval_s: float = 10.0
    emitter_flush_s: float = 60.0

    @property
    def node_names(self) -> list[str]:
        return [f"node-{i}" for i in range(self.nodes)]

    @property
    def job_names(self) -> list[str]:
        return [f"job-{i}" for i in range(self.jobs)]

    @property
    def ranks_per_job(self) -> int:
        return max(1, self.nodes * self.gpus_per_node // max(1, self.jobs))

    def rank_node(self, job: int, rank: int) -> str:
        return f"node-{(job * self.ranks_per_job + rank) // self.gpus_per_node % self.nodes}"

    @property
    def job_nodes(self) -> int:
        """The nodes the jobs' ranks run on (``rank_node``'s, all of them)."""
        slots = self.jobs * self.ranks_per_job
        return min(self.nodes, -(-slots // self.gpus_per_node)) if self.jobs else 0


def unquote(text: str) -> str:
    return str(json.loads(text)) if text.startswith('"') else text


def rate_per_hour(metric: str, fleet: Fleet) -> tuple[bool, float]:
    """Whether ``metric`` is the emitter's (its series are ranks, else GPUs), and the samples
    an hour of one of its series: the emitter's flush, the exporter's interval, or DCGM's
    scrape."""
    if metric in _EMITTER:
        return True, 3600 / fleet.emitter_flush_s
    if metric in _EXPORTER:
        return False, 3600 / fleet.exporter_interval_s
    return False, float(SAMPLES_PER_HOUR)


@dataclass
class _Tally:
    """The requests and samples counted so far."""

    fleet: Fleet
    requests: int = 0
    samples: float = 0.0
    #: (selectors, metric, range hours) of each query text, parsed once.
    _shapes: dict[str, tuple[int, str, float]] = field(default_factory=dict)
    #: The evaluations of each page of a window, paged once.
    _pages: dict[tuple[float, float], list[int]] = field(default_factory=dict)

    def _shape(self, query: str) -> tuple[int, str, float]:
        if query not in self._shapes:
            found = list(SELECTOR.finditer(query))
            names = [
                unquote(m[3]) for m in MATCHER.finditer(found[0][1]) if unquote(m[1]) == "__name__"
            ]
            hours = int(found[0][2]) * UNIT_S[found[0][3]] / 3600
            self._shapes[query] = (len(found), names[0], hours)
        return self._shapes[query]

    def read(self, query: str, start: float, end: float, *, units: int, answer: int = 0) -> bool:
        """One ``read_hours`` of ``query`` over [start, end): ``units`` the nodes or jobs each
        selector selects, ``answer`` the series it returns. False where the answer is refused
        as truncated: its first page sent, no more."""
        selectors, metric, hours = self._shape(query)
        emitter, per_hour = rate_per_hour(metric, self.fleet)
        series = units * (self.fleet.ranks_per_job if emitter else self.fleet.gpus_per_node)
        if (start, end) not in self._pages:
            self._pages[(start, end)] = [
                math.floor((last - first) / HOUR) + 1
                for first, last in pages(start + HOUR - EDGE, end - EDGE, HOUR, HOUR)
            ]
        paged = self._pages[(start, end)]
        whole = answer < MAX_SERIES
        evaluations = sum(paged) if whole else paged[0]
        self.requests += len(paged) if whole else 1
        self.samples += selectors * series * evaluations * hours * per_hour
        return whole


def _batches(count: int, size: int) -> list[int]:
    """The sizes of ``count`` items in batches of ``size``."""
    return [min(size, count - i) for i in range(0, count, size)]


class _Names:
    """The fleet's job names, sorted, to count those a listing range matches."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = sorted(names)

    def _from(self, text: str) -> int:
        return bisect.bisect_left(self.names, text)

    def _prefixed(self, prefix: str) -> int:
        """The index past the names that start with ``prefix``."""
        if not prefix:
            return len(self.names)
        return self._from(prefix[:-1] + chr(ord(prefix[-1]) + 1))

    def matched(self, prefix: str, low: int, high: int) -> int:
        """Names that are ``prefix`` or go on from it with a character in [low, high]
        (promql_jobs.py ``_range_regex``)."""
        exact = self._from(prefix) < len(self.names) and self.names[self._from(prefix)] == prefix
        end = self._prefixed(prefix) if high == _TOP else self._from(prefix + chr(high + 1))
        return int(exact) + max(0, end - self._from(prefix + chr(low)))


def _list_jobs(tally: _Tally, names: _Names, start: float, end: float) -> None:
    """promql_jobs.py ``list_jobs``: each name range, by each listing metric; a full answer
    asks again in halves (a range of one character, by the character after it)."""
    queries = promql_jobs.JobQueries(CLUSTER)
    listed = [queries.listed(metric, "x") for metric in promql_jobs.LISTED_BY]
    parts: list[tuple[str, int, int]] = [("", 0, _TOP)]
    while parts:
        prefix, low, high = parts.pop()
        matched = names.matched(prefix, low, high)
        for query in listed:
            if not tally.read(query, start, end, units=matched, answer=matched):
                if low == high:
                    parts.append((prefix + chr(low), 0, _TOP))
                else:
                    middle = (low + high) // 2
                    parts += [(prefix, low, middle), (prefix, middle + 1, high)]
                break


def _rank_stats(tally: _Tally, jobs: int, start: float, end: float) -> None:
    """promql_jobs.py ``rank_stats``: each batch's steps, mean step time and work seconds by
    rank, a batch
    whose ranks fill an answer read in halves."""
    queries = promql_jobs.JobQueries(CLUSTER)
    keys = (OTLP_JOB, OTLP_RANK, queries.labels.node, queries.labels.pod)
    steps = queries.statistic(promql_jobs.STEPS, "Sum", "x", keys)
    mean = queries.statistic(promql_jobs.STEP_TIME, "Average", "x", keys)
    work = queries.statistic(promql_jobs.COMPUTE, "Sum", "x", keys)
    ranks = tally.fleet.ranks_per_job

    def split(size: int) -> None:
        if tally.read(steps, start, end, units=size, answer=size * ranks):
            tally.read(mean, start, end, units=size, answer=size * ranks)
            tally.read(work, start, end, units=size, answer=size * ranks)
        elif size == 1:
            raise promql_jobs.JobQueryError(f"{ranks} ranks of one job fill a PromQL answer")
        else:
            split(size // 2)
            split(size - size // 2)

    for size in _batches(jobs, promql_jobs.BATCH_JOBS):
        split(size)


def _per_batch(tally: _Tally, jobs: int, queries: Sequence[str], start: float, end: float) -> None:
    """Each batch of ``BATCH_JOBS`` jobs read by each of ``queries`` (one series a job)."""
    for size in _batches(jobs, promql_jobs.BATCH_JOBS):
        for query in queries:
            tally.read(query, start, end, units=size, answer=size)


def _per_node_batch(
    tally: _Tally, nodes: int, queries: Sequence[str], start: float, end: float
) -> None:
    """Each batch of ``NODES_PER_QUERY`` nodes (``node_batches``) read by each of ``queries``
    (per GPU)."""
    for size in _batches(nodes, NODES_PER_QUERY):
        for query in queries:
            tally.read(query, start, end, units=size)


def _node_led(
    tally: _Tally, nodes_query: str, per_node: Sequence[str], start: float, end: float
) -> bool:
    """A node query, then each node's ``per_node`` queries; False where the node query's
    answer is full (its reader stops there)."""
    nodes = tally.fleet.nodes
    if not tally.read(nodes_query, start, end, units=nodes, answer=nodes):
        return False
    for _ in range(nodes):
        for query in per_node:
            tally.read(query, start, end, units=1)
    return True


def _statistics(metrics: Sequence[tuple[TrainingMetric, str]]) -> list[str]:
    queries = promql_jobs.JobQueries(CLUSTER)
    return [queries.statistic(metric, stat, "x") for metric, stat in metrics]


def analyzer_reads(
    nodes: int,
    gpus_per_node: int,
    lookback_days: int,
    fleet: Fleet | None = None,
    *,
    jobs: int = 0,
) -> PromQLReads:
    """The requests and samples of one training analyzer run over a fleet of ``nodes`` GPU
    nodes; with ``fleet`` (its jobs and rates) the OTLP sink's reads too, in the run's order
    (run.py ``analyze_training``, then handler.py ``_publish``). Where the run has training
    jobs (``fleet``'s, else ``jobs``), their pods' pending time is read from Kube State
    Metrics over the lookback (goodput/pending.py), and the GPUs their pods held from DCGM's
    series of their nodes (job_gpus.py)."""
    otlp = fleet is not None
    fleet = fleet or Fleet(nodes, gpus_per_node)
    tally = _Tally(fleet)
    start, end = training_window(A_RUN.timestamp(), lookback_days)
    day_start, day_end, _ = attributed_day(end)
    exporter, dcgm, memory = ExporterQueries(CLUSTER), OtelQueries(CLUSTER), MemoryQueries(CLUSTER)
    jobs = fleet.jobs if otlp else 0
    if otlp:
        _list_jobs(tally, _Names(fleet.job_names), start, end)
        _rank_stats(tally, jobs, start, end)
        job_stats = [(metric, stat) for _, metric, stat in JOB_METRICS]
        _per_batch(tally, jobs, _statistics(job_stats), start, end)
        baseline = TrainingMetric.SAMPLES_PER_SECOND
        stats = _statistics([(baseline, "Sum"), (baseline, "SampleCount")])
        _per_batch(tally, jobs, stats, start - (end - start), start)
        means = [exporter.gpu_mean(str(metric), ("n",)) for _, metric in GPU_METRICS]
        _per_node_batch(tally, fleet.job_nodes, means, start, end)
    if fleet.jobs or jobs:  # Kube State Metrics' pod series, counted as every GPU (a bound)
        pending = PendingQueries(CLUSTER)
        for query in (pending.full_samples(), pending.gpu_samples()):
            tally.read(query, start, end, units=nodes)
        # The GPUs the jobs' pods held (job_gpus.py): DCGM's samples on each of their nodes
        # (with the file sink the jobs' nodes are not modelled: every node, a bound).
        held = [dcgm.gpu_samples("n"), dcgm.pod_samples("n")]
        for _ in range(fleet.job_nodes if otlp else nodes):
            for query in held:
                tally.read(query, start, end, units=1)
    whole = True
    if otlp:
        read = {"Average": exporter.gpu_mean, "Minimum": exporter.gpu_min}
        per_gpu = [
            read.get(stat, exporter.gpu_samples)(str(metric), ("n",))
            for _, metric, stat in EXPORTER
        ]
        healthy = exporter.nodes(str(GpuMetric.HEALTHY))
        whole = tally.read(healthy, day_start, day_end, units=nodes, answer=nodes)
        if whole:
            _per_node_batch(tally, nodes, per_gpu, day_start, day_end)
    holds = [dcgm.gpu_watts("n"), dcgm.gpu_samples("n"), dcgm.pod_samples("n"), dcgm.pod_watts("n")]
    whole = whole and _node_led(tally, dcgm.nodes(), holds, day_start, day_end)
    if whole and otlp:
        stepping = _statistics([(TrainingMetric.STEPS, "Sum")])
        _per_batch(tally, jobs, stepping, day_start, day_end)
    if whole:  # the funnel's paid stage: Kube State Metrics' GPU capacity of every node
        capacity = CapacityQueries(CLUSTER)
        for query in (capacity.gpus(), capacity.samples()):
            tally.read(query, day_start, day_end, units=nodes, answer=nodes)
    memory_start = day_end - lookback_days * 86_400
    used = [memory.used("n"), memory.total("n")]
    remembered = _node_led(tally, memory.nodes(), used, memory_start, day_end)
    return PromQLReads(tally.requests, tally.samples, not (whole and remembered))


def report_reads(fleet: Fleet) -> PromQLReads:
    """The requests and samples of one weekly report with the OTLP sink (handler.py's
    ``exporter_days``, ``exporter_xids``, ``exporter_throughput``), over a week, and the lemon
    nodes' XIDs over 30 days."""
    tally = _Tally(fleet)
    first, last = (epoch(day) for day in report_week(A_RUN))
    exporter = ExporterQueries(CLUSTER)
    power, sm = str(GpuMetric.POWER_UTILIZATION), str(GpuMetric.SM_ACTIVE)
    for query in (
        exporter.cluster_samples(power),
        exporter.cluster_sum(power),
        exporter.cluster_samples(sm),
        exporter.cluster_sum(sm),
    ):
        tally.read(query, first, last, units=fleet.nodes, answer=1)
    counters = exporter.counters(str(GpuMetric.XID_ERRORS))
    tally.read(counters, first - 86_400, last, units=fleet.nodes)
    # The lemon nodes' XIDs, over the 30 days that end with the week (handler.py week_lemons).
    tally.read(counters, last - LEMON_DAYS * 86_400 - 86_400, last, units=fleet.nodes)
    _list_jobs(tally, _Names(fleet.job_names), first, last)
    throughput = TrainingMetric.SAMPLES_PER_SECOND
    stats = _statistics([(throughput, "Sum"), (throughput, "SampleCount")])
    _per_batch(tally, fleet.jobs, stats, first, last)
    return PromQLReads(tally.requests, tally.samples)
