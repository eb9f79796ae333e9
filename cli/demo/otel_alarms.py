"""The OTel demo's alarm stage: the exporter's hours in OTLP form, every PromQL alarm the app
deploys with ``exporter_sink=otlp`` replayed on a local Prometheus, and each contributor that
goes into ALARM paged through the real notifier handler, once.

The series are the exporter's own: the demo's NVML trace (exporter.simulated_trace) replayed
through the real ``Exporter`` into the real ``XidEventLog(OtlpSink, listener)`` of
``--sink otlp``, whose OTLP exporter is swapped for one that keeps each request's
``MetricsData`` (the encoder's output, ``otlp_sink.metrics_data``). Each datapoint becomes one
Prometheus sample under CloudWatch's names: a resource attribute as ``@resource.<name>``, a
datapoint attribute bare ("PromQL querying", CloudWatch-PromQL-Querying.html, as
lambdas/shared/dcgm.py reads it). Kube State Metrics' GPU capacity per node is written as the
add-on sends it (cdk/alarms/promql.py ``KSM_CAPACITY``), every 30 s.

Four nodes for two hours of the demo's replay window, one-minute cycles:

- the demo's replayed node (its GPUs as the demo's replay has them, cli/demo/exporter.py
  ``ROLES``): GPU 0 busy (the trace's XID 13), GPU 1 held by a pod that does no work (planted:
  the trace's idle GPU given the pod's process, so the exporter names the pod), GPU 2
  thermally throttled from 13:00, GPU 3 failing (an uncorrectable ECC error with its XID 48,
  then off the bus ten minutes later: the exporter's XID 79 and ``gpu_healthy`` 0), GPU 4
  power-braked for 48 minutes (NVML's HW power brake slowdown), GPUs 5-7 held by no pod and
  idle;
- a steady node: eight busy GPUs, the trace's XID left out;
- a silent node: eight busy GPUs whose exporter stops (crashed, evicted) while Kube State
  Metrics still says the node has eight;
- a serving node (a g5.12xlarge, four A10G: cli/demo/serving.py): three replicas of a vLLM
  Deployment and a KServe predictor, one GPU each, their vLLM series beside the exporter's. One
  vLLM replica holds its GPU and serves nothing (planted, as the replayed node's idle GPU); the
  others take a traffic spike whose p99 time to first token passes its target (planted).

And an 8-GPU pod the scheduler cannot place, in Kube State Metrics' series (planted).

The training jobs are the demo's alarm jobs (cli/demo/jobs.py: a steady job, a hung job, a NaN
loss, a loss spike, a slowdown), their emitters' documents encoded by the emitter's own OTLP JSON
encoder (emitter.otlp ``encoder``, each job with its pod's namespace) and read back as the
samples CloudWatch stores; their pages name the job from its labels and its ranks' pods from
PromQL, which the notifier asks the same Prometheus.

The XID page comes from the exporter's log (the notifier's subscription on its XID lines, in
seconds); the XID alarms' contributor events reach the notifier too, which leaves them to the
log (lambdas/notifier/incidents.py ``REPORTED_FROM_LOGS``).
"""

import json
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from opentelemetry.sdk.metrics.export import MetricsData

