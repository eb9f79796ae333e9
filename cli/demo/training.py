"""The demo's training jobs: simulated through the real emitter (emitter.training) into moto's
CloudWatch and CloudWatch Logs, then analyzed by the training analyzer's real handler.

Five jobs, two ranks each: one healthy, one data-bound, one slow checkpointer, one that
regresses, one that fails twice, in the last eight hours of the week on a virtual clock. Each
job also ran for twenty minutes at noon on each day before (as it does on the last day, but
no slower and without failing), a few EMF documents a run, so every job charts the week. The
analyzer must find exactly those problems, and nothing on the healthy one.

The week's two teams' jobs train whenever their pods hold GPUs, that is all week: the hours
outside those simulated runs are written as CloudWatch stores an hour of the emitter's
documents (its two ranks' five-minute windows as one statistic set per metric, the same step
and wait as the simulation), as the week's GPU series are (``stepping_hours``).

Each rank runs in a pod of its job's workload, named as its controller names it (the
realistic cluster model, cli/demo/realistic/pods.py), and the emitter reports the pod's own name
(as the downward API gives it). The week's two teams' pods (cli/demo/week.py) are the first
two jobs', on the nodes named there; the other three jobs run on their team's node's spare
GPUs (week.py ``SPARE_GPUS``), their pods holding them from each run's start to its end, and
a failed run's until the next run resumes (its pods restart in place: restartPolicy
OnFailure), so every job's GPU-hours are attributed to it exactly.
"""

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from cdk.function_configs import training_config
from cdk.settings import Settings
from cli.demo.datums import statistic_set
from cli.demo.otlp import emitter_samples
from cli.demo.promql import Sample
from cli.demo.realistic import pods as k8s
from cli.demo.storage import DEMO_CLUSTER, END, REPORT_BUCKET, environment, run_analyzer
from cli.demo.week import DAYS, JOB_NODES, JOB_PODS, SPARE_GPUS, job_hours
from cli.demo.week import START as WEEK_START
from cli.service_answers import Params, logs_insights_stats
from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_JOB,
    DIM_NODE,
    NAMESPACE_TRAINING,
    PROP_POD_NAME,
    PROP_RANK,
    TRAINING_METRIC_UNITS,
    ExporterSink,
    TrainingMetric,
    training_log_group,
)
from gpu_insights_agent.emf.document import EmfDocument, emf_document, encode
from gpu_insights_agent.emf.sinks import PutMetricDataSink
from gpu_insights_agent.emitter.training import TrainingMetrics
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.training_analyzer import handler as training_handler

HOURS = 8
RANKS = 2
BATCH = 64
#: Each earlier day's run: its hour (UTC, from the day's start), its minutes, and how often
#: the emitter flushes (few documents a run, to keep moto's stored data small).
EARLIER_RUN_HOUR = 12
EARLIER_RUN_MINUTES = 20
FLUSH_S = 300


@dataclass(frozen=True)
class SimulatedJob:
    name: str
    compute_s: float = 1.9
    wait_s: float = 0.1
    #: From this hour on, each step's compute takes this much longer (a regression).
    slower_after_hour: int | None = None
    slower_by_s: float = 0.0
    checkpoint_every_s: float = 3600.0
    checkpoint_s: float = 20.0
    #: (start hour, end hour, succeeded) of each run.
    runs: tuple[tuple[int, int, bool], ...] = ((0, HOURS, True),)


JOBS: tuple[SimulatedJob, ...] = (
    SimulatedJob("resnet-healthy"),
    SimulatedJob("bert-data-bound", compute_s=1.2, wait_s=0.8),
    SimulatedJob("llama-slow-checkpoint", checkpoint_every_s=1800, checkpoint_s=420),
    SimulatedJob("gpt-regressing", slower_after_hour=4, slower_by_s=1.0),
    SimulatedJob("vit-flaky", runs=((0, 3, False), (4, 7, False))),
)
#: Each job's ranks' pods (rank N in the Nth): the teams' (cli/demo/week.py), a PyTorchJob, a
#: JobSet's child Job and an Indexed Job for the others.
RANK_PODS: dict[str, list[k8s.Pod]] = {
    **JOB_PODS,
    "llama-slow-checkpoint": k8s.pytorchjob_pods("nlp", "llama-slow-checkpoint", RANKS - 1),
    "gpt-regressing": k8s.jobset_pods("nlp", "gpt-regressing", "trainer", 1, RANKS),
    "vit-flaky": k8s.job_pods("vision", "vit-flaky", RANKS, indexed=True),
}


