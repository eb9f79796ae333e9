"""The demo's week: seven days of a small GPU fleet, hour by hour, on three nodes and three
teams, then the training analyzer's real handler run after each day: each run attributes the
whole UTC day before it, so the run at the midnight after Monday writes Monday's table, and
the week's Sunday is closed by the analyzer's Monday run (cli/demo/command.py, after the exporter's
replay, whose node it then counts). The weekly report has seven daily GPU-hour tables.

What each GPU does, every hour of the week:

- ``vision`` runs ``resnet-healthy`` on the two GPUs of one node: held and working (88% of
  the power limit, 86% SM activity), no waste;
- ``nlp`` runs ``bert-data-bound`` on the two GPUs of another: it trains all week, but its
  ranks wait on storage 40% of each step, so the GPUs draw 22% of their limit — under the
  low-power threshold, yet held and working: its emitter reports steps in every hour, and what
  the waiting costs is its data-bound finding's to price;
- ``research`` keeps a notebook (``jupyter-alice-0``) on one GPU of the third node: working
  in the day (09:00-18:00 UTC), idle (6%) and still held overnight; and a CronJob
  (``nightly-eval``) evaluates the day's checkpoint on its second GPU from 02:00 to 03:00 UTC
  (75%);
- the third node's GPU 2, which no pod holds, fails on the fifth day (XID 79, then
  ``gpu_healthy`` 0 and nothing else, as a lost GPU publishes);
- the teams run their other jobs on their nodes' spare GPUs (``SPARE_GPUS``): the training
  jobs of cli/demo/training.py at noon on each day and in the week's last hours, the failing
  jobs of cli/demo/failures.py until they fail; a pod holds its GPU working (``SPARE_POWER``)
  for the minutes its run lasts, idle and held by none the rest of the hour
  (cli/demo/spare_gpus.py places them on the plan);
- every other GPU of the three p5.48xlarge (eight each) is held by no pod all week: it reports
  idle (5% of its limit, no SM activity), and is the funnel's capacity no pod asked for.

The pods are the realistic cluster model's (cli/demo/realistic/pods.py), named as their
controllers name them, with the dimensions Container Insights gives them
(cli/demo/realistic/container_insights.py): ``vision``'s job is an Indexed Job, whose pods
(``resnet-healthy-0-<5>``, ``resnet-healthy-1-<5>``) Container Insights names by the Job
(PodName ``resnet-healthy``); ``nlp``'s is a PyTorchJob (``bert-data-bound-master-0`` and
``-worker-0``, PodName their own names); the notebook is a StatefulSet's pod; each night's
CronJob run is a Job ``nightly-eval-<minute>`` whose pod carries that Job's name as PodName.
The two training jobs run ``emitter.training`` in their pods (cli/demo/training.py), which
reports the pod's own name: the GPU analyzer attributes their GPU-hours to the job exactly,
and reads the hours they stepped in (``job_hours``).
The notebook and the CronJob run no emitter: their jobs come from their pods' names and
controllers.

``LAST_WEEK`` is the week before, as its own run of the pipeline saw it (cli/demo/last_week.py):
its jobs ran no emitter (their jobs inferred, their hours classed by power: ``nlp``'s GPUs held
without work), ``nlp`` started its job on the fourth day, an idle culler stopped the notebook
overnight until the sixth day (the pod ended: its GPU not held), and the failing GPU was still
healthy.

Written as CloudWatch stores an hour of one-minute samples (a statistic set: 60 samples), for
the exporter's per-GPU and cluster series and Container Insights' ``pod_gpu_*`` (power,
utilization, GPU memory used and total: ``MEMORY_GIB``) and ``node_gpu_*`` series: one
datapoint per series and hour (``WeekSeeder.datapoints`` counts them), which keeps moto's
GetMetricData (a scan of every stored point per query and period) to seconds.
"""

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from cli.demo.datums import statistic_set
from cli.demo.realistic import container_insights as ci
from cli.demo.realistic import nodes as ec2
from cli.demo.realistic import pods as k8s
from cli.demo.storage import END
from gpu_insights_agent.contract.metrics import (
    CI_NODE_GPU_LIMIT_METRIC,
    CI_NODE_GPU_POWER_METRIC,
    CI_POD_GPU_MEMORY_TOTAL_METRIC,
    CI_POD_GPU_MEMORY_USED_METRIC,
    CI_POD_GPU_POWER_METRIC,
    CI_POD_GPU_UTILIZATION_METRIC,
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_NODE,
    DIM_SHARD,
    DIM_XID_CODE,
    NAMESPACE_CONTAINER_INSIGHTS,
    NAMESPACE_GPU,
    GpuMetric,
    alarm_shard,
    gpu_schema,
)
from gpu_insights_agent.exporter.simulated_trace import SimulatedGpu

