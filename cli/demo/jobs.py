"""The demo's job alarm week: five training jobs of two ranks each run through the real emitter
(emitter.training) in the exporter's replayed hours, one with a checkpoint save and an
evaluation that are no hang, and four with trouble planted at a known minute: one hangs in a
collective, one's loss goes NaN, one's loss jumps, one's throughput collapses to a quarter.
The backtest of the deployed job alarms over what CloudWatch stored must page each of the four
within its window, with the job it names, and nothing else.

Only the documents the job alarms read (ClusterName, JobName, Shard) go to CloudWatch and to the
training log group (where the notifier reads the job's pods, nodes and GPUs): the training
analyzer's week stays the five jobs of cli/demo/training.py that its findings are checked
against.
"""

import hashlib
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from cdk.alarms.jobs import (
    JOB_GOODPUT_LOW,
    JOB_HUNG,
    JOB_LOSS_NOT_FINITE,
    JOB_LOSS_SPIKE,
    JOB_STEP_TIME_RISE,
    JOB_THROUGHPUT_COLLAPSED,
)
from cdk.settings import Settings
from cli.backtest.engine import BacktestResult
from cli.demo import otlp
from cli.demo.notifications import alarm_contributor_event
from cli.demo.promql import Sample
from cli.demo.realistic import pods as k8s
from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_JOB,
    DIM_NODE,
    DIM_SHARD,
    JOB_ALARM_METRICS,
    OTLP_JOB,
    OTLP_RANK,
    PROP_POD_NAME,
    PROP_RANK,
    training_log_group,
)
from gpu_insights_agent.emf.document import EmfDocument, encode
from gpu_insights_agent.emf.sinks import PutMetricDataSink
from gpu_insights_agent.emitter.training import TrainingMetrics
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels

RANKS = 2
BATCH = 64
FLUSH_S = 60.0
STEP_S = 2.0
#: The jobs' nodes: a pool the week's fleet does not simulate (rank N on node N).
NODE = "ip-10-0-4-{index}.ec2.internal"
GPUS_PER_RANK = 4


@dataclass(frozen=True)
class Phase:
    """``minutes`` of one thing: training (at ``step_s`` a step), or a pause."""

    minutes: float
    step_s: float = STEP_S
    #: "train", "checkpoint", "evaluate", "hang" (stuck in a step: only the heartbeat runs).
    doing: str = "train"
    #: The loss each step records: None, the usual noisy loss; a number, that value.
    loss: float | None = None


@dataclass(frozen=True)
class AlarmJob:
    name: str
    namespace: str
    phases: tuple[Phase, ...]
    #: The job alarm that must page it, and the minute (from the replay's start) from which
    #: its page is due, and the minute by which it must have come; None: it must not page.
    pages: str | None = None
    due: tuple[float, float] = (0.0, 0.0)
    #: Killed (its pod deleted): it never reaches close().
    killed: bool = False
    #: The further pages the same trouble raises, each with the minutes it is due within.
    also: tuple[tuple[str, float, float], ...] = ()
    #: Those raised only where the goodput alarm's hour is a rolling one (OTel mode's PromQL,
    #: ``avg_over_time``), not the clock hour of the Metrics Insights alarm's period.
    also_rolling: tuple[tuple[str, float, float], ...] = ()

    def due_pages(self, rolling: bool = False) -> dict[str, tuple[float, float]]:
        """Every page the job's trouble must raise, by kind: its own and ``also`` (and
        ``also_rolling`` with the rolling hour)."""
        own = {self.pages: self.due} if self.pages else {}
        further = self.also + (self.also_rolling if rolling else ())
        return own | {kind: (first, last) for kind, first, last in further}


#: Each job's trouble and when it must page. Hung: due 10 minutes (job_hung_minutes) plus
#: three steps after the last step. NaN: the first minute of NaN losses. Spike: that minute.
#: Throughput: three five-minute periods under half the median after the slowdown starts.
ALARM_JOBS: Final = (
    AlarmJob(
        "resnet-steady",
        "vision",
        (
            Phase(40),
            Phase(12, doing="checkpoint"),
            Phase(28),
            Phase(15, doing="evaluate"),
            Phase(25),
        ),
        # Its 12-minute save and the first 6 minutes of its evaluation are 30% of the rolling
        # hour to minute 86: the goodput of that hour (no clock hour holds as much).
        also_rolling=((JOB_GOODPUT_LOW, 84.0, 90.0),),
    ),
    AlarmJob(
        "llama-hangs",
        "nlp",
        (Phase(45), Phase(55, doing="hang")),
        pages=JOB_HUNG,
        due=(55.0, 58.0),
        killed=True,
        # Its hour's goodput falls under 70% once 18 of its 60 minutes are hung (minute 63),
        # the Metrics Insights alarm's hour-long period being the clock hour.
        also=((JOB_GOODPUT_LOW, 63.0, 120.0),),
    ),
    AlarmJob(
        "gpt-nan",
        "nlp",
        (Phase(60), Phase(15, loss=float("nan"))),
        pages=JOB_LOSS_NOT_FINITE,
        due=(60.0, 62.0),
        killed=True,
    ),
    AlarmJob(
        "t5-loss-spike",
        "nlp",
        (Phase(70), Phase(1, loss=9.0), Phase(39)),
        pages=JOB_LOSS_SPIKE,
        due=(70.0, 72.0),
    ),
    AlarmJob(
        "bert-slows",
        "nlp",
        (Phase(50), Phase(60, step_s=4 * STEP_S)),
        pages=JOB_THROUGHPUT_COLLAPSED,
        due=(65.0, 75.0),
        # The fail-slow: 3 minutes of step time over 10% above its median, from minute 50.
        also=((JOB_STEP_TIME_RISE, 52.0, 55.0),),
    ),
)