class Collect:
    def __init__(self) -> None:
        self.documents: list[EmfDocument] = []

    def send(self, documents: Any) -> None:
        self.documents.extend(documents)


class VirtualClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _batches(clock: VirtualClock, job: SimulatedJob, until: float) -> Iterator[list[int]]:
    while clock.now < until:
        clock.now += job.wait_s
        yield [0] * BATCH


def runs(job: SimulatedJob) -> list[tuple[float, float, bool]]:
    """Each run's (start, end, succeeded) in epoch seconds: one at noon on each day before
    the last, then the job's runs in the last ``HOURS``."""
    last = END - HOURS * 3600
    earlier = [
        (noon, noon + EARLIER_RUN_MINUTES * 60, True)
        for day in range(DAYS - 1)
        for noon in [WEEK_START + day * 86_400 + EARLIER_RUN_HOUR * 3600]
    ]
    return earlier + [(last + a * 3600, last + b * 3600, ok) for a, b, ok in job.runs]


def node_of(job: SimulatedJob, rank: int) -> str:
    return JOB_NODES.get(job.name) or SPARE_GPUS[job.name][0]


def held_windows(job: SimulatedJob) -> list[tuple[float, float]]:
    """When the pods of a job on spare GPUs hold them: each run from its start to its end, a
    failed run's until the next run starts (its pods restart in place)."""
    done = runs(job)
    starts = [start for start, _, _ in done[1:]] + [None]
    return [
        (start, end if succeeded or following is None else following)
        for (start, end, succeeded), following in zip(done, starts, strict=True)
    ]


def simulate(
    job: SimulatedJob, rank: int, sink: Collect, window: tuple[float, float] = (0.0, END)
) -> None:
    """The job's runs that start in ``window`` (by default all of them), in rank ``rank``."""
    start = END - HOURS * 3600
    #: The step of the last checkpoint saved, and whether the run before failed: a run after
    #: a failure resumes from that checkpoint (goodput's progress lost: the steps after it).
    saved, failed = 0, False
    for run_start, run_end, succeeded in runs(job):
        step, resumed = (saved, True) if failed else (0, False)
        failed = not succeeded
        if not window[0] <= run_start < window[1]:
            continue
        clock = VirtualClock(run_start)
        metrics = TrainingMetrics(
            job_name=job.name,
            cluster_name=CLUSTER,
            rank=rank,
            node_name=node_of(job, rank),
            pod_name=RANK_PODS[job.name][rank].name,
            flush_s=FLUSH_S,
            sink=sink,
            clock=clock,
            wall_clock=clock,
            heartbeat=False,  # a virtual clock: the loop flushes every window itself
        )
        if resumed:
            metrics.resume_from_step(step)
        next_checkpoint = clock.now + job.checkpoint_every_s
        for _ in metrics.steps(_batches(clock, job, run_end)):
            step += 1
            slower = (
                job.slower_after_hour is not None
                and clock.now >= start + job.slower_after_hour * 3600
            )
            clock.now += job.compute_s + (job.slower_by_s if slower else 0.0)
            metrics.record(loss=2.0 - (clock.now - start) / 36_000)
            if clock.now >= next_checkpoint:
                with metrics.checkpoint_save(size_bytes=14 * 2**30):
                    clock.now += job.checkpoint_s
                saved = step
                next_checkpoint = clock.now + job.checkpoint_every_s
        metrics.close(succeeded=succeeded)


CLUSTER = DEMO_CLUSTER