DAYS: Final = 7
HOURS: Final = DAYS * 24
#: The week's simulated hours are its ISO week's, Monday 00:00 to Monday 00:00 UTC (the demo's
#: "now", ``END``, is its last hour): the daily GPU-hour attribution covers whole UTC days.
START: Final = END + 3600 - HOURS * 3600
POWER_LIMIT_W: Final = 700.0
SAMPLES: Final = 60
#: The hour (from the week's start) the failing GPU is lost.
LOST_AT_HOUR: Final = 4 * 24 + 14
#: The teams' workloads, their pods as their controllers name them.
VISION_JOB: Final = k8s.job_pods("vision", "resnet-healthy", 2, indexed=True)
NLP_JOB: Final = k8s.pytorchjob_pods("nlp", "bert-data-bound", 1)
NOTEBOOK: Final = k8s.notebook_pod("research", "jupyter-alice")
NIGHTLY: Final = "nightly-eval"
#: Its run's hour of the day (UTC), each night.
NIGHTLY_HOUR: Final = 2


def _node(ip: str, instance_id: str, nodegroup: str) -> ec2.Node:
    """A node of a managed node group on the accelerated AMI (only the device plugin)."""
    labels = ec2.managed_node_group_labels(nodegroup, "ami-0c2d3e4f5a6b7c8d9")
    return ec2.node(ip, instance_id, ec2.P5_48XLARGE, "us-east-1a", "use1-az4", labels)