from cdk.alarms.catalog import promql_alarms
from cdk.alarms.jobs import JOB_GOODPUT_LOW, JOB_STEP_TIME_RISE
from cdk.alarms.model import AlarmSpec
from cdk.alarms.promql import PromQLQuery
from cdk.settings import Settings
from cli.backtest.otel_replay import classic_histograms
from cli.backtest.promql_alarm import ALARM, Transition, replay_range
from cli.backtest.promql_pages import XID_LOG, contributor_event
from cli.demo import kube_state
from cli.demo.exporter import (
    FIRST_PID,
    INTERVAL_S,
    REPLAY_PODS,
    REPLAYED,
    ROLES,
    START_EPOCH,
    START_HOUR,
    run_cycles,
    write_pod_logs,
    write_proc,
)
from cli.demo.jobs import ALARM_JOBS, AlarmJob, Phase, emitter_samples
from cli.demo.notifications import (
    ACCOUNT,
    NOTIFICATIONS,
    _deployed,
    _received,
    _subscription,
    messages_text,
    notifier_at,
)
from cli.demo.otlp import KeptRequests, otlp_samples
from cli.demo.promql import Sample, serving
from cli.demo.realistic import nodes as ec2
from cli.demo.realistic import pods as k8s
from cli.demo.realistic.serving import GPU_OF, IDLE_REPLICA, KSERVE, SERVING_PODS, VLLM
from cli.demo.realistic.serving import NODE as SERVING
from cli.demo.serving import (
    GPU_NAME,
    GPU_WATTS,
    IDLE,
    MODEL_LABEL,
    Load,
    serving_samples,
)
from gpu_insights_agent.contract.metrics import DIM_XID_CODE, OTLP_JOB, ExporterSink
from gpu_insights_agent.emf.document import EmfDocument, encode
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from gpu_insights_agent.exporter.otlp_sink import OtlpSink
from gpu_insights_agent.exporter.simulated_trace import BRAKE_FROM, SimulatedGpu, node_trace
from gpu_insights_agent.exporter.xid_event_log import XidEventLog
from lambdas.notifier import handler as notifier
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.shared.dcgm import CLOUDWATCH as L

#: Two hours of one-minute cycles from the demo's replay window (cli/demo/exporter.py).
DURATION_S: Final = 2 * 3600.0
START: Final = START_EPOCH
END: Final = START + DURATION_S
#: The steady node and the silent node, two more p5.48xlarge of the replayed node's group.
STEADY: Final = ec2.node(
    "10.0.1.18", "i-0f1e2d3c4b5a69789", ec2.P5_48XLARGE, "us-east-1a", "use1-az4",
    ec2.managed_node_group_labels("gpu-speech", "ami-0c2d3e4f5a6b7c8d9"),
)  # fmt: skip
SILENT: Final = ec2.node(
    "10.0.1.19", "i-0f1e2d3c4b5a6978a", ec2.P5_48XLARGE, "us-east-1a", "use1-az4",
    ec2.managed_node_group_labels("gpu-speech", "ami-0c2d3e4f5a6b7c8d9"),
)  # fmt: skip
#: When the silent node's exporter stops (seconds into the window).
SILENT_AT_S: Final = 50 * 60.0
IDLE_GPU: Final = ROLES.index("idle")
BRAKED_GPU: Final = ROLES.index("braked")
#: Each node's pods, one a GPU: a PyTorchJob's master and workers.
PODS: Final = {
    REPLAYED.name: list(REPLAY_PODS),
    STEADY.name: k8s.pytorchjob_pods("speech", "wav2vec-pretrain", 7),
    SILENT.name: k8s.pytorchjob_pods("speech", "tts-distill", 7),
    SERVING.name: list(SERVING_PODS),
}
#: Each node's GPU held by a pod that does no work (its process planted in the trace's idle
#: GPU, so the exporter names the pod): the replayed node's, and the vLLM replica the router
#: sends nothing.
IDLE_HELD: Final = {REPLAYED.name: IDLE_GPU, SERVING.name: GPU_OF[IDLE_REPLICA]}
#: The serving node's GPUs: an A10G each (no GPM: that is Hopper's and later), the idle
#: replica's idle.
SERVING_GPUS: Final = tuple(
    SimulatedGpu(
        "idle" if pod == IDLE_REPLICA else "busy",
        name=GPU_NAME,
        power_limit_w=GPU_WATTS,
        gpm=False,
    )
    for pod in SERVING_PODS
)
#: The trace's times (exporter.simulated_trace): a failing GPU's double-bit ECC error (with its
#: XID 48) ten minutes before it leaves the bus at 80% of the trace; busy GPU 0's XID 13 at
#: 30%; thermal throttling from 13:00, the window starting at ``START_HOUR``.
FAILED_AT_S: Final = DURATION_S * 0.8
ECC_AT_S: Final = FAILED_AT_S - 600
XID_13_AT_S: Final = DURATION_S * 0.3
HOT_AT_S: Final = (13 - START_HOUR) * 3600
BRAKED_AT_S: Final = DURATION_S * BRAKE_FROM