def rank_query_results(logs: Any, events_from: Any = None) -> None:
    """moto's Logs Insights runs no ``stats``: the analyzer's rank query (steps, step time
    weighted by steps, latest node and pod, by job and rank) is computed from moto's events,
    as Logs Insights would, and served as Logs Insights serves it: cut at the query's limit,
    10,000 rows a page (``service_answers.logs_insights_stats``). The events are read with
    ``events_from`` (a client allowed FilterLogEvents; the same client by default), as Logs
    Insights reads them for the caller."""
    reader = events_from or logs

    def rows(query: Params) -> list[list[dict[str, str]]]:
        totals: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
        nodes: dict[tuple[str, str], str] = {}
        pods: dict[tuple[str, str], str] = {}
        pages = reader.get_paginator("filter_log_events").paginate(
            logGroupName=query["logGroupName"],
            startTime=query["startTime"] * 1000,
            endTime=query["endTime"] * 1000,
        )
        for page in pages:
            for event in page["events"]:
                doc = json.loads(event["message"])
                if "steps" not in doc or "step_time_seconds" not in doc:
                    continue
                key = (doc[DIM_JOB], str(doc[PROP_RANK]))
                totals[key][0] += doc["steps"]
                totals[key][1] += doc["step_time_seconds"] * doc["steps"]
                totals[key][2] += doc.get(str(TrainingMetric.COMPUTE_TIME), 0.0)
                if DIM_NODE in doc:
                    nodes[key] = doc[DIM_NODE]
                if PROP_POD_NAME in doc:
                    pods[key] = doc[PROP_POD_NAME]
        return [
            [
                {"field": DIM_JOB, "value": job},
                {"field": PROP_RANK, "value": rank},
                {"field": "steps", "value": str(steps)},
                {"field": "step_time", "value": str(time / steps)},
                {"field": "compute", "value": str(compute)},
                {"field": "node", "value": nodes.get((job, rank), "")},
                {"field": "pod", "value": pods.get((job, rank), "")},
            ]
            for (job, rank), (steps, time, compute) in sorted(totals.items())
        ]

    logs_insights_stats(logs, rows)


