"""The demo's GPU node: the real exporter replays a simulated NVML trace into (moto) CloudWatch.

Virtual time: each cycle moves the trace's clock by the exporter's interval, so hours of a
node replay in a second, through the same Exporter, XidWatcher and PutMetricDataSink that
run on a node with ``--sink cloudwatch``.
"""

import json
import tempfile
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

from cli.demo.datums import statistic_set
from cli.demo.otlp import KeptRequests, otlp_samples
from cli.demo.realistic import container_insights as ci
from cli.demo.realistic import nodes as ec2
from cli.demo.realistic import pods as k8s
from cli.demo.storage import END
from gpu_insights_agent.contract.metrics import (
    ALARM_METRICS,
    CI_NODE_GPU_LIMIT_METRIC,
    CI_NODE_GPU_POWER_METRIC,
    CI_POD_GPU_POWER_METRIC,
    CI_POD_GPU_UTILIZATION_METRIC,
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_NODE,
    DIM_SHARD,
    DIM_XID_CODE,
    NAMESPACE_CONTAINER_INSIGHTS,
    NAMESPACE_GPU,
    OTLP_GPU,
    GpuMetric,
    alarm_shard,
)
from gpu_insights_agent.emf.document import EmfDocument, encode
from gpu_insights_agent.emf.sinks import BufferedSender, PutMetricDataSink, Sender
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from gpu_insights_agent.exporter.otlp_sink import OtlpSink
from gpu_insights_agent.exporter.simulated_trace import SimulatedGpu, node_trace
from gpu_insights_agent.exporter.xid_event_log import XidEventLog

#: A p5.48xlarge of a managed node group on the accelerated AMI (cli/demo/realistic/nodes.py).
REPLAYED: Final = ec2.node(
    "10.0.1.17", "i-0f1e2d3c4b5a69788", ec2.P5_48XLARGE, "us-east-1a", "use1-az4",
    ec2.managed_node_group_labels("gpu-speech", "ami-0c2d3e4f5a6b7c8d9"),
)  # fmt: skip
NODE = REPLAYED.name
#: Every GPU of the node, as NVML lists them all: the exporter reports each GPU whether or not a
#: pod holds it (the device plugin gives GPUs to pods; NVML and the exporter see the node's), so
#: the three no pod asked for report idle power, with no process and so no allocated reading,
#: which the low-power alarm reads (it is for GPUs a pod holds). GPU 4's power brake engages for
#: 48 minutes of the replay (exporter.simulated_trace ``BRAKE_FROM``).
ROLES: Final = ("busy", "idle", "thermal", "failing", "braked", *("unallocated",) * 3)
if len(ROLES) != REPLAYED.instance_type.gpu_count:
    raise ValueError(f"the replayed node's trace has {len(ROLES)} GPUs, its instance type more")
INTERVAL_S = 60.0
DURATION_S = 2 * 3600.0
#: The replay ends six hours before the demo's "now", so the weekly report's week holds it.
START_EPOCH = END - 6 * 3600 - DURATION_S
START_HOUR = 12.5


#: The pods that hold the replayed node's GPUs, one GPU each (GPU N the Nth): a PyTorchJob's
#: master and four workers (Container Insights names them by their own names). The idle GPU's
#: pod holds it at 12% of its limit; the unallocated GPUs come after them, held by none.
HELD_GPUS: Final = sum(role != "unallocated" for role in ROLES)
REPLAY_PODS: Final = k8s.pytorchjob_pods("speech", "whisper-finetune", HELD_GPUS - 1)


def replay_pod(gpu: int) -> k8s.Pod | None:
    """The pod holding the replayed node's GPU ``gpu``; None where no pod asked for it."""
    return REPLAY_PODS[gpu] if gpu < len(REPLAY_PODS) else None


#: The host PID of the process on each GPU in the trace (exporter.simulated_trace: 1000 + its
#: index, where the GPU runs work).
FIRST_PID: Final = 1000