#: Where each team runs: node -> its namespace, its GPUs (every GPU of its instance type: the
#: exporter and DCGM report each GPU of the node, and the device plugin advertises them all as
#: its capacity) and the pod that holds each GPU all week. The GPUs no pod holds report idle
#: power with no pod, no allocated reading (the low-power alarm's is for held GPUs) and no pod
#: series: the funnel's capacity no pod asked for. Reported, as a real exporter reports them:
#: left out, the capacity of eight against fewer GPUs reporting would read as silence
#: (cdk/alarms/promql.py ``otlp_silent_query``), and the node's paid GPU-hours would be EC2's
#: without the GPUs that make them up on any dashboard.
NODES: Final = {
    node.name: (node, namespace, node.instance_type.gpu_count, held)
    for node, namespace, held in (
        (_node("10.0.2.21", "i-00000000000000001", "gpu-vision"), "vision",
         dict(enumerate(VISION_JOB))),
        (_node("10.0.2.22", "i-00000000000000002", "gpu-nlp"), "nlp",
         dict(enumerate(NLP_JOB))),
        (_node("10.0.2.23", "i-00000000000000003", "gpu-research"), "research",
         {0: NOTEBOOK}),
    )
}  # fmt: skip
GPUS: Final = tuple((node, gpu) for node, (_, _, count, _) in NODES.items() for gpu in range(count))
FAILING: Final = ("ip-10-0-2-23.ec2.internal", 2)
#: GPU memory used (GiB) by the pod holding a GPU, by namespace (the CronJob's runs: 12 GiB):
#: ``nlp``'s job fills 71 GiB of its H100s (near capacity: out-of-memory risk), ``vision``'s
#: 52 GiB (right-sized), the notebook 9 GiB (it would fit a MIG 1g.10gb), the nightly
#: evaluation 12 GiB (a 1g.20gb).
MEMORY_GIB: Final = {"vision": 52.0, "nlp": 71.0, "research": 9.0, NIGHTLY: 12.0}
#: An H100 80GB's framebuffer as DCGM reports it (81,559 MiB), in bytes as Container Insights
#: publishes it (contract.metrics ``CI_POD_GPU_MEMORY_TOTAL_METRIC``).
H100_MEMORY_BYTES: Final = 81_559 * 2**20
#: NVML's name of the p5's GPUs, which DCGM's series carry (``modelName``): the replayed
#: exporter's simulated GPU's.
H100_NAME: Final = SimulatedGpu.name
#: The research node's GPU the CronJob's runs take.
NIGHTLY_GPU: Final = ("ip-10-0-2-23.ec2.internal", 1)
#: The training jobs the teams run through ``emitter.training`` (cli/demo/training.py): their
#: ranks' pods (rank N in the Nth) and their node.
JOB_PODS: Final = {"resnet-healthy": VISION_JOB, "bert-data-bound": NLP_JOB}
JOB_NODES: Final = {
    job: node
    for job, pods in JOB_PODS.items()
    for node, (_, _, _, held) in NODES.items()
    if pods[0] in held.values()
}
WEEK: Final = 7 * 86_400
#: Where each job outside the teams' own runs on the teams' nodes' spare GPUs (rank N on the
#: Nth GPU), a team's on its team's node and the one the nlp node has no room for beside
#: the vision team's: the GPUs the funnel, the lemon score and the failures read as every
#: other GPU. Each shares its node with a team's week-long job: the training analyzer judges
#: each job's GPUs by its own pods' (Container Insights' pod series), never its node's mean.
SPARE_GPUS: Final = {
    "llama-slow-checkpoint": ("ip-10-0-2-22.ec2.internal", (2, 3)),
    "gpt-regressing": ("ip-10-0-2-22.ec2.internal", (4, 5)),
    "mixtral-nccl-timeout": ("ip-10-0-2-22.ec2.internal", (6, 7)),
    "vit-flaky": ("ip-10-0-2-21.ec2.internal", (2, 3)),
    "sdxl-cuda-oom": ("ip-10-0-2-21.ec2.internal", (4, 5)),
    "tokenize-oom-killed": ("ip-10-0-2-21.ec2.internal", (6, 7)),
}
#: A spare-GPU job's GPU while its pod holds it (power, SM activity): working, over the
#: training analyzer's targets, as the vision team's own training.
SPARE_POWER: Final = (85.0, 85.0)
#: An idle GPU: its power (percent of the limit) and SM activity.
IDLE_POWER: Final = (5.0, 0.0)
#: GPU memory a spare-GPU job uses (GiB): no MIG profile of the H100 holds it, and it is far
#: from out of memory.
SPARE_MEMORY_GIB: Final = 60.0


@dataclass(frozen=True)
class SpareHold:
    """One pod of a job on a spare GPU: it holds ``gpu`` of ``node`` from ``start`` to ``end``
    (epoch seconds)."""

    pod: k8s.Pod
    node: str
    gpu: int
    start: float
    end: float


@dataclass(frozen=True)
class WeekPlan:
    """How the teams behaved in one week (hours from its ``start``)."""

    start: float
    #: ``nlp``'s job holds its GPUs from this hour.
    nlp_from_hour: int = 0
    #: Before this hour, an idle culler stops the notebook outside working hours.
    notebook_overnight_from_hour: int = 0
    #: The hour the failing GPU is lost (None: healthy all week).
    lost_at_hour: int | None = LOST_AT_HOUR
    #: The pods of the jobs on spare GPUs (cli/demo/spare_gpus.py), none by default.
    spare: tuple[SpareHold, ...] = ()


THIS_WEEK: Final = WeekPlan(START)
LAST_WEEK: Final = WeekPlan(
    START - WEEK, nlp_from_hour=3 * 24, notebook_overnight_from_hour=5 * 24, lost_at_hour=None
)


