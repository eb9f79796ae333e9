"""The demo's failed jobs: four jobs die in the replayed hours, each of a cause its logs name,
and each failure is read back and classified through the training analyzer's own log reader.

- ``sdxl-cuda-oom`` runs out of CUDA memory, ``mixtral-nccl-timeout``'s collective times out:
  their failing rank's container prints it (the application log group);
- ``tokenize-oom-killed``'s process is killed by the kernel's OOM killer (its node's host log);
- ``whisper-finetune`` dies with the replayed node's failing GPU (cli/demo/exporter.py): the
  driver logs that GPU's XID 48, then its XID 79 as it falls off the bus, at the trace's
  instants and on its bus, in the node's dmesg; its worker on that GPU was the one that died.

The first three run on their team's node's spare GPUs (cli/demo/week.py ``SPARE_GPUS``),
their pods holding them from the replay's start until the job fails.

Each job reports its end through the emitter (``close(succeeded=False)`` on rank 0: the
``job_failed`` count the analyzer reads); the first three step until then, whisper-finetune
runs no step loop through it (its GPU-hours stay inferred from its pods, and the analyzer
reads its failure from the pods the GPU-hour attribution placed). The lines
are the corpus's (tests/data/failure_logs/corpus.json, each with its public source), written as
Container Insights' Fluent Bit writes them: group and stream names as the reader looks them up
(``failure_logs.stream_prefixes``), records shaped as the manifest's inputs and filters make
them (aws-samples/amazon-cloudwatch-container-insights, k8s-deployment-manifest-templates/
deployment-mode/daemonset/container-insights-monitoring/fluent-bit/fluent-bit.yaml).
"""

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from cli.checkout import CHECKOUT, CORPUS
from cli.demo import otlp
from cli.demo.exporter import (
    DURATION_S,
    NODE,
    REPLAY_PODS,
    REPLAYED,
    ROLES,
    START_EPOCH,
    START_HOUR,
)
from cli.demo.jobs import Clock, Collect
from cli.demo.promql import Sample
from cli.demo.realistic import pods as k8s
from cli.demo.week import NODES, SPARE_GPUS, SpareHold
from gpu_insights_agent.contract.metrics import training_log_group
from gpu_insights_agent.emf.document import encode
from gpu_insights_agent.emf.sinks import PutMetricDataSink
from gpu_insights_agent.emitter.training import TrainingMetrics
from gpu_insights_agent.exporter.simulated_trace import SimulatedGpu, node_trace
from lambdas.shared.findings import Kind
from lambdas.training_analyzer.failure_logs import (
    FailedPod,
    explain_job_failure,
    failure_window,
    stream_prefixes,
)

FLUSH_S: Final = 300.0
STEP_S: Final = 2.0
BATCH: Final = 32
#: The container every rank runs in.
CONTAINER: Final = "pytorch"


@dataclass(frozen=True)
class PlantedFailure:
    job: str
    namespace: str
    #: The cause the classifier must name (failure_causes.Cause's value).
    cause: str
    #: Corpus entries (ids) the failing rank's container printed, and its node's host log.
    printed: tuple[str, ...] = ()
    kernel: tuple[str, ...] = ()
    #: Minutes after the replay's start the job fails. ``tokenize-oom-killed`` shares
    #: ``sdxl-cuda-oom``'s node (week.py ``SPARE_GPUS``): its kernel's OOM kill falls after
    #: the window sdxl's failure is read in (failure_logs.failure_window), as a host log line
    #: in it would be read as sdxl's too.
    minute: float = 0.0


PLANTED: Final = (
    PlantedFailure(
        "sdxl-cuda-oom", "vision", "cuda_out_of_memory", printed=("cuda-oom-torch-2x",), minute=25
    ),
    PlantedFailure(
        "mixtral-nccl-timeout",
        "nlp",
        "nccl_timeout",
        printed=("nccl-timeout-allreduce-2025",),
        minute=50,
    ),
    PlantedFailure(
        "tokenize-oom-killed",
        "nlp",
        "kernel_oom_killer",
        kernel=("global-oom-host-log-group",),
        minute=75,
    ),
    # Its minute and lines come from the replayed node's trace (``_failing_gpu``).
    PlantedFailure("whisper-finetune", "speech", "gpu_xid"),
)


