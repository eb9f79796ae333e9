"""The demo in OTel Container Insights mode: the same weeks, as the add-on sends them in that mode
(DCGM's series, every 30 seconds, labelled with the pod and node, cli/demo/realistic/otel.py),
served by a local Prometheus (cli/demo/promql.py) that answers the training analyzer's PromQL
at the Region's monitoring host, while moto answers its CloudWatch reads.

What the OTel run shows, compared, not assumed: every pod's hours join its node and GPU
exactly (by the node label and DCGM's ``gpu`` index: no power matching), and the findings,
the waste table and the report equal the Classic run's on the same weeks.

The GPU-hour attribution, the GPU memory right-sizing and the dashboards' PromQL widgets (the
bodies the Alarms stack deploys in OTel mode, cli/demo/dashboards.py) read OTel mode's series
from that Prometheus; the OTel run writes none of Classic's Container Insights series to
CloudWatch, so no reader can fall back on them.
"""

import json
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Final

from cli.demo.exporter import NODE as REPLAY_NODE
from cli.demo.exporter import REPLAY_PODS, REPLAYED, replay_pod, replay_window
from cli.demo.kube_state import capacity_labels
from cli.demo.otlp import statistic_set_samples
from cli.demo.promql import (
    LocalPromQL,
    Sample,
    answering,
    create_blocks,
    serve_blocks,
    write_openmetrics,
)
from cli.demo.realistic import nodes as ec2
from cli.demo.realistic import otel
from cli.demo.realistic.serving import GPU_OF
from cli.demo.realistic.serving import NODE as SERVING_NODE
from cli.demo.week import (
    DAYS,
    FAILING,
    GPUS,
    H100_MEMORY_BYTES,
    H100_NAME,
    HOURS,
    IDLE_POWER,
    NODES,
    POWER_LIMIT_W,
    SAMPLES,
    THIS_WEEK,
    WeekPlan,
    _behaviour,
    exporter_data,
    memory_used_bytes,
)
from dashboards.sources import reading
from gpu_insights_agent.contract.metrics import (
    DCGM_GPU_METRICS,
    DIM_GPU_INDEX,
    DIM_NODE,
    GpuMetric,
)
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.shared.dcgm import DCGM_FB_TOTAL, DCGM_FB_USED, DCGM_POWER, DCGM_UTIL, MIB
from lambdas.shared.kube_state import KSM_CAPACITY
from lambdas.shared.promql import PromQLClient
from lambdas.training_analyzer.gpu_hours.attribution import UNPLACED_NODE
from lambdas.training_analyzer.gpu_hours.otel import read_holds

#: Scrapes land mid-interval, never on an hour's edge (the scraper's phase is its own).
PHASE_S: Final = 15.0
#: The demo's ``otelContainerInsights.metricResolution``: "60s" (the chart takes any "<N>s",
#: "30s" by default). A pod's share of an hour is its samples over a full hour's; at the
#: exporter's own 60 s cycle the replayed node's lost GPU stops at the same sample in both
#: modes (at 300 s its last hour read 8/12 where the exporter's read 36/60), and half the
#: default's samples keep Prometheus's block import of the two weeks short.
DEMO_INTERVAL_S: Final = 60
#: The week's GPU nodes.
WEEK_NODES: Final = tuple(node for node, _, _, _ in NODES.values())
#: The readings every sample carries (the GPU analyzer's), whatever the document holds.
PAIRED: Final = frozenset({GpuMetric.UTILIZATION, GpuMetric.POWER_DRAW})