@dataclass(frozen=True)
class GpuHourSample:
    node: str
    gpu: int
    hour: int
    #: Mean power as a percent of the limit, mean SM activity; None where the GPU is lost.
    power: float | None
    sm: float | None
    healthy: bool
    pod: k8s.Pod | None = None
    #: The minutes of the hour the pod held the GPU at ``power`` and ``sm``: the rest of the
    #: hour it was idle and held by none (a spare-GPU job's run that starts or ends in it).
    minutes: int = SAMPLES

    @property
    def gpu_power(self) -> float | None:
        """The GPU's mean power over the hour (percent of the limit), what the exporter and
        ``node_gpu_*`` report; None where it is lost."""
        return None if self.power is None else self._mean(self.power, IDLE_POWER[0])

    @property
    def gpu_sm(self) -> float | None:
        """The GPU's mean SM activity over the hour."""
        return None if self.sm is None else self._mean(self.sm, IDLE_POWER[1])

    def _mean(self, held: float, idle: float) -> float:
        return (held * self.minutes + idle * (SAMPLES - self.minutes)) / SAMPLES


def _spare(node: str, gpu: int, start: float, plan: WeekPlan) -> tuple[k8s.Pod, int] | None:
    """The spare-GPU pod holding ``gpu`` of ``node`` in the hour from ``start``, and its
    minutes in the hour; None where none does."""
    for hold in plan.spare:
        if (hold.node, hold.gpu) != (node, gpu):
            continue
        seconds = min(hold.end, start + 3600) - max(hold.start, start)
        if seconds > 0:
            return hold.pod, round(seconds / 60)
    return None


def _behaviour(node: str, gpu: int, hour: int, plan: WeekPlan = THIS_WEEK) -> GpuHourSample:
    _, namespace, _, held = NODES[node]
    if (node, gpu) == FAILING and plan.lost_at_hour is not None and hour >= plan.lost_at_hour:
        return GpuHourSample(node, gpu, hour, None, None, healthy=False)
    start = plan.start + hour * 3600
    clock = datetime.fromtimestamp(start, UTC).hour
    if (node, gpu) == NIGHTLY_GPU and clock == NIGHTLY_HOUR:  # the CronJob's run that night
        (run,) = k8s.cronjob_pods(namespace, NIGHTLY, scheduled=start)
        return GpuHourSample(node, gpu, hour, 75.0, 60.0, healthy=True, pod=run)
    spare = _spare(node, gpu, start, plan)
    if spare is not None:
        pod, minutes = spare
        return GpuHourSample(node, gpu, hour, *SPARE_POWER, healthy=True, pod=pod, minutes=minutes)
    culled = namespace == "research" and not 9 <= clock < 18
    if (
        gpu not in held
        or (namespace == "nlp" and hour < plan.nlp_from_hour)
        or (culled and hour < plan.notebook_overnight_from_hour)
    ):
        return GpuHourSample(node, gpu, hour, *IDLE_POWER, healthy=True)
    if namespace == "vision":
        power, sm = 88.0, 86.0
    elif namespace == "nlp":
        power, sm = 22.0, 8.0
    else:  # the notebook: working in the day, idle and still held overnight
        power, sm = (6.0, 0.0) if culled else (55.0, 35.0)
    return GpuHourSample(node, gpu, hour, power, sm, healthy=True, pod=held[gpu])


def job_hours(job: str, plan: WeekPlan = THIS_WEEK) -> list[int]:
    """The hours (from the week's start) in which the job's pods hold their GPUs: the hours
    its ranks step in, as the job trains whenever it holds them."""
    node = JOB_NODES[job]
    gpus = range(NODES[node][2])
    return [h for h in range(HOURS) if any(_behaviour(node, g, h, plan).pod for g in gpus)]


def _datum(
    name: str,
    dims: dict[str, str],
    hour: int,
    values: list[float],
    unit: str = "None",
    samples: int = SAMPLES,
    start: float = START,
    counts: Sequence[int] | None = None,
) -> dict[str, Any]:
    """Hour ``hour`` of the week: ``samples`` samples of each value (or its own ``counts``)."""
    return statistic_set(
        name, dims, start + hour * 3600, values, unit, repeat=samples, counts=counts
    )