def _stepping(job: SimulatedJob, window: tuple[float, float]) -> list[float]:
    """The starts of the hours in ``window`` in which a team's job holds its GPUs and no
    simulated run of it starts."""
    if job.name not in JOB_NODES:
        return []
    simulated = {
        hour
        for start, end, _ in runs(job)
        for hour in range(int(start // 3600 * 3600), int(end), 3600)
    }
    starts = (WEEK_START + hour * 3600 for hour in job_hours(job.name))
    return [s for s in starts if window[0] <= s < window[1] and s not in simulated]


def _flush_values(job: SimulatedJob) -> dict[TrainingMetric, float]:
    """What each rank's emitter publishes each window of an hour of steps."""
    step = job.compute_s + job.wait_s
    steps = 3600 / step / (3600 // FLUSH_S)
    return {
        # The window's seconds by what the rank did (goodput): working and waiting for data.
        TrainingMetric.COMPUTE_TIME: steps * job.compute_s,
        TrainingMetric.DATA_WAIT_TIME: steps * job.wait_s,
        TrainingMetric.STEPS: steps,
        TrainingMetric.STEP_TIME: step,
        TrainingMetric.DATA_WAIT: job.wait_s,
        TrainingMetric.DATA_WAIT_SHARE: 100 * job.wait_s / step,
        TrainingMetric.SAMPLES_PER_SECOND: BATCH / step,
    }


def stepping_hours(job: SimulatedJob, window: tuple[float, float]) -> list[dict[str, Any]]:
    """The hours in ``window`` in which a team's job holds its GPUs and no simulated run of it
    starts: what its two ranks' emitters publish in an hour of steps (a five-minute window
    each, ``FLUSH_S``), as CloudWatch stores it."""
    windows = RANKS * 3600 // FLUSH_S
    dims = {DIM_CLUSTER: CLUSTER, DIM_JOB: job.name}
    return [
        statistic_set(str(metric), dims, start, [value], TRAINING_METRIC_UNITS[metric], windows)
        for start in _stepping(job, window)
        for metric, value in _flush_values(job).items()
    ]


def stepping_documents(job: SimulatedJob, window: tuple[float, float]) -> list[EmfDocument]:
    """``stepping_hours`` as the emitter's own documents: each rank's flush every ``FLUSH_S``
    of the hour, labelled with its rank, pod and node, as ``TrainingMetrics`` writes them
    (the OTLP path sends each, where EMF's hour is one statistic set)."""
    values = {str(metric): value for metric, value in _flush_values(job).items()}
    units = {str(metric): TRAINING_METRIC_UNITS[metric] for metric in _flush_values(job)}
    return [
        emf_document(
            namespace=NAMESPACE_TRAINING,
            timestamp_ms=int((start + (flush + 0.5) * FLUSH_S) * 1000),  # mid-window
            dimension_sets=[[DIM_CLUSTER, DIM_JOB]],
            dimensions={DIM_CLUSTER: CLUSTER, DIM_JOB: job.name},
            metrics=values,
            units=units,
            properties={
                PROP_RANK: rank,
                PROP_POD_NAME: RANK_PODS[job.name][rank].name,
                DIM_NODE: node_of(job, rank),
            },
        )
        for start in _stepping(job, window)
        for rank in range(RANKS)
        for flush in range(3600 // FLUSH_S)
    ]


def otlp_samples(window: tuple[float, float] = (0.0, END)) -> Iterator[Sample]:
    """What the jobs' emitters send over OTLP (exporter_sink=otlp) for the runs that start in
    ``window`` and the teams' hours of steps in it: every document through the emitter's
    OTLP JSON encoder, a job's pods' namespace on its resource, as CloudWatch stores it."""
    sink = Collect()
    for job in JOBS:
        for rank in range(RANKS):
            simulate(job, rank, sink, window)
    for job in JOBS:
        documents = [d for d in sink.documents if d[DIM_JOB] == job.name]
        documents += stepping_documents(job, window)
        # In time order, as the emitter sends them (a series' samples must be, for the engine).
        documents.sort(key=lambda d: int(d["_aws"]["Timestamp"]))
        yield from emitter_samples(documents, RANK_PODS[job.name][0].namespace)


def seed(
    clients: dict[str, Any],
    window: tuple[float, float] = (0.0, END),
    *,
    fleet: bool = False,
    otlp: bool = False,
) -> int:
    """Run the jobs' runs that start in ``window`` (by default all of them); what the agent
    would do with their EMF: metrics, and the log lines. With the week's ``fleet`` seeded
    (cli/demo/week.py), the teams' jobs step in every hour they hold its GPUs: their other
    hours of steps in ``window`` are written hour by hour (``stepping_hours``). ``otlp``: the
    emitters send OTLP (``otlp_samples``, served by PromQL) and nothing here: no metric, no
    log line."""
    if otlp:
        return 0
    sink = Collect()
    for job in JOBS:
        for rank in range(RANKS):
            simulate(job, rank, sink, window)
    PutMetricDataSink(clients["cloudwatch"]).send(sink.documents)
    hourly = [d for job in JOBS for d in stepping_hours(job, window)] if fleet else []
    for first in range(0, len(hourly), 1000):
        clients["cloudwatch"].put_metric_data(
            Namespace=NAMESPACE_TRAINING, MetricData=hourly[first : first + 1000]
        )
    logs = clients["logs"]
    group = _log_stream(logs)
    events = sorted(
        ({"timestamp": d["_aws"]["Timestamp"], "message": encode(d)} for d in sink.documents),
        key=lambda e: e["timestamp"],
    )
    for first in range(0, len(events), 5000):
        logs.put_log_events(
            logGroupName=group, logStreamName="agent", logEvents=events[first : first + 5000]
        )
    return len(sink.documents)


def _log_stream(logs: Any) -> str:
    """The training log group (the stack's, made before any run) and the agent's stream."""
    group = training_log_group(CLUSTER)
    if not logs.describe_log_groups(logGroupNamePrefix=group)["logGroups"]:
        logs.create_log_group(logGroupName=group)
    streams = logs.describe_log_streams(logGroupName=group, logStreamNamePrefix="agent")
    if not streams["logStreams"]:
        logs.create_log_stream(logGroupName=group, logStreamName="agent")
    return group


#: The deployment the demo's training analyzer runs in: a one-day lookback, and the bucket
#: the data-bound job reads as its data source.
SETTINGS = Settings(
    cluster_name=CLUSTER,
    lookback_days=1,
    training_data_sources=("demo-training-data",),
    # The demo's Classic run; its OTel run deploys it in OTel mode (``environment_for``).
    container_insights_mode=ContainerInsightsMode.CLASSIC,
)
#: The environment the stack gives the analyzer in that deployment.
ENV = training_config(SETTINGS, report_bucket=REPORT_BUCKET).environment()


def environment_for(
    mode: ContainerInsightsMode, sink: ExporterSink = ExporterSink.EMF
) -> dict[str, str]:
    """The analyzer's environment in a deployment of that Container Insights mode and
    exporter sink."""
    settings = replace(SETTINGS, container_insights_mode=mode, exporter_sink=sink)
    return training_config(settings, report_bucket=REPORT_BUCKET).environment()


def run_training_analyzer(
    clients: dict[str, Any],
    log_reader: Any = None,
    earlier_runs: Iterable[float] = (),
    at: float = END,
    mode: ContainerInsightsMode = ContainerInsightsMode.CLASSIC,
    sink: ExporterSink = ExporterSink.EMF,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The analyzer's run at ``at`` (the demo's end), after its runs at ``earlier_runs``
    (epoch seconds), as its daily schedule would have run them, deployed in ``mode`` with the
    exporter's ``sink``."""
    env = environment_for(mode, sink)
    training_handler._clients.update(
        cloudwatch=clients["cloudwatch"],
        events=clients["events"],
        s3=clients["s3"],
        logs=clients["logs"],
    )
    rank_query_results(clients["logs"], log_reader)
    with environment(env):
        for time in earlier_runs:
            training_handler.handler({"time": datetime.fromtimestamp(time, UTC).isoformat()}, None)
    return run_analyzer(training_handler.handler, env, clients["s3"], at=at)


def run_next_morning(
    s3: Any,
    at: float,
    mode: ContainerInsightsMode = ContainerInsightsMode.CLASSIC,
    sink: ExporterSink = ExporterSink.EMF,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The analyzer's next scheduled run (after ``run_training_analyzer``, whose clients it
    keeps): it attributes the whole UTC day before ``at``, so the run on the Monday after the
    week closes its Sunday. Its findings are that Monday's (next week's report's)."""
    return run_analyzer(training_handler.handler, environment_for(mode, sink), s3, at=at)


def training_summary(summary: dict[str, Any], findings: list[dict[str, Any]]) -> list[str]:
    trained = sum(1 for f in findings if str(f["kind"]).startswith("training_"))
    lines = [
        f"7. Simulated {len(JOBS)} training jobs x {RANKS} ranks through emitter.training and ran "
        f"the training analyzer's Lambda handler: {summary['jobs']} jobs, "
        f"{summary['gpu_hours']:,.0f} GPU-hours, {trained} training findings and "
        f"{len(findings) - trained} from its GPU-hour attribution:"
    ]
    lines += finding_lines(findings)
    named = {f["resource"].removeprefix("job/") for f in findings}
    quiet = [job.name for job in JOBS if job.name not in named]
    lines.append(f"   no findings: {', '.join(quiet) or 'none'}")
    return lines


def monday_summary(findings: list[dict[str, Any]]) -> list[str]:
    """The lines about the analyzer's Monday run: the week's Sunday, with the replayed node."""
    return [
        "   the Monday 07:00 run attributed the week's Sunday, the replayed node's hours in it: "
        f"{len(findings)} findings:",
        *finding_lines(findings),
    ]


def finding_lines(findings: list[dict[str, Any]]) -> list[str]:
    """A line per finding (severity, kind, resource, monthly waste), and what it relates to."""
    lines = []
    for f in findings:
        job = f["resource"].removeprefix("job/")
        waste = f.get("estimated_monthly_waste_usd")
        money = f" (${waste:,.0f}/month)" if waste else ""
        lines.append(f"   {f['severity']:<8} {f['kind']:<32} {job}{money}")
        if f.get("related"):
            lines.append(f"            related: {', '.join(f['related'])}")
    return lines