@dataclass(frozen=True)
class _Trace:
    """The replayed node's failing GPU as its trace has it: bus, XID 48's and loss's times."""

    bus: str
    xid_48_s: float
    lost_s: float


def _failing_gpu() -> _Trace:
    lines = [
        json.loads(line)
        for line in node_trace(
            [SimulatedGpu(role) for role in ROLES],
            duration_s=DURATION_S,
            node=NODE,
            start_hour=START_HOUR,
        )
    ]
    index = ROLES.index("failing")
    gpu = next(r for r in lines if r["kind"] == "gpu" and r["index"] == index)
    xid = next(r for r in lines if r["kind"] == "xid" and r["index"] == index)
    lost = next(r for r in lines if r["kind"] == "lost" and r["index"] == index)
    # NVML's "00000000:13:00.0" is the driver's "PCI:0000:13:00".
    domain, bus, device = gpu["pci_bus_id"].split(".")[0].split(":")
    return _Trace(f"{domain[-4:]}:{bus}:{device}", START_EPOCH + xid["t"], START_EPOCH + lost["t"])


@cache
def _corpus() -> dict[str, tuple[str, ...]]:
    entries = json.loads((CHECKOUT / CORPUS).read_text(encoding="utf-8"))["entries"]
    return {e["id"]: tuple(e["lines"]) for e in entries}


def corpus_lines(sample_id: str) -> tuple[str, ...]:
    return _corpus()[sample_id]


def _on_bus(line: str, bus: str) -> str:
    """A corpus XID line on the replayed GPU's bus (the rest as its source prints it)."""
    return re.sub(r"PCI:[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}", f"PCI:{bus}", line)


@dataclass(frozen=True)
class _Planted:
    failure: PlantedFailure
    pods: list[k8s.Pod]
    nodes: list[str]
    #: The rank that died (its pod's container printed the cause, its node logged it).
    failing_rank: int
    failed_at: float


def _placed(failure: PlantedFailure) -> _Planted:
    if failure.job == "whisper-finetune":
        trace = _failing_gpu()
        rank = ROLES.index("failing")
        return _Planted(failure, list(REPLAY_PODS), [NODE] * len(REPLAY_PODS), rank, trace.lost_s)
    pods = k8s.pytorchjob_pods(failure.namespace, failure.job, 1)
    node, _ = SPARE_GPUS[failure.job]
    return _Planted(failure, pods, [node] * len(pods), 1, START_EPOCH + failure.minute * 60)


def planted() -> list[_Planted]:
    return [_placed(f) for f in PLANTED]


def spare_holds() -> Iterator[SpareHold]:
    """The planted jobs' pods on their team's spare GPUs (week.py ``SPARE_GPUS``), each
    holding its GPU from the replay's start until the job fails."""
    for job in planted():
        if job.failure.job not in SPARE_GPUS:
            continue
        node, gpus = SPARE_GPUS[job.failure.job]
        for pod, gpu in zip(job.pods, gpus, strict=True):
            yield SpareHold(pod, node, gpu, START_EPOCH, job.failed_at)