def _exporter_values(s: GpuHourSample) -> dict[GpuMetric, tuple[float, int]]:
    """What the exporter publishes for a GPU that hour, each value with its samples (a lost
    GPU: only gpu_healthy): the GPU's means over the hour, and the allocated reading in the
    minutes a pod held it (its process on the GPU)."""
    metrics = {GpuMetric.HEALTHY: (1.0 if s.healthy else 0.0, SAMPLES)}
    if s.gpu_power is not None and s.gpu_sm is not None:
        metrics[GpuMetric.POWER_UTILIZATION] = (s.gpu_power, SAMPLES)
        metrics[GpuMetric.SM_ACTIVE] = (s.gpu_sm, SAMPLES)
        if s.pod is not None and s.power is not None:
            metrics[GpuMetric.ALLOCATED_POWER_UTILIZATION] = (s.power, s.minutes)
    return metrics


def exporter_hour_data(
    cluster: str, hour: int, samples: list[GpuHourSample], start: float
) -> list[dict[str, Any]]:
    """Both of the exporter's dimension sets: per GPU, and cluster-wide (every GPU's samples
    of the hour in one statistic set, as CloudWatch aggregates them)."""
    data = []
    cluster_wide: dict[GpuMetric, list[tuple[float, int]]] = {}
    for s in samples:
        per_gpu = {DIM_CLUSTER: cluster, DIM_NODE: s.node, DIM_GPU_INDEX: str(s.gpu)}
        for metric, (value, count) in _exporter_values(s).items():
            dims = dict(per_gpu)
            if DIM_SHARD in gpu_schema(metric):  # as the exporter writes the alarm metrics
                dims[DIM_SHARD] = alarm_shard(s.node, s.gpu, 1)
            data.append(_datum(str(metric), dims, hour, [value], samples=count, start=start))
            cluster_wide.setdefault(metric, []).append((value, count))
    data += [
        _datum(
            str(metric),
            {DIM_CLUSTER: cluster},
            hour,
            [v for v, _ in values],
            start=start,
            counts=[c for _, c in values],
        )
        for metric, values in cluster_wide.items()
    ]
    return data


def memory_used_bytes(s: GpuHourSample) -> float:
    """The GPU memory the pod holding the GPU uses in the hour (``MEMORY_GIB``; a spare-GPU
    job's ``SPARE_MEMORY_GIB``), 0 if none."""
    if s.pod is None:
        return 0.0
    if s.pod.workload == NIGHTLY:
        return MEMORY_GIB[NIGHTLY] * 2**30
    if s.pod in NODES[s.node][3].values():
        return MEMORY_GIB[NODES[s.node][1]] * 2**30
    return SPARE_MEMORY_GIB * 2**30


def _container_insights_data(
    cluster: str, s: GpuHourSample, start: float
) -> Iterator[dict[str, Any]]:
    if s.gpu_power is None or s.power is None:
        return
    device = ci.gpu_device(s.gpu)
    instance = NODES[s.node][0]
    node = ci.node_gpu_dimensions(
        cluster, s.node, instance.instance_id, instance.instance_type.name, device
    )
    gpu_watts = s.gpu_power / 100 * POWER_LIMIT_W
    yield _datum(CI_NODE_GPU_POWER_METRIC, node, s.hour, [gpu_watts], start=start)
    if s.pod is None:
        return
    # The pod's series in the minutes it held the GPU, at its own readings.
    pod = ci.pod_gpu_dimensions(cluster, s.pod, device)
    watts, minutes = s.power / 100 * POWER_LIMIT_W, s.minutes
    for name, value, unit in (
        (CI_POD_GPU_UTILIZATION_METRIC, s.sm or 0.0, "Percent"),
        (CI_POD_GPU_POWER_METRIC, watts, "None"),
        (CI_POD_GPU_MEMORY_USED_METRIC, memory_used_bytes(s), "Bytes"),
        (CI_POD_GPU_MEMORY_TOTAL_METRIC, H100_MEMORY_BYTES, "Bytes"),
    ):
        yield _datum(name, pod, s.hour, [value], unit, samples=minutes, start=start)