def week_samples(
    cluster: str,
    plan: WeekPlan = THIS_WEEK,
    hours: int = HOURS,
    interval: int = DEMO_INTERVAL_S,
) -> Iterator[Sample]:
    """Each GPU's DCGM series every ``interval`` (the add-on's
    ``otelContainerInsights.metricResolution``, "30s" by default), the pod's labels on the
    samples of the hours a pod holds the GPU; a lost GPU sends nothing. A share of an hour is
    a count of samples over a full hour's, whatever the interval. The framebuffer used and
    its size (MiB) are the Classic run's ``pod_gpu_memory_*`` (``memory_used_bytes``)."""
    per_hour = 3600 // interval
    for hour in range(hours):
        for node, gpu in GPUS:
            s = _behaviour(node, gpu, hour, plan)
            if s.power is None:
                continue
            held = otel.dcgm_promql_labels(cluster, node, gpu, s.pod, model=H100_NAME)
            idle = otel.dcgm_promql_labels(cluster, node, gpu, None, model=H100_NAME)
            start = plan.start + hour * 3600 + PHASE_S
            used = memory_used_bytes(s) / MIB
            # The pod's minutes open the hour (every run on a spare GPU starts on an hour).
            mine = s.minutes * per_hour // SAMPLES
            for i in range(per_hour):
                at = start + i * interval
                labels, power, sm = (held, s.power, s.sm) if i < mine else (idle, *IDLE_POWER)
                yield DCGM_UTIL, labels, at, sm or 0.0
                yield DCGM_POWER, labels, at, power / 100 * POWER_LIMIT_W
                if s.pod is not None and i < mine:  # as Classic's pod_gpu_memory_*: held only
                    yield DCGM_FB_USED, labels, at, used
                    yield DCGM_FB_TOTAL, labels, at, H100_MEMORY_BYTES / MIB


def capacity_week_samples(
    cluster: str,
    plan: WeekPlan = THIS_WEEK,
    hours: int = HOURS,
    interval: int = DEMO_INTERVAL_S,
    nodes: Sequence[ec2.Node] = WEEK_NODES,
) -> Iterator[Sample]:
    """Each of the week's nodes' GPU capacity every ``interval``, whatever its pods hold
    (``capacity_samples``), all week."""
    return capacity_samples(cluster, nodes, plan.start, plan.start + hours * 3600, interval)


