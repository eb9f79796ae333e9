"""What the analyzers' and the weekly report's PromQL costs to send in OTel mode, counted from
the code that sends it, against a PromQL client whose opener records each request instead of
sending it:

- every OTel run: the GPU-hour attribution's ``read_holds`` over the day a run attributes, and
  the GPU memory right-sizing's ``read_gpu_memory_otel`` over its lookback;
- with the OTLP sink (exporter_sink=otlp: the exporter's and the training emitter's series are
  in CloudWatch's OTLP store only), the training analyzer's job reads too (promql_jobs.py: the
  listing, the ranks, the series, the baselines; aws.py ``gpu_hours_promql`` for the jobs'
  nodes), the attribution's exporter GPU-hours and stepping hours, and, once a week, the weekly
  report's GPU days, XIDs and throughput.

The recording opener answers as a fleet of ``nodes`` nodes and ``jobs`` jobs would: a query
grouped by node alone with the nodes it selects, one grouped by job with the jobs its job
matcher matches (so the listing halves its name ranges at 500 and more jobs as it would), one
grouped by rank with each matched job's ranks (one a GPU, the fleet's GPUs shared among the
jobs, on consecutive nodes), each series with one sample; every other query with no series.
The samples a request scans are counted from its text and range: each range selector reads, at
each evaluation, its range's samples of every series it selects, at the rate its sender sends
them: DCGM's at the add-on's scrape (every GPU of the cluster, or of the node it names; a pod's
selector is counted as every GPU of its node held, an upper bound), the exporter's at its
interval (every GPU of the nodes it names; the XID counters as one a GPU, an upper bound), the
emitter's at its flush (every rank of the jobs it matches).
"""

import functools
import json
import re
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from gpu_insights_agent.contract.metrics import OTLP_JOB, OTLP_RANK, GpuMetric, TrainingMetric
from lambdas.shared.dcgm import CLOUDWATCH
from lambdas.shared.events import analysis_window
from lambdas.shared.promql import PromQLClient, PromQLTruncatedError
from lambdas.training_analyzer import promql_jobs
from lambdas.training_analyzer.aws import gpu_hours_promql
from lambdas.training_analyzer.gpu_hours.otel import (
    SAMPLES_PER_HOUR,
    exporter_gpu_hours_promql,
    read_holds,
)
from lambdas.training_analyzer.gpu_hours.stepping import stepping_hours_promql
from lambdas.training_analyzer.gpu_memory.otel import read_gpu_memory_otel
from lambdas.training_analyzer.handler import attributed_day
from lambdas.weekly_report.aws import gpu_days_promql, throughput_by_job_promql, xid_counts_promql
from lambdas.weekly_report.week import report_week

_CLUSTER: Final = "cluster"
#: A run at the default training schedule's time (07:00 UTC), of a day as the handler sees one.
_A_RUN: Final = datetime(2026, 12, 1, 7, tzinfo=UTC)
#: One selector: its matchers (a bare or quoted label, an operator, a quoted value) and range.
_SELECTOR: Final = re.compile(r"\{((?:[^{}\"]|\"(?:[^\"\\]|\\.)*\")*)\}\[(\d+)([smhd])\]")
_STRING: Final = r'"(?:[^"\\]|\\.)*"'
_MATCHER: Final = re.compile(rf"\s*([A-Za-z_]\w*|{_STRING})\s*(=~|!=|!~|=)\s*({_STRING})")
_UNIT_S: Final = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
#: RE2's ``\x{hex}`` (promql_jobs.py's name ranges) as Python's ``re`` writes the character.
_RE2_HEX: Final = re.compile(r"\\x\{([0-9a-fA-F]+)\}")
_GROUPS: Final = re.compile(r"^\w+ by \(([^)]*)\)")
_EXPORTER: Final = frozenset(str(m) for m in GpuMetric)
_EMITTER: Final = frozenset(str(m) for m in TrainingMetric)