def capacity_data(cluster: str, hour: int, start: float) -> list[dict[str, Any]]:
    """Each node's ``node_gpu_limit`` in the hour, whatever its pods hold: its instance type's
    GPUs ("The total number of GPU(s) available on the node", Amazon CloudWatch User Guide,
    Container-Insights-metrics-EKS.html: the node's allocatable ``nvidia.com/gpu``, every GPU
    the device plugin advertises), what EC2 bills."""
    return [
        _datum(
            CI_NODE_GPU_LIMIT_METRIC,
            ci.node_dimensions(cluster, name, node.instance_id),
            hour,
            [float(node.instance_type.gpu_count)],
            start=start,
        )
        for name, (node, _, _, _) in NODES.items()
    ]


@dataclass
class WeekSeeder:
    """Iterated, it writes the week a day at a time and yields, after each day but the last,
    the time of the training analyzer's daily run that attributes that day (the midnight
    after it); the last day is written when the iteration ends, before the week's final run
    (which attributes the day before it: the run after midnight closes the last day). A day at a
    time because moto's ListMetrics compares every stored point with every other of its
    metric name: each run then lists only the days before it."""

    cloudwatch: Any
    cluster: str
    plan: WeekPlan = THIS_WEEK
    datapoints: int = 0
    #: The daily runs it yields, after each of the week's first days: the days after them are
    #: attributed by the caller's own runs, each day once (a second run over a day would
    #: publish its waste metrics twice).
    daily_runs: int = DAYS - 1
    #: Whether Classic Container Insights publishes (``pod_gpu_*``, ``node_gpu_*``): not in
    #: OTel mode, whose DCGM series cli/demo/otel.py serves by PromQL.
    container_insights: bool = True
    #: Whether the exporter publishes to ``GpuInsights`` (EMF): not with its OTLP sink, whose
    #: series cli/demo/otel.py serves by PromQL (``exporter_data`` through its encoder).
    exporter: bool = True

    def __iter__(self) -> Iterator[float]:
        for day in range(DAYS):
            self._put(day)
            if day < self.daily_runs:
                yield self.plan.start + (day + 1) * 86_400

    def _put(self, day: int) -> None:
        hours = range(day * 24, (day + 1) * 24)
        exporter = exporter_data(self.cluster, self.plan, hours) if self.exporter else []
        insights: list[dict[str, Any]] = []
        for hour in hours if self.container_insights else ():
            insights += capacity_data(self.cluster, hour, self.plan.start)
            for node, gpu in GPUS:
                sample = _behaviour(node, gpu, hour, self.plan)
                insights += _container_insights_data(self.cluster, sample, self.plan.start)
        for namespace, data in (
            (NAMESPACE_GPU, exporter),
            (NAMESPACE_CONTAINER_INSIGHTS, insights),
        ):
            for first in range(0, len(data), 1000):
                self.cloudwatch.put_metric_data(
                    Namespace=namespace, MetricData=data[first : first + 1000]
                )
        self.datapoints += len(exporter) + len(insights)


def exporter_data(cluster: str, plan: WeekPlan, hours: Iterable[int]) -> list[dict[str, Any]]:
    """What the exporter publishes in these hours of the week, as PutMetricData statistic sets:
    every GPU's readings, cluster-wide too, and the failing GPU's XID 79 in its lost hour."""
    data: list[dict[str, Any]] = []
    node, gpu = FAILING
    for hour in hours:
        samples = [_behaviour(n, g, hour, plan) for n, g in GPUS]
        data += exporter_hour_data(cluster, hour, samples, plan.start)
        if hour == plan.lost_at_hour:
            data.append(
                _datum(
                    str(GpuMetric.XID_ERRORS),
                    {
                        DIM_CLUSTER: cluster,
                        DIM_NODE: node,
                        DIM_GPU_INDEX: str(gpu),
                        DIM_XID_CODE: "79",
                    },
                    hour,
                    [1.0],
                    "Count",
                    samples=1,  # one event
                    start=plan.start,
                )
            )
    return data