def capacity_samples(
    cluster: str,
    nodes: Sequence[ec2.Node],
    start: float,
    end: float,
    interval: int = DEMO_INTERVAL_S,
) -> Iterator[Sample]:
    """Each node's ``nvidia.com/gpu`` capacity every ``interval`` from ``start`` (an hour's
    start) to ``end``: its instance type's GPUs, as Classic's ``node_gpu_limit`` (week.py
    ``capacity_data``). The device plugin advertises every GPU of the node ("Expose the
    number of GPUs on each nodes of your cluster", NVIDIA/k8s-device-plugin README), so Kube
    State Metrics' capacity is the instance type's count whatever the pods hold."""
    for hour in range(int(start), int(end), 3600):
        for node in nodes:
            labels = capacity_labels(cluster, node)
            for i in range(3600 // interval):
                at = hour + PHASE_S + i * interval
                if at < end:
                    yield KSM_CAPACITY, labels, at, float(node.instance_type.gpu_count)


def replay_capacity_samples(cluster: str) -> Iterator[Sample]:
    """The replayed node's capacity while its exporter's replay runs (the hours the node ran
    in the demo's world, as Classic's run publishes its ``node_gpu_limit``)."""
    return capacity_samples(cluster, (REPLAYED,), *replay_window())


def exporter_week_samples(cluster: str, plan: WeekPlan = THIS_WEEK) -> Iterator[Sample]:
    """The exporter's week over OTLP (exporter_sink=otlp): what it publishes by EMF in the
    Classic run (week.py ``exporter_data``), each cycle's document through its OTLP sink's
    encoder (cli/demo/otlp.py), one sample per GPU and minute as the exporter's cycle."""
    return statistic_set_samples(exporter_data(cluster, plan, range(HOURS)), start=plan.start)


def replay_samples(
    cluster: str, emf_path: Path, interval: int = DEMO_INTERVAL_S
) -> Iterator[Sample]:
    """The replayed node's DCGM series from the samples its exporter read (the EMF it wrote):
    each GPU's power and utilization, and the other readings the add-on's DCGM sends that the
    document carries (framebuffer memory in MiB, temperature: ``DCGM_GPU_METRICS``, the same
    readings the Classic run's ``node_gpu_*`` stand in for), as DCGM reports them at each
    scrape in the exporter's cycle, labelled with the pod that holds it; a lost GPU answers
    nothing. The exporter reads no framebuffer size, so none is sent: the replayed pods'
    memory is judged in neither mode (Classic's run publishes no ``pod_gpu_memory_*`` of them)."""
    for line in emf_path.read_text(encoding="utf-8").splitlines():
        document = json.loads(line)
        watts = document.get(str(GpuMetric.POWER_DRAW))
        if watts is None or document.get(DIM_NODE) != REPLAY_NODE:
            continue
        gpu = int(document[DIM_GPU_INDEX])
        labels = otel.dcgm_promql_labels(cluster, REPLAY_NODE, gpu, replay_pod(gpu))
        cycle_start = document["_aws"]["Timestamp"] / 1000
        utilization = float(document.get(str(GpuMetric.UTILIZATION), 0.0))
        others = [
            (source.name, float(document[str(metric)]) / source.scale)
            for metric in DCGM_GPU_METRICS
            if metric not in PAIRED and str(metric) in document
            for source in [reading(metric, ContainerInsightsMode.OTEL)]
        ]
        for at in _scrapes(cycle_start, interval):
            yield DCGM_UTIL, labels, at, utilization
            yield DCGM_POWER, labels, at, float(watts)
            for name, value in others:
                yield name, labels, at, value


def _scrapes(cycle_start: float, interval: int, cycle_s: float = 60.0) -> Iterator[float]:
    """The scrapes (every ``interval`` from the scraper's phase) in the exporter's cycle."""
    at = (cycle_start - PHASE_S) // interval * interval + PHASE_S
    at += interval if at < cycle_start else 0
    while at < cycle_start + cycle_s:
        yield at
        at += interval


class OtelEngine:
    """Prometheus holding the weeks' DCGM series, answering the Region's PromQL host; started
    again (a new engine over the blocks so far and the new ones) when the replayed node's
    series are added. Each load turns only its own samples into blocks."""

    def __init__(self, folder: Path, region: str, cluster: str, stack: ExitStack) -> None:
        self.folder, self.region, self.cluster, self.stack = folder, region, cluster, stack
        self.blocks: list[Path] = []
        self.local: LocalPromQL | None = None
        self.lines = 0
        #: The samples each load held, by its name.
        self.loaded: dict[str, int] = {}

    def load(self, name: str, samples: Iterator[Sample], *, alone: bool = False) -> None:
        """``samples`` added to the engine's series; ``alone``: in place of them (a new week
        run in a moto of its own, which holds none of the week before's series)."""
        path = self.folder / f"{name}.om"
        self.loaded[name] = write_openmetrics(path, samples)
        self.lines += self.loaded[name]
        blocks = self.folder / f"blocks-{name}"
        create_blocks(path, blocks)
        self.blocks = [*([] if alone else self.blocks), blocks]
        data = self.folder / f"engine-{name}"
        data.mkdir(parents=True)
        for folder in self.blocks:  # hard links: the engines only read the blocks
            for block in folder.iterdir():
                if block.is_dir() and block.name != "wal":
                    shutil.copytree(block, data / block.name, copy_function=os.link)
        url = self.stack.enter_context(serve_blocks(data))
        if self.local is None:
            self.local = self.stack.enter_context(answering(self.region, url))
        else:
            self.local.url = url


def joins(promql: PromQLClient, cluster: str, plan: WeekPlan = THIS_WEEK) -> tuple[int, int, int]:
    """(pods, pod-hours, those placed on another node or GPU than the week put them on, or
    unplaced) of the week's GPU analyzer reads in OTel mode: the week's training nodes (and
    ``plan``'s spare-GPU pods), the replayed node and, where the run loaded it, the serving
    week's node."""
    start, end = plan.start, plan.start + DAYS * 86_400
    holds, _ = read_holds(promql, cluster, start=start, end=end, gpu_hours=())
    where = {
        (pod.namespace, pod.name): (node, str(gpu))
        for node, (_, _, _, held) in NODES.items()
        for gpu, pod in held.items()
    } | {(pod.namespace, pod.name): (REPLAY_NODE, str(gpu)) for gpu, pod in enumerate(REPLAY_PODS)}
    # The jobs on the teams' spare GPUs (week.py ``SPARE_GPUS``).
    where |= {(h.pod.namespace, h.pod.name): (h.node, str(h.gpu)) for h in plan.spare}
    # The serving week's replicas (cli/demo/serving.py), one GPU each on the serving node.
    where |= {(p.namespace, p.name): (SERVING_NODE.name, str(gpu)) for p, gpu in GPU_OF.items()}
    nightly = (FAILING[0], "1")  # the CronJob's runs, on the research node's second GPU
    wrong = sum(
        1
        for h in holds
        if h.gpu.node == UNPLACED_NODE
        or (h.gpu.node, h.gpu.gpu) != where.get((h.namespace, h.pod), nightly)
    )
    return len({(h.namespace, h.pod) for h in holds}), len(holds), wrong
