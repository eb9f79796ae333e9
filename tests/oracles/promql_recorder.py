"""The test oracle of cli/cost/promql_reads.py's model: the analyzers' and the weekly report's
OTel readers run against a PromQL client whose opener records each request instead of sending
it, answering as a fleet (``Fleet``) would:

a query grouped by node alone with the nodes it selects, one grouped by job with the jobs its
job matcher matches (so the listing halves its name ranges at 500 and more jobs as it would),
one grouped by rank with each matched job's ranks (one a GPU, the fleet's GPUs shared among the
jobs, on consecutive nodes), each series with one sample; every other query with no series.
The samples a request scans are counted from its text and range: each range selector reads, at
each evaluation, its range's samples of every series it selects, at the rate its sender sends
them (``promql_reads.rate_per_hour``). It runs the real readers, so its cost grows with the
fleet's square; the model (``promql_reads.analyzer_reads``, ``report_reads``) is held to it on
small fleets (tests/unit/cli/cost/test_promql_model.py).
"""

import functools
import json
import re
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import timedelta
from typing import Final

from cli.cost.promql_reads import (
    A_RUN,
    CLUSTER,
    MATCHER,
    SELECTOR,
    UNIT_S,
    Fleet,
    PromQLReads,
    rate_per_hour,
    unquote,
)
from gpu_insights_agent.contract.metrics import OTLP_JOB, OTLP_RANK
from lambdas.shared.dcgm import CLOUDWATCH
from lambdas.shared.events import attributed_day
from lambdas.shared.promql import PromQLClient, PromQLTruncatedError
from lambdas.training_analyzer import promql_jobs
from lambdas.training_analyzer.aws import gpu_hours_promql
from lambdas.training_analyzer.goodput.capacity import otel_capacity
from lambdas.training_analyzer.goodput.lemon import WINDOW_DAYS as LEMON_DAYS
from lambdas.training_analyzer.goodput.pending import otel_pending
from lambdas.training_analyzer.gpu_hours.otel import exporter_gpu_hours_promql, read_holds
from lambdas.training_analyzer.gpu_hours.stepping import stepping_hours_promql
from lambdas.training_analyzer.gpu_memory.otel import read_gpu_memory_otel
from lambdas.training_analyzer.handler import training_window
from lambdas.training_analyzer.job_gpus import job_gpu_hours
from lambdas.weekly_report.aws import gpu_days_promql, throughput_by_job_promql, xid_counts_promql
from lambdas.weekly_report.week import report_week

#: RE2's ``\x{hex}`` (promql_jobs.py's name ranges) as Python's ``re`` writes the character.
_RE2_HEX: Final = re.compile(r"\\x\{([0-9a-fA-F]+)\}")
_GROUPS: Final = re.compile(r"^\w+ by \(([^)]*)\)")
_CLUSTER: Final = CLUSTER
_A_RUN: Final = A_RUN


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
        for found in SELECTOR.finditer(query):
            matchers = [(unquote(m[1]), m[2], unquote(m[3])) for m in MATCHER.finditer(found[1])]
            selected = name, nodes, jobs = self._selected(matchers)
            hours = int(found[2]) * UNIT_S[found[3]] / 3600
            emitter, per_hour = rate_per_hour(name, f)
            series = len(jobs) * f.ranks_per_job if emitter else len(nodes) * f.gpus_per_node
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
        keys = {unquote(k.strip()) for k in grouped[1].split(",")} if grouped else set()
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


def recorded_analyzer_reads(
    nodes: int, gpus_per_node: int, lookback_days: int, fleet: Fleet | None = None
) -> PromQLReads:
    """``promql_reads.analyzer_reads``, recorded: the readers themselves, in the run's order."""
    otlp = fleet is not None
    fleet = fleet or Fleet(nodes, gpus_per_node)
    start, end = training_window(_A_RUN.timestamp(), lookback_days)
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
            if pods:
                otel_pending(client, _CLUSTER, start=start, end=end)
                pod_nodes = {r.pod: r.node for rs in ranks.values() for r in rs if r.pod and r.node}
                job_gpu_hours(
                    cloudwatch=None, cluster=_CLUSTER, start=start, end=end, job_of_pod=pods,
                    pod_nodes=pod_nodes, dcgm_promql=client,
                )  # fmt: skip

        def attribution() -> None:
            if otlp:
                exporter_gpu_hours_promql(client, _CLUSTER, start=day_start, end=day_end)
            read_holds(client, _CLUSTER, start=day_start, end=day_end, gpu_hours=())
            if otlp:
                stepping_hours_promql(client, _CLUSTER, pods.values(), start=day_start, end=day_end)
            otel_capacity(client, _CLUSTER, start=day_start, end=day_end)

        stopped |= _stopped(attribution)
        memory_start = day_end - lookback_days * 86_400
        stopped |= _stopped(
            lambda: read_gpu_memory_otel(client, _CLUSTER, start=memory_start, end=day_end)
        )
        return stopped

    return _count(fleet, reads)


def recorded_report_reads(fleet: Fleet) -> PromQLReads:
    """``promql_reads.report_reads``, recorded: the weekly report's readers themselves."""
    start, end = report_week(_A_RUN)

    def reads(client: PromQLClient) -> bool:
        interval = fleet.exporter_interval_s
        gpu_days_promql(client, _CLUSTER, start, end, interval)
        xid_counts_promql(client, _CLUSTER, start, end)
        xid_counts_promql(client, _CLUSTER, end - timedelta(days=LEMON_DAYS), end)
        throughput_by_job_promql(client, _CLUSTER, start, end)
        return False

    return _count(fleet, reads)