class Collect:
    """The emitter's sink in the demo: the EMF documents kept, to be published at once."""

    def __init__(self) -> None:
        self.documents: list[EmfDocument] = []

    def send(self, documents: Any) -> None:
        self.documents.extend(documents)


#: More documents than one rank's simulated run flushes (two hours of minutes, two a flush).
QUEUE_CAPACITY: Final = 1024


class Clock:
    """The emitter's clock in the demo, set by the simulated run."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _gpus(job: str, rank: int) -> str:
    """The container's GPUs as the device plugin names them (``GPU-<uuid>``)."""
    return ",".join(
        "GPU-" + hashlib.sha256(f"{job}/{rank}/{i}".encode()).hexdigest()[:8] + "-demo"
        for i in range(GPUS_PER_RANK)
    )


def simulate(
    cluster: str, start: float, jobs: Sequence[AlarmJob] = ALARM_JOBS, *, every: bool = False
) -> list[EmfDocument]:
    """Every rank of every job from ``start``: the documents the job alarms read (their shard's
    documents); with ``every``, the job's own documents too (step time, data wait, saves: what
    its OTLP sink sends beside them, which the goodput and fail-slow pages read)."""
    sink = Collect()
    for index, job in enumerate(jobs):
        pods = k8s.pytorchjob_pods(job.namespace, job.name, RANKS - 1)
        for rank in range(RANKS):
            clock = Clock(start)
            rng = random.Random(f"{job.name}/{rank}")
            metrics = TrainingMetrics(
                job_name=job.name,
                cluster_name=cluster,
                rank=rank,
                node_name=NODE.format(index=10 * index + rank),
                pod_name=pods[rank].name,
                flush_s=FLUSH_S,
                sink=sink,
                clock=clock,
                wall_clock=clock,
                heartbeat=False,
                gpus=_gpus(job.name, rank),
                # Room for every flush of the run: the simulated hours pass in milliseconds,
                # faster than the sender thread empties the default 64, which dropped windows
                # at random (a killed job is only drained, never closed).
                queue_capacity=QUEUE_CAPACITY,
            )
            for phase in job.phases:
                _phase(metrics, clock, rng, phase, start)
            if not job.killed:
                metrics.close(succeeded=True)
            else:
                metrics.drain()
    return [d for d in sink.documents if every or DIM_SHARD in d]


def promql_samples(
    documents: Sequence[EmfDocument],
    jobs: Sequence[AlarmJob] = ALARM_JOBS,
    labels: DcgmLabels = CLOUDWATCH,
) -> Iterator[Sample]:
    """The series OTel mode's emitter sends for the same flushes, as CloudWatch's PromQL labels
    them: each job alarm metric a gauge with the flush's value, one series per rank, the
    cluster, namespace, pod and node resource attributes (``@resource.``) and the ``job_name``
    and ``rank`` datapoint attributes (contract.metrics ``OTLP_*``)."""
    namespaces = {job.name: job.namespace for job in jobs}
    for document in documents:
        job = str(document[DIM_JOB])
        series = {
            labels.cluster: str(document[DIM_CLUSTER]),
            labels.namespace: namespaces[job],
            labels.pod: str(document[PROP_POD_NAME]),
            labels.node: str(document[DIM_NODE]),
            OTLP_JOB: job,
            OTLP_RANK: str(document[PROP_RANK]),
        }
        at = int(document["_aws"]["Timestamp"]) / 1000
        for metric in document["_aws"]["CloudWatchMetrics"][0]["Metrics"]:
            if metric["Name"] in JOB_ALARM_METRICS:
                yield str(metric["Name"]), series, at, float(document[metric["Name"]])


def emitter_samples(cluster: str, start: float, *, every: bool = False) -> Iterator[Sample]:
    """The jobs' series from ``start`` as their emitters send them over OTLP (exporter_sink=
    otlp): the documents through the emitter's OTLP JSON encoder, each job's pods in its
    namespace, as CloudWatch stores them (cli/demo/otlp.py); the alarms' series, or with
    ``every`` the job's own too (``simulate``), as the alarm stage's pages read them. The
    week's run takes the alarms' alone in both modes, as Classic's ``seed_alarm_jobs`` does."""
    documents = simulate(cluster, start, every=every)
    for job in ALARM_JOBS:
        yield from otlp.emitter_samples(
            [d for d in documents if d[DIM_JOB] == job.name], job.namespace
        )