@dataclass(frozen=True)
class PromQLReads:
    """One run's PromQL: requests sent, and samples they scan at most."""

    requests: int
    samples: float
    #: A node query held the API's most series a response: that read stops there, and says so.
    truncated: bool = False


@dataclass(frozen=True)
class Fleet:
    """What the recording opener answers as: ``jobs`` training jobs (none: no job read), the
    exporter sending every ``exporter_interval_s`` and the emitter every ``emitter_flush_s``."""

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


def _unquote(text: str) -> str:
    return str(json.loads(text)) if text.startswith('"') else text


@functools.lru_cache(maxsize=1024)
def _matcher(op: str, pattern: str) -> Callable[[str], bool]:
    """A label matcher as a test of a value (compiled once: the listing asks many times)."""
    if op in {"=", "!="}:
        return lambda value: (value == pattern) == (op == "=")
    python = re.compile(_RE2_HEX.sub(lambda m: f"\\U{int(m[1], 16):08x}", pattern), re.DOTALL)
    return lambda value: (python.fullmatch(value) is not None) == (op == "=~")


class _Recorder:
    """A PromQL client over ``fleet`` whose requests are answered here and counted."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.samples = 0.0
        #: The jobs a job matcher matches (a query is sent again for each page of its window).
        self._jobs: dict[tuple[str, str], set[int]] = {}
        self.client = PromQLClient(
            endpoint="http://promql.invalid", region="us-east-1", credentials=None, opener=self
        )

    def _selected(self, matchers: list[tuple[str, str, str]]) -> tuple[str, list[str], list[int]]:
        """The selector's metric, the nodes it selects, and the jobs (by index) it selects."""
        name, nodes, jobs = "", self.fleet.node_names, list(range(self.fleet.jobs))
        for label, op, value in matchers:
            if label == "__name__":
                name = value
            elif label == CLOUDWATCH.node:
                test = _matcher(op, value)
                nodes = [n for n in nodes if test(n)]
            elif label == OTLP_JOB:
                matched = self._jobs.get((op, value))
                if matched is None:
                    test = _matcher(op, value)
                    matched = self._jobs[(op, value)] = {
                        j for j, job in enumerate(self.fleet.job_names) if test(job)
                    }
                jobs = [j for j in jobs if j in matched]
        return name, nodes, jobs

    def __call__(self, request: urllib.request.Request) -> tuple[int, bytes]:
        body = request.data if isinstance(request.data, bytes) else b""
        params = {k: v[0] for k, v in urllib.parse.parse_qs(body.decode()).items()}
        query, step = params["query"], float(params["step"])
        evaluations = round((float(params["end"]) - float(params["start"])) / step + 1)
        f = self.fleet
        selected: tuple[str, list[str], list[int]] = ("", [], [])
        for found in _SELECTOR.finditer(query):
            matchers = [(_unquote(m[1]), m[2], _unquote(m[3])) for m in _MATCHER.finditer(found[1])]
            selected = name, nodes, jobs = self._selected(matchers)
            hours = int(found[2]) * _UNIT_S[found[3]] / 3600
            if name in _EMITTER:
                series, per_hour = len(jobs) * f.ranks_per_job, 3600 / f.emitter_flush_s
            elif name in _EXPORTER:
                series, per_hour = len(nodes) * f.gpus_per_node, 3600 / f.exporter_interval_s
            else:
                series, per_hour = len(nodes) * f.gpus_per_node, float(SAMPLES_PER_HOUR)
            self.samples += series * evaluations * hours * per_hour
        result = [
            {"metric": labels, "values": [[params["start"], "1"]]}
            for labels in self._answer(query, selected)
        ]
        answer = {"status": "success", "data": {"resultType": "matrix", "result": result}}
        return 200, json.dumps(answer).encode()

    def _answer(
        self, query: str, selected: tuple[str, list[str], list[int]]
    ) -> list[dict[str, str]]:
        """The series a query grouped by node, job or rank returns; none for any other."""
        grouped = _GROUPS.match(query)
        keys = {_unquote(k.strip()) for k in grouped[1].split(",")} if grouped else set()
        _, nodes, jobs = selected
        if keys == {CLOUDWATCH.node}:
            return [{CLOUDWATCH.node: n} for n in nodes]
        if keys == {OTLP_JOB}:
            return [{OTLP_JOB: f"job-{j}"} for j in jobs]
        if OTLP_RANK in keys:
            return [
                {
                    OTLP_JOB: f"job-{j}",
                    OTLP_RANK: str(r),
                    CLOUDWATCH.node: self.fleet.rank_node(j, r),
                    CLOUDWATCH.pod: f"job-{j}-{self.fleet.rank_node(j, r)}",
                }
                for j in jobs
                for r in range(self.fleet.ranks_per_job)
            ]
        return []