@dataclass(frozen=True)
class Fault:
    """A planted fault: where, when (seconds into the window), and the alarm that pages it
    (``xid_code``: the XID page, which comes from the exporter's log)."""

    what: str
    node: str | None
    gpu: str | None
    at_s: float
    alarm: str
    xid_code: str | None = None
    job: str | None = None
    #: By when (seconds after the fault) it must page, where the alarm's query alone does not
    #: say (a job's trouble: cli/demo/jobs.py ``due``); else ``window_s`` of its alarm.
    due_s: float | None = None
    #: Other labels the contributor must carry (a model's deployment, a pending pod).
    labels: tuple[tuple[str, str], ...] = ()

    def names(self, labels: dict[str, str]) -> bool:
        """Whether a contributor's (or a page's) labels name this fault's node, GPU, XID code,
        job and its other labels."""
        wanted = {L.node: self.node, L.gpu: self.gpu, L.xid_code: self.xid_code, OTLP_JOB: self.job}
        wanted |= dict(self.labels)
        return all(labels.get(k) == v for k, v in wanted.items() if v is not None)

    @property
    def where(self) -> str:
        """What the fault is on, as the summary names it."""
        if self.job:
            return self.job
        if self.node:
            return f"{self.node} GPU {self.gpu}" if self.gpu else self.node
        return ", ".join(v for _, v in self.labels)


def trouble_at_s(job: AlarmJob) -> float:
    """When a job's trouble starts: the end of its phases before the first that is not plain
    training (cli/demo/jobs.py ``Phase``)."""
    at = 0.0
    for phase in job.phases:
        if phase != Phase(phase.minutes):
            return at
        at += phase.minutes * 60
    return at


#: The vLLM Deployment's traffic spike: twice its requests for 15 minutes from 30 minutes in,
#: its first tokens waiting ten times as long (p99 over the 2 s default target).
SPIKE_AT_S: Final = 30 * 60.0
SPIKE_S: Final = 15 * 60.0
#: A PyTorchJob's master asking for a whole p5.48xlarge (8 GPUs) that no node has free: Pending
#: (unschedulable) from 20 minutes in to the window's end.
PENDING_AT_S: Final = 20 * 60.0
PENDING_POD: Final = k8s.pytorchjob_pods("speech", "llama-70b-pretrain", 0)[0]
PENDING_GPUS: Final = 8

#: How the summary names a further page of a job (``AlarmJob.also``).
FURTHER: Final = {JOB_STEP_TIME_RISE: "fail-slow", JOB_GOODPUT_LOW: "goodput"}