def _phase(
    metrics: TrainingMetrics, clock: Clock, rng: random.Random, phase: Phase, start: float
) -> None:
    until = clock.now + phase.minutes * 60
    if phase.doing == "train":

        def batches() -> Iterator[list[int]]:
            while clock.now < until:
                yield [0] * BATCH

        for _ in metrics.steps(batches()):
            clock.now += phase.step_s
            usual = 2.0 - (clock.now - start) / 36_000 + rng.gauss(0.0, 0.05)
            metrics.record(loss=usual if phase.loss is None else phase.loss)
        return
    pause = {"checkpoint": metrics.checkpoint_save, "evaluate": metrics.evaluating}.get(phase.doing)
    if pause is None:  # hung: the loop is stuck in a step; the heartbeat thread runs alone
        while clock.now < until:
            clock.now += FLUSH_S
            metrics.heartbeat()
        return
    with pause():
        while clock.now < until:
            clock.now += FLUSH_S
            metrics.heartbeat()


def seed_alarm_jobs(clients: dict[str, Any], cluster: str, start: float) -> int:
    """The jobs' documents into CloudWatch (as the agent extracts them) and the training log
    group (as the agent writes them). Returns how many."""
    documents = simulate(cluster, start)
    PutMetricDataSink(clients["cloudwatch"]).send(documents)
    logs = clients["logs"]
    group = training_log_group(cluster)
    if not logs.describe_log_groups(logGroupNamePrefix=group)["logGroups"]:
        logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName="agent-job-alarms")
    stamped = sorted((int(d["_aws"]["Timestamp"]), encode(d)) for d in documents)
    events = [{"timestamp": at, "message": line} for at, line in stamped]
    for first in range(0, len(events), 5000):
        logs.put_log_events(
            logGroupName=group,
            logStreamName="agent-job-alarms",
            logEvents=events[first : first + 5000],
        )
    return len(documents)


def jobs_in_alarm(result: BacktestResult) -> list[str]:
    """The jobs of every contributor a job alarm's backtest put in ALARM."""
    named = (
        dict(zip(result.contributor_names, g, strict=True)) for g in result.contributors_alarmed
    )
    return [n[DIM_JOB] for n in named if DIM_JOB in n]


def first_alarm_s(result: BacktestResult, job: str) -> float:
    for group, transitions in result.contributors.items():
        if dict(zip(result.contributor_names, group, strict=True)).get(DIM_JOB) == job:
            return next(t.time for t in transitions if t.new.value == "ALARM")
    raise KeyError(job)


def job_contributor_event(
    settings: Settings, result: BacktestResult, job: str, region: str
) -> dict[str, Any]:
    """A ``CloudWatch Alarm Contributor State Change`` for one job of one raised job alarm."""
    first = next(
        t
        for group, transitions in result.contributors.items()
        if dict(zip(result.contributor_names, group, strict=True)).get(DIM_JOB) == job
        for t in transitions
        if t.new.value == "ALARM"
    )
    inside = first.reason[first.reason.find("[") + 1 : first.reason.find("]")]
    values = [float(v.split(" (")[0]) for v in inside.split(", ") if v.split(" (")[0]]
    attributes = {DIM_CLUSTER: settings.cluster_name, DIM_JOB: job}
    return alarm_contributor_event(
        settings, result, region, first, values,
        name=job, contributor_id=hashlib.sha256(job.encode()).hexdigest()[:16],
        attributes=attributes,
    )  # fmt: skip


def job_events(settings: Settings, results: list[BacktestResult], region: str) -> list[Any]:
    return [
        job_contributor_event(settings, result, job, region)
        for result in results
        for job in jobs_in_alarm(result)
    ]


def job_pages(results: list[BacktestResult], start: float) -> dict[str, dict[str, float]]:
    """Job -> alarm kind -> minutes after ``start`` of its first ALARM, for the summary."""
    pages: dict[str, dict[str, float]] = {}
    for result in results:
        for job in jobs_in_alarm(result):
            minute = (first_alarm_s(result, job) - start) / 60
            kinds = pages.setdefault(job, {})
            kinds[result.spec.kind] = min(minute, kinds.get(result.spec.kind, minute))
    return pages


def summary_lines(results: list[BacktestResult], start: float) -> list[str]:
    pages = job_pages(results, start)
    lines = [
        f"   Job alarms over the same hours ({len(ALARM_JOBS)} jobs of {RANKS} ranks through the "
        "emitter, trouble planted at a known minute):"
    ]
    for job in ALARM_JOBS:
        got = sorted(pages.get(job.name, {}).items(), key=lambda page: page[1])
        said = ", ".join(f"{k} at minute {m:.0f}" for k, m in got) if got else "no page"
        want = (
            ", ".join(
                f"{kind} due in minutes {first:.0f}-{last:.0f}"
                for kind, (first, last) in job.due_pages().items()
            )
            or "no page due (a 12-minute checkpoint save and a 15-minute evaluation)"
        )
        lines.append(f"   {job.name:<15} {said:<36} ({want})")
    return lines