def pod_uid(pod: k8s.Pod) -> str:
    """A stable UID for a replayed pod (Kubernetes gives each pod a random UUID)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"pod/{pod.namespace}/{pod.name}"))


def run_cycles(exporter: Exporter, now: list[float], cycles: int) -> int:
    """The exporter's ``cycles`` in virtual time (``now[0]`` is the trace's clock, moved one
    interval a cycle), its XID watcher drained before each, as its loop runs them on a node;
    the documents the cycles built."""
    exporter.start()
    assert exporter.watcher is not None
    documents = 0
    for cycle in range(cycles):
        now[0] = cycle * INTERVAL_S
        exporter.watcher.drain()
        documents += len(exporter.collect_once())
    exporter.shutdown()
    return documents


def write_proc(root: Path, pods: Sequence[k8s.Pod] = REPLAY_PODS) -> None:
    """The node's /proc as the exporter reads it for pod attribution: each GPU process's
    cgroup, a cgroup v2 path under the kubelet's systemd driver (the EKS accelerated AL2023
    AMI's), which names the pod as ``pod<uid>`` with underscores (gpu_insights_agent/exporter/
    pod_attribution.py;
    Kubernetes "About cgroup v2" and "Configuring a cgroup driver",
    https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/configure-cgroup-driver/)."""
    for index, pod in enumerate(pods):
        slug = pod_uid(pod).replace("-", "_")
        directory = root / str(FIRST_PID + index)
        directory.mkdir(parents=True)
        (directory / "cgroup").write_text(
            f"0::/kubepods.slice/kubepods-pod{slug}.slice/cri-containerd-{index:064x}.scope\n"
        )


def write_pod_logs(root: Path, pods: Sequence[k8s.Pod] = REPLAY_PODS) -> None:
    """The kubelet's ``/var/log/pods/<namespace>_<name>_<uid>`` directories, by which the
    exporter names a pod (exporter.pod_attribution.pod_names): a node with pod attribution
    mounts them read-only beside its /proc (cdk/node_config/manifest.py)."""
    for pod in pods:
        (root / f"{pod.namespace}_{pod.name}_{pod_uid(pod)}").mkdir(parents=True)


def replay_window() -> tuple[float, float]:
    return START_EPOCH, START_EPOCH + DURATION_S


class TeeSink:
    """Writes every EMF line to a file, as the agent's listener would receive it, keeps the
    XID documents for the summary, and passes everything on."""

    def __init__(self, forward: Any, stream: TextIO) -> None:
        self._forward = forward
        self._stream = stream
        self.xid_documents: list[EmfDocument] = []

    def send(self, documents: Any) -> None:
        self._stream.writelines(encode(d) + "\n" for d in documents)
        self.xid_documents.extend(d for d in documents if DIM_XID_CODE in d)
        self._forward.send(documents)


@dataclass
class ExporterReplay:
    cycles: int = 0
    documents: int = 0
    power_utilization_by_gpu: dict[str, float] = field(default_factory=dict)
    sm_active_by_gpu: dict[str, float | None] = field(default_factory=dict)
    thermal_throttled_by_gpu: dict[str, float] = field(default_factory=dict)
    xids: list[tuple[str, str, str, str]] = field(default_factory=list)
    unhealthy_gpus: list[str] = field(default_factory=list)
    emf_path: Path | None = None
    #: With the OTLP sink: the requests it sent (cli/demo/otlp.py reads them as samples).
    otlp: KeptRequests | None = None


def replay_exporter(
    cloudwatch: Any,
    *,
    cluster_name: str,
    out_dir: Path,
    container_insights: bool = True,
    otlp: bool = False,
) -> ExporterReplay:
    """The node's replay; ``container_insights``: Classic Container Insights publishes its
    series of the node too (OTel mode's are served by PromQL, cli/demo/otel.py). ``otlp``:
    the exporter's ``--sink otlp`` (its OTLP sink, the XID lines to the agent's listener,
    ``XidEventLog``): its requests are kept for the local Prometheus, and the figures read
    back from what they sent, as PromQL would average them."""
    now = [0.0]
    emf_path = out_dir / "exporter-emf.jsonl"
    result = ExporterReplay(emf_path=emf_path, otlp=KeptRequests() if otlp else None)
    with (
        emf_path.open("w", encoding="utf-8") as emf,
        tempfile.TemporaryDirectory() as proc,
        tempfile.TemporaryDirectory() as logs,
    ):
        write_proc(Path(proc))
        write_pod_logs(Path(logs))
        sender: Sender
        if result.otlp is not None:
            kept = OtlpSink("http://local", exporter=result.otlp, start_ns=int(START_EPOCH * 1e9))
            tee = TeeSink(kept, emf)
            sender = XidEventLog(tee, Discard())
        else:
            tee = TeeSink(PutMetricDataSink(cloudwatch), emf)
            sender = BufferedSender(tee)
        exporter = Exporter(
            NvmlSource(
                FakeNvml(
                    node_trace(
                        [SimulatedGpu(role) for role in ROLES],
                        duration_s=DURATION_S,
                        node=NODE,
                        start_hour=START_HOUR,
                    ),
                    clock=lambda: now[0],
                    sleep=lambda _: None,
                )
            ),
            sender,
            ExporterConfig(
                cluster_name=cluster_name,
                node_name=NODE,
                interval_s=INTERVAL_S,
                proc_root=Path(proc),
                pod_log_root=Path(logs),
            ),
            clock=lambda: START_EPOCH + now[0],
        )
        cycles = int(DURATION_S / INTERVAL_S)
        result.documents += run_cycles(exporter, now, cycles)
        result.cycles += cycles
    result.documents += len(tee.xid_documents)
    if container_insights:
        publish_container_insights(cloudwatch, cluster_name, emf_path)
    result.xids = [
        (d[DIM_GPU_INDEX], d[DIM_XID_CODE], str(d["XidSeverity"]), str(d["XidDescription"]))
        for d in tee.xid_documents
    ]
    if result.otlp is not None:
        _read_otlp(result, result.otlp)
        return result
    for index in range(len(ROLES)):
        gpu = str(index)
        result.power_utilization_by_gpu[gpu] = (
            _average(cloudwatch, cluster_name, gpu, GpuMetric.POWER_UTILIZATION) or 0.0
        )
        result.sm_active_by_gpu[gpu] = _average(cloudwatch, cluster_name, gpu, GpuMetric.SM_ACTIVE)
        # The throttle flag is sent only in the hours it is set (exporter.fault_gate): its share
        # of the GPU's samples is its sum over the count of samples the GPU answered.
        answered = _statistic(
            cloudwatch, cluster_name, gpu, GpuMetric.POWER_UTILIZATION, "SampleCount"
        )
        throttled = _statistic(cloudwatch, cluster_name, gpu, GpuMetric.THROTTLED_THERMAL, "Sum")
        result.thermal_throttled_by_gpu[gpu] = (
            100 * (throttled or 0.0) / answered if answered else 0.0
        )
        if _minimum(cloudwatch, cluster_name, gpu, GpuMetric.HEALTHY) == 0.0:
            result.unhealthy_gpus.append(gpu)
    return result


class Discard:
    """The agent's EMF listener's place for the XID log lines: the demo's notifications read
    the XID documents the tee kept."""

    def send(self, documents: Any) -> None:
        pass


def _read_otlp(result: ExporterReplay, kept: KeptRequests) -> None:
    """The replay's figures from the OTLP samples its sink sent: each GPU's mean power and SM
    activity, its samples thermally throttled over the samples it answered, and whether it
    was lost (``gpu_healthy`` 0)."""
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for name, labels, _, value in otlp_samples(kept.requests):
        values[(name, labels.get(OTLP_GPU, ""))].append(value)

    def mean(metric: GpuMetric, gpu: str) -> float | None:
        found = values.get((str(metric), gpu))
        return sum(found) / len(found) if found else None

    for index in range(len(ROLES)):
        gpu = str(index)
        result.power_utilization_by_gpu[gpu] = mean(GpuMetric.POWER_UTILIZATION, gpu) or 0.0
        result.sm_active_by_gpu[gpu] = mean(GpuMetric.SM_ACTIVE, gpu)
        answered = len(values.get((str(GpuMetric.POWER_UTILIZATION), gpu), []))
        throttled = sum(values.get((str(GpuMetric.THROTTLED_THERMAL), gpu), []))
        result.thermal_throttled_by_gpu[gpu] = 100 * throttled / answered if answered else 0.0
        if 0.0 in values.get((str(GpuMetric.HEALTHY), gpu), []):
            result.unhealthy_gpus.append(gpu)


def _statistic(
    cloudwatch: Any, cluster: str, gpu: str, metric: GpuMetric, stat: str
) -> float | None:
    """One statistic over the whole replay, read back from CloudWatch as a user would."""
    response = cloudwatch.get_metric_statistics(
        Namespace=NAMESPACE_GPU,
        MetricName=str(metric),
        Dimensions=[
            {"Name": DIM_CLUSTER, "Value": cluster},
            {"Name": DIM_NODE, "Value": NODE},
            {"Name": DIM_GPU_INDEX, "Value": gpu},
            # The alarm metrics' per-GPU series carry the GPU's alarm shard (one shard here).
            *(
                [{"Name": DIM_SHARD, "Value": alarm_shard(NODE, int(gpu), 1)}]
                if metric in ALARM_METRICS
                else []
            ),
        ],
        StartTime=START_EPOCH - 60,
        EndTime=START_EPOCH + DURATION_S + 60,
        Period=int(DURATION_S + 120),
        Statistics=[stat],
    )
    points = response["Datapoints"]
    return float(points[0][stat]) if points else None


def _average(cloudwatch: Any, cluster: str, gpu: str, metric: GpuMetric) -> float | None:
    return _statistic(cloudwatch, cluster, gpu, metric, "Average")


def _minimum(cloudwatch: Any, cluster: str, gpu: str, metric: GpuMetric) -> float | None:
    return _statistic(cloudwatch, cluster, gpu, metric, "Minimum")


def publish_container_insights(cloudwatch: Any, cluster: str, emf_path: Path) -> int:
    """What Container Insights publishes for the replayed node, hour by hour, from the same
    samples the exporter read: ``node_gpu_power_watt`` per GPU and, for the pod that holds each
    GPU, ``pod_gpu_utilization`` and ``pod_gpu_power_draw`` (a lost GPU answers nothing, so
    nothing after it is lost; a GPU no pod holds has no pod series), and the node's
    ``node_gpu_limit``, its instance type's GPUs, once a minute while the node reports (the
    week's nodes': week.py ``capacity_data``). Without them the GPU analyzer sees the node's
    GPUs held by no pod while the week's other nodes have Container Insights data. Returns the
    datapoints."""
    samples: dict[tuple[str, float], list[tuple[float, float]]] = defaultdict(list)
    for line in emf_path.read_text(encoding="utf-8").splitlines():
        document = json.loads(line)
        watts = document.get(str(GpuMetric.POWER_DRAW))
        if watts is None or document.get(DIM_NODE) != NODE:
            continue
        hour = document["_aws"]["Timestamp"] / 1000 // 3600 * 3600
        utilization = float(document.get(str(GpuMetric.UTILIZATION), 0.0))
        samples[(str(document[DIM_GPU_INDEX]), hour)].append((float(watts), utilization))
    data: list[dict[str, Any]] = []
    minutes: dict[float, int] = defaultdict(int)
    for (gpu, hour), values in sorted(samples.items()):
        minutes[hour] = max(minutes[hour], len(values))
        device = ci.gpu_device(int(gpu))
        node_dims = ci.node_gpu_dimensions(
            cluster, NODE, REPLAYED.instance_id, REPLAYED.instance_type.name, device
        )
        watts = [w for w, _ in values]
        data.append(statistic_set(CI_NODE_GPU_POWER_METRIC, node_dims, hour, watts))
        pod = replay_pod(int(gpu))
        if pod is None:
            continue
        pod_dims = ci.pod_gpu_dimensions(cluster, pod, device)
        data += [
            statistic_set(CI_POD_GPU_POWER_METRIC, pod_dims, hour, watts),
            statistic_set(
                CI_POD_GPU_UTILIZATION_METRIC, pod_dims, hour, [u for _, u in values], "Percent"
            ),
        ]
    limit = ci.node_dimensions(cluster, NODE, REPLAYED.instance_id)
    gpus = float(REPLAYED.instance_type.gpu_count)
    data += [
        statistic_set(CI_NODE_GPU_LIMIT_METRIC, limit, hour, [gpus] * count)
        for hour, count in sorted(minutes.items())
    ]
    for first in range(0, len(data), 1000):
        cloudwatch.put_metric_data(
            Namespace=NAMESPACE_CONTAINER_INSIGHTS, MetricData=data[first : first + 1000]
        )
    return len(data)