FAULTS: Final = (
    Fault("idle held GPU", REPLAYED.name, str(IDLE_GPU), 0.0, "gpu-low-power"),
    Fault("idle replica", SERVING.name, str(GPU_OF[IDLE_REPLICA]), 0.0, "gpu-low-power"),
    Fault(
        "TTFT spike",
        None,
        None,
        SPIKE_AT_S,
        "serving-ttft-p99",
        labels=((L.deployment, VLLM.deployment), (MODEL_LABEL, VLLM.model)),
    ),
    Fault(
        "GPU pod pending",
        None,
        None,
        PENDING_AT_S,
        "gpu-pods-pending",
        labels=((L.namespace, PENDING_POD.namespace), (L.pod, PENDING_POD.name)),
    ),
    Fault("XID 13", REPLAYED.name, "0", XID_13_AT_S, "gpu-xid", "13"),
    Fault("thermal throttling", REPLAYED.name, "2", HOT_AT_S, "gpu-thermal-throttling"),
    Fault("power brake", REPLAYED.name, str(BRAKED_GPU), BRAKED_AT_S, "gpu-power-brake"),
    Fault("uncorrectable ECC", REPLAYED.name, "3", ECC_AT_S, "gpu-ecc-uncorrected"),
    Fault("XID 48", REPLAYED.name, "3", ECC_AT_S, "gpu-xid-fatal", "48"),
    Fault("XID 79", REPLAYED.name, "3", FAILED_AT_S, "gpu-xid-fatal", "79"),
    Fault("GPU lost", REPLAYED.name, "3", FAILED_AT_S, "gpu-lost"),
    Fault("silent node", SILENT.name, None, SILENT_AT_S, "gpu-silent"),
    *(
        Fault(
            job.name,
            None,
            None,
            trouble_at_s(job),
            job.pages,
            job=job.name,
            due_s=job.due[1] * 60 - trouble_at_s(job),
        )
        for job in ALARM_JOBS
        if job.pages is not None
    ),
    # The further pages a job's trouble raises (cli/demo/jobs.py ``also``, ``also_rolling``):
    # the slowed job's fail-slow, the hung job's and the steady job's hour of goodput.
    *(
        Fault(
            f"{job.name} {FURTHER[kind]}",
            None,
            None,
            trouble_at_s(job),
            kind,
            job=job.name,
            due_s=last * 60 - trouble_at_s(job),
        )
        for job in ALARM_JOBS
        for kind, _, last in job.also + job.also_rolling
    ),
)


class _Lines:
    """The agent's EMF listener's place: keeps the XID log lines."""

    def __init__(self) -> None:
        self.documents: list[EmfDocument] = []

    def send(self, documents: Sequence[EmfDocument]) -> None:
        self.documents.extend(documents)


def _trace(node: ec2.Node, gpus: Sequence[SimulatedGpu]) -> list[str]:
    """The node's NVML trace: its idle held GPU's process planted (``IDLE_HELD``: the planted
    fault), the trace's XID on the replayed node only (the others steady)."""
    idle = IDLE_HELD.get(node.name)
    lines = node_trace(
        gpus,
        duration_s=DURATION_S,
        node=node.name,
        start_hour=START_HOUR,
    )
    planted = []
    for line in lines:
        record = json.loads(line)
        if node is not REPLAYED and record["kind"] == "xid":
            continue
        if idle is not None and record["kind"] == "sample" and record["index"] == idle:
            record["pids"] = [FIRST_PID + idle]
        planted.append(json.dumps(record))
    return planted


@dataclass
class ExporterHours:
    #: Every OTLP request the exporters sent, and the XID lines they logged.
    requests: list[MetricsData] = field(default_factory=list)
    xid_lines: list[EmfDocument] = field(default_factory=list)


def run_exporters(cluster: str) -> ExporterHours:
    """Each node's exporter over the window through ``--sink otlp``'s sinks."""
    hours = ExporterHours()
    busy = (SimulatedGpu("busy"),) * 8
    for node, gpus, stop_s in (
        (REPLAYED, tuple(SimulatedGpu(role) for role in ROLES), DURATION_S),
        (STEADY, busy, DURATION_S),
        (SILENT, busy, SILENT_AT_S),
        (SERVING, SERVING_GPUS, DURATION_S),
    ):
        kept, lines = _run_node(cluster, node, gpus, stop_s)
        hours.requests += kept.requests
        hours.xid_lines += lines.documents
    return hours