def emitter_documents(cluster: str, job: _Planted) -> list[Any]:
    """What the job's ranks' emitters publish up to the failure: steps from the replay's start
    (none for whisper-finetune), and rank 0's ``job_failed``."""
    sink = Collect()
    stepping = job.failure.job != "whisper-finetune"
    for rank in range(len(job.pods) if stepping else 1):
        clock = Clock(START_EPOCH)
        metrics = TrainingMetrics(
            job_name=job.failure.job,
            cluster_name=cluster,
            rank=rank,
            node_name=job.nodes[rank],
            pod_name=job.pods[rank].name,
            flush_s=FLUSH_S,
            sink=sink,
            clock=clock,
            wall_clock=clock,
            heartbeat=False,
        )

        def batches(metrics_clock: Clock = clock) -> Iterator[list[int]]:
            while metrics_clock.now < job.failed_at - STEP_S:
                yield [0] * BATCH

        if stepping:
            for _ in metrics.steps(batches()):
                clock.now += STEP_S
                metrics.record(loss=2.0)
        clock.now = job.failed_at
        metrics.close(succeeded=False)
    return sink.documents


def _container_id(pod: k8s.Pod) -> str:
    return (pod.name.encode().hex() * 8)[:64]


def log_events(cluster: str, job: _Planted) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(log group, stream) -> events, as Fluent Bit ships the failing rank's lines.

    Application: the tail input's ``multiline.parser docker, cri`` (containerd's CRI format:
    Fluent Bit's cri parser keeps ``stream``, ``_p`` and ``log``, src/multiline/
    flb_ml_parser_cri.c) and the kubernetes filter's ``kubernetes`` object; the stream is the
    output's ``${HOST_NAME}-`` prefix and the tag ``application.var.log.containers.
    <pod>_<namespace>_<container>-<id>.log``. Host: ``/var/log/dmesg`` read with ``Key message``
    (``host.dmesg``) or ``/var/log/messages`` with the syslog parser (``host.messages``), and
    the aws filter's ``ec2_instance_id`` and ``az``, on a ``${HOST_NAME}.`` stream."""
    failure, rank = job.failure, job.failing_rank
    pod, node = job.pods[rank], job.nodes[rank]
    (app_group, app_prefix), (host_group, host_prefix), _ = stream_prefixes(
        cluster, FailedPod(pod.name, node)
    )
    instance = REPLAYED.instance_id if node == NODE else NODES[node][0].instance_id
    aws = {"az": REPLAYED.zone, "ec2_instance_id": instance}
    events: dict[tuple[str, str], list[dict[str, Any]]] = {}

    def add(group: str, stream: str, at: float, record: dict[str, Any]) -> None:
        events.setdefault((group, stream), []).append(
            {"timestamp": int(at * 1000), "message": json.dumps(record)}
        )

    stream = f"{app_prefix}{failure.namespace}_{CONTAINER}-{_container_id(pod)}.log"
    kubernetes = {
        "pod_name": pod.name,
        "namespace_name": pod.namespace,
        "container_name": CONTAINER,
        "host": node,
    }
    printed = [line for sample in failure.printed for line in corpus_lines(sample)]
    for i, line in enumerate(printed):
        add(app_group, stream, job.failed_at - 1 + i / 1000, {
            "stream": "stderr", "_p": "F", "log": line, "kubernetes": kubernetes,
        })  # fmt: skip
    for sample in failure.kernel:
        for i, line in enumerate(corpus_lines(sample)):
            record = {**json.loads(line), **aws}
            if "host" in record:  # the syslog parser's host: the node's short name
                record["host"] = node.split(".")[0]
            add(host_group, f"{host_prefix}messages", job.failed_at - 2 + i / 1000, record)
    if failure.cause == "gpu_xid":
        trace = _failing_gpu()
        (xid_48,) = (json.loads(line)["message"] for line in corpus_lines("xid-48-host-log-group"))
        (xid_79,) = corpus_lines("xid-79-nvsentinel")
        for at, line in ((trace.xid_48_s, xid_48), (trace.lost_s, xid_79)):
            record = {"message": _on_bus(line, trace.bus), **aws}
            add(host_group, f"{host_prefix}dmesg", at, record)
    return events


def emitter_samples(cluster: str) -> Iterator[Sample]:
    """The planted jobs' emitters over OTLP (exporter_sink=otlp): each job's documents through
    the emitter's OTLP JSON encoder, its pods' namespace on the resource (cli/demo/otlp.py)."""
    for job in planted():
        documents = sorted(emitter_documents(cluster, job), key=lambda d: d["_aws"]["Timestamp"])
        yield from otlp.emitter_samples(documents, job.failure.namespace)