def _count(fleet: Fleet, reads: Callable[[PromQLClient], bool]) -> PromQLReads:
    """``reads`` run against the recorder; it returns whether a read stopped truncated."""
    recorder = _Recorder(fleet)
    truncated = reads(recorder.client)
    return PromQLReads(recorder.client.requests, recorder.samples, truncated)


def _stopped(read: Callable[[], object]) -> bool:
    """Whether ``read`` stopped at a truncated answer (the run skips that read, saying so)."""
    try:
        read()
    except PromQLTruncatedError:
        return True
    return False


def analyzer_reads(
    nodes: int, gpus_per_node: int, lookback_days: int, fleet: Fleet | None = None
) -> PromQLReads:
    """The requests and samples of one training analyzer run over a fleet of ``nodes`` GPU
    nodes; with ``fleet`` (its jobs and rates) the OTLP sink's reads too, in the run's order
    (run.py ``analyze_training``, then handler.py ``_publish``)."""
    otlp = fleet is not None
    fleet = fleet or Fleet(nodes, gpus_per_node)
    start, end = analysis_window(_A_RUN.timestamp(), lookback_days)
    day_start, day_end, _ = attributed_day(end)

    def reads(client: PromQLClient) -> bool:
        stopped = False
        pods: dict[str, str] = {}
        if otlp:
            jobs = promql_jobs.list_jobs(client, _CLUSTER, start=start, end=end)
            ranks = promql_jobs.rank_stats(client, _CLUSTER, jobs, start=start, end=end)
            pods = {r.pod: job for job, rs in ranks.items() for r in rs if r.pod}
            promql_jobs.job_series(client, _CLUSTER, jobs, start=start, end=end)
            promql_jobs.baselines(client, _CLUSTER, jobs, start=start, lookback_s=end - start)
            job_nodes = {r.node for rs in ranks.values() for r in rs if r.node}
            if job_nodes:
                gpu_hours_promql(client, _CLUSTER, job_nodes, start=start, end=end)

        def attribution() -> None:
            if otlp:
                exporter_gpu_hours_promql(client, _CLUSTER, start=day_start, end=day_end)
            read_holds(client, _CLUSTER, start=day_start, end=day_end, gpu_hours=())
            if otlp:
                stepping_hours_promql(client, _CLUSTER, pods.values(), start=day_start, end=day_end)

        stopped |= _stopped(attribution)
        memory_start = day_end - lookback_days * 86_400
        stopped |= _stopped(
            lambda: read_gpu_memory_otel(client, _CLUSTER, start=memory_start, end=day_end)
        )
        return stopped

    return _count(fleet, reads)


def report_reads(fleet: Fleet) -> PromQLReads:
    """The requests and samples of one weekly report with the OTLP sink (handler.py's
    ``exporter_days``, ``exporter_xids``, ``exporter_throughput``), over a week."""
    start, end = report_week(_A_RUN)

    def reads(client: PromQLClient) -> bool:
        interval = fleet.exporter_interval_s
        gpu_days_promql(client, _CLUSTER, start, end, interval)
        xid_counts_promql(client, _CLUSTER, start, end)
        throughput_by_job_promql(client, _CLUSTER, start, end)
        return False

    return _count(fleet, reads)