def _run_node(
    cluster: str, node: ec2.Node, gpus: Sequence[SimulatedGpu], stop_s: float
) -> tuple[KeptRequests, _Lines]:
    """One node's exporter, in virtual time, until ``stop_s`` into the window."""
    kept, lines = KeptRequests(), _Lines()
    now = [0.0]
    with tempfile.TemporaryDirectory() as proc, tempfile.TemporaryDirectory() as logs:
        write_proc(Path(proc), PODS[node.name])
        write_pod_logs(Path(logs), PODS[node.name])
        sink = OtlpSink("http://local", exporter=kept, start_ns=int(START * 1e9))
        exporter = Exporter(
            NvmlSource(FakeNvml(_trace(node, gpus), clock=lambda: now[0], sleep=lambda _: None)),
            XidEventLog(sink, lines),
            ExporterConfig(
                cluster_name=cluster,
                node_name=node.name,
                interval_s=INTERVAL_S,
                proc_root=Path(proc),
                pod_log_root=Path(logs),
            ),
            clock=lambda: START + now[0],
        )
        run_cycles(exporter, now, int(stop_s / INTERVAL_S))
    return kept, lines


def capacity_samples(cluster: str) -> Iterator[Sample]:
    """Kube State Metrics' ``nvidia.com/gpu`` capacity of each node, every 30 s."""
    return kube_state.capacity_samples(cluster, (REPLAYED, STEADY, SILENT, SERVING), START, END)


def pending_samples(cluster: str) -> Iterator[Sample]:
    """Kube State Metrics' series of the pending pod from ``PENDING_AT_S``, every 30 s."""
    return kube_state.pending_samples(cluster, PENDING_POD, PENDING_GPUS, START + PENDING_AT_S, END)


def spike_load(pod: k8s.Pod, step: int) -> Load:
    """A serving replica's minute of the window: the idle replica serves nothing; the vLLM
    Deployment's others twice as many requests through the spike, the first token ten times
    as long, their queue and KV cache higher but under their alarms' thresholds."""
    if pod == IDLE_REPLICA:
        return IDLE
    if pod in VLLM.pods and SPIKE_AT_S <= step * 60 < SPIKE_AT_S + SPIKE_S:
        return Load(600, ttft_s=1.5, itl_s=0.04, running=40, waiting=6, kv_cache=0.9, util=98,
                    power_percent=95)  # fmt: skip
    return Load(300, running=16, kv_cache=0.5, util=80, power_percent=80)