def seed_failures(clients: dict[str, Any], cluster: str, *, otlp_sink: bool = False) -> int:
    """Each planted job's documents into CloudWatch and the training log group (as the agent
    sends them; with ``otlp_sink`` none: its emitters send OTLP, ``emitter_samples``), and its
    logs into the Container Insights log groups. Returns the events."""
    logs = clients["logs"]
    written = 0
    documents: list[Any] = []
    streams: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for job in planted():
        documents += [] if otlp_sink else emitter_documents(cluster, job)
        for key, events in log_events(cluster, job).items():
            streams.setdefault(key, []).extend(events)
    if documents:
        PutMetricDataSink(clients["cloudwatch"]).send(documents)
        group = training_log_group(cluster)
        logs.create_log_stream(logGroupName=group, logStreamName="agent-failures")
        stamped = sorted((int(d["_aws"]["Timestamp"]), encode(d)) for d in documents)
        agent = [{"timestamp": at, "message": line} for at, line in stamped]
        logs.put_log_events(logGroupName=group, logStreamName="agent-failures", logEvents=agent)
    existing = {g["logGroupName"] for g in logs.describe_log_groups()["logGroups"]}
    for (group, stream), events in sorted(streams.items()):
        if group not in existing:
            logs.create_log_group(logGroupName=group)
            existing.add(group)
        logs.create_log_stream(logGroupName=group, logStreamName=stream)
        events.sort(key=lambda e: e["timestamp"])
        logs.put_log_events(logGroupName=group, logStreamName=stream, logEvents=events)
        written += len(events)
    return written


#: Marks a cause the demo read itself where no analyzer run wrote one.
DEMO_READ: Final = "read_by_demo"


def diagnose(
    logs: Any, cluster: str, findings: Sequence[dict[str, Any]] = ()
) -> list[dict[str, Any]]:
    """Each planted failure's ``training_failure_cause`` finding: the analyzer's, where its run
    wrote one, else read and classified here through the same reader
    (``failure_logs.explain_job_failure``), over the hour whose ``job_failed`` count rose."""
    made = {f["resource"]: f for f in findings if f["kind"] == str(Kind.TRAINING_FAILURE_CAUSE)}
    diagnosed = []
    for job in planted():
        resource = f"job/{job.failure.job}"
        if resource in made:
            diagnosed.append(made[resource])
            continue
        hour = job.failed_at // 3600 * 3600
        pods = [FailedPod(p.name, n) for p, n in zip(job.pods, job.nodes, strict=True)]
        finding = explain_job_failure(
            logs, cluster, job.failure.job, pods, window=failure_window(hour, hour + 3600)
        )
        # No analyzer run read it (none ran over its hours): the demo reads it itself.
        diagnosed.append({**finding.to_dict(), DEMO_READ: True})
    return diagnosed


def diagnosis_lines(finding: dict[str, Any]) -> list[str]:
    """A failure-cause finding as the demo prints it: job, cause, the lines it cites."""
    evidence = finding["evidence"]
    by = " (read by the demo: no analyzer run read it)" if finding.get(DEMO_READ) else ""
    lines = [
        f"   {finding['resource'].removeprefix('job/'):<22} {evidence['cause']:<20} "
        f"{evidence['title']}{by}"
    ]
    lines += [f"   {'':<22} line {c['number']}: {c['text'][:110]}" for c in evidence["lines"]]
    return lines


def failures_summary(diagnosed: list[dict[str, Any]]) -> list[str]:
    return [
        f"   Failed jobs in the same hours ({len(PLANTED)} planted), each cause read back from "
        "the Container Insights log groups and classified by the analyzer's Monday run:",
        *(line for finding in diagnosed for line in diagnosis_lines(finding)),
    ]