def window_serving_samples(cluster: str) -> Iterator[Sample]:
    """The serving replicas' vLLM series and their GPUs' DCGM series each minute of the
    window (cli/demo/serving.py): the exporter's series, not DCGM's, are what the GPU alarms
    read with its OTLP sink; DCGM's arrive beside them all the same."""
    times = [START + step * 60 for step in range(int(DURATION_S // 60))]
    return serving_samples(cluster, times, spike_load, gpu_interval=60)


def otlp_settings(settings: Settings) -> Settings:
    """The demo's settings in OTel mode with the exporter's OTLP sink."""
    return replace(
        settings,
        container_insights_mode=ContainerInsightsMode.OTEL,
        exporter_sink=ExporterSink.OTLP,
    )


def _query(spec: AlarmSpec) -> PromQLQuery:
    assert isinstance(spec.metric, PromQLQuery)
    return spec.metric


@dataclass(frozen=True)
class Page:
    """A message the notifier sent: from which alarm (or the XID log), for which contributor,
    when (epoch seconds) and its subject."""

    alarm: str
    labels: dict[str, str]
    at: float
    topic: str
    subject: str
    text: str

    @property
    def pods(self) -> str:
        """The message's Pods row (lambdas/notifier/notification.py ``rows``), or ""."""
        rows = (line.partition(":") for line in self.text.splitlines())
        return next((v.strip() for k, _, v in rows if k.strip() == "Pods"), "")


@dataclass
class OtelAlarmsDemo:
    alarms: list[AlarmSpec] = field(default_factory=list)
    transitions: dict[str, list[Transition]] = field(default_factory=dict)
    pages: list[Page] = field(default_factory=list)
    samples: int = 0
    #: The files the stage wrote (with a folder): its pages' record and their messages.
    files: list[Path] = field(default_factory=list)

    def pages_for(self, fault: Fault) -> list[Page]:
        """The pages of the fault's alarm (its XID log line, for an XID) that name it."""
        alarm = XID_LOG if fault.xid_code else fault.alarm
        return [p for p in self.pages if p.alarm == alarm and fault.names(p.labels)]

    def raised(self, fault: Fault) -> list[Transition]:
        """The fault's alarm's contributors that went into ALARM naming it."""
        return [
            t
            for t in self.transitions.get(fault.alarm, [])
            if t.state == ALARM and fault.names(t.labels)
        ]


def _xid_labels(document: EmfDocument) -> dict[str, str]:
    """An XID log line's node, GPU and code under the PromQL names a page is matched by."""
    return {
        L.node: str(document["NodeName"]),
        L.gpu: str(document["GpuIndex"]),
        L.xid_code: str(document[DIM_XID_CODE]),
    }


def run_otel_alarms(
    session: Any, settings: Settings, region: str, folder: Path | None = None
) -> OtelAlarmsDemo:
    """The stage: the exporters' hours, the alarms replayed, each ALARM paged. ``session``: a
    boto3 session on moto, where the notifier's topics, ledger and log group are made."""
    settings = otlp_settings(settings)
    cluster = settings.cluster_name
    alarm_settings = settings.alarm_settings()
    demo = OtelAlarmsDemo(
        alarms=[classic_histograms(spec, alarm_settings) for spec in promql_alarms(alarm_settings)]
    )
    hours = run_exporters(cluster)
    samples = [
        *otlp_samples(hours.requests),
        *capacity_samples(cluster),
        *emitter_samples(cluster, START, every=True),
        *window_serving_samples(cluster),
        *pending_samples(cluster),
    ]
    demo.samples = len(samples)
    with serving(samples, region) as client:
        demo.transitions = {
            spec.key: replay_range(client, _query(spec), START, END) for spec in demo.alarms
        }
        _page(session, settings, region, hours, demo)
    if folder is not None:
        demo.files = _write(folder, demo)
    return demo


def _page(
    session: Any, settings: Settings, region: str, hours: ExporterHours, demo: OtelAlarmsDemo
) -> None:
    """Each XID log line and each ALARM contributor through the notifier, in time order."""
    cluster = settings.cluster_name
    events: list[tuple[float, str, dict[str, str], dict[str, Any]]] = []
    for document in hours.xid_lines:  # each delivered 5 s after it was logged
        at_ms = int(document["_aws"]["Timestamp"]) + 5_000
        delivery = _subscription([encode(document)], at_ms, str(document["NodeName"]))
        events.append((at_ms / 1000, XID_LOG, _xid_labels(document), delivery))
    for spec in demo.alarms:
        for raised in demo.transitions[spec.key]:
            if raised.state == ALARM:
                event = contributor_event(spec, cluster, region, raised, ACCOUNT)
                events.append((raised.at, spec.key, raised.labels, event))
    sqs = session.client("sqs")
    with _deployed(session, settings, hours.xid_lines) as queues:
        # The job pages' PromQL placement reads signed as the function's cloudwatch client.
        notifier._clients["cloudwatch"] = session.client("cloudwatch")
        for at, alarm, labels, event in sorted(events, key=lambda e: e[0]):
            with notifier_at(at):
                notifier.handler(event, None)
            for topic, subject, text in _received(sqs, queues):
                demo.pages.append(Page(alarm, labels, at, topic, subject, text))
    for service in ("sns", "dynamodb", "logs", "cloudwatch"):
        notifier._clients.pop(service, None)


#: Each page of the stage: its alarm, labels, time, topic and subject (its body is in
#: ``NOTIFICATIONS``, after the run's own messages).
PAGES_FILE: Final = "otel-alarms.json"


def _write(folder: Path, demo: OtelAlarmsDemo) -> list[Path]:
    """The pages' record (``PAGES_FILE``), and each page's message as the notifier sent it,
    added to the run's ``NOTIFICATIONS`` under a line that says whose they are."""
    pages = folder / PAGES_FILE
    pages.write_text(
        json.dumps(
            [
                {"alarm": p.alarm, "at": p.at, "topic": p.topic, "subject": p.subject} | p.labels
                for p in demo.pages
            ],
            indent=2,
        )
        + "\n"
    )
    messages = folder / NOTIFICATIONS
    with messages.open("a", encoding="utf-8") as out:
        out.write(
            f"\n=== The alarm stage (exporter_sink=otlp, {PAGES_FILE}): "
            f"{len(demo.pages)} pages ===\n\n"
        )
        out.write(messages_text((p.topic, p.text) for p in demo.pages))
    return [pages, messages]


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if abs(seconds) < 60 else f"{seconds / 60:.0f} min"


def window_s(spec: AlarmSpec) -> int:
    """The latest a breach that starts between two evaluations pages: the range it must fill
    (or enter), the pending period, and one evaluation interval."""
    query = _query(spec)
    return query.lookback_s + query.pending_period_s + query.evaluation_interval_s


def within_s(fault: Fault, alarms: Sequence[AlarmSpec]) -> float:
    """By when after it the fault must page: its own due time, else its alarm's window."""
    if fault.due_s is not None:
        return fault.due_s
    return window_s(next(spec for spec in alarms if spec.key == fault.alarm))


def steady_pages(demo: OtelAlarmsDemo) -> list[Page]:
    """The pages that name no planted fault."""
    return [p for p in demo.pages if not any(p in demo.pages_for(f) for f in FAULTS)]


def otel_alarms_summary(demo: OtelAlarmsDemo) -> list[str]:
    """Each planted fault, the alarm that paged it, when relative to the fault, what the page
    names; then what the steady GPUs and nodes paged."""
    lines = [
        f"12. OTel mode, exporter_sink=otlp: four nodes' exporters, five training jobs' "
        f"emitters and four inference replicas' vLLM series for two hours ({demo.samples:,} "
        f"samples in a local Prometheus, Kube State Metrics' GPU capacity and a pending GPU pod "
        f"among them), the app's {len(demo.alarms)} PromQL "
        f"alarms replayed every minute, each ALARM contributor and XID log line through the "
        f"notifier: {len(demo.pages)} pages"
    ]
    for fault in FAULTS:
        pages = demo.pages_for(fault)
        raised = demo.raised(fault)
        if not pages or not raised:
            lines.append(f"   {fault.what:<19} on {fault.where}: NOT PAGED by {fault.alarm}")
            continue
        alarm = (
            f"{fault.alarm} ALARM after {_minutes(raised[0].at - START - fault.at_s)} "
            f"(due within {_minutes(within_s(fault, demo.alarms))})"
        )
        via = "the exporter's XID log line" if fault.xid_code else "the contributor"
        pods = f", pod {pages[0].pods}" if pages[0].pods else ""
        lines.append(
            f"   {fault.what:<19} {alarm}; {len(pages)} page from {via}, "
            f"{_minutes(pages[0].at - START - fault.at_s)} after the fault: "
            f"{pages[0].subject}{pods}"
        )
    lines.append(
        f"   steady: {STEADY.name}'s 8 GPUs, GPUs 5-7 of {REPLAYED.name} (no pod's), every GPU of "
        f"{SILENT.name} before it went silent, job {ALARM_JOBS[0].name} (but for its goodput "
        "hour, above), and model "
        f"{KSERVE.model} ({KSERVE.deployment}): "
        f"{len(steady_pages(demo))} pages"
    )
    return lines
