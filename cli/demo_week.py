"""The demo's week: seven days of a small GPU fleet, hour by hour, on three nodes and three
teams, then the training analyzer's real handler run for each day before the last (the last
day is the training step's run), so the weekly report has seven daily GPU-hour tables.

What each GPU does, every hour of the week:

- ``vision`` runs ``resnet-healthy`` on the four GPUs of one node: held and working (88% of
  the power limit), no waste;
- ``nlp`` runs ``bert-data-bound`` on the four GPUs of another: held all week, but its ranks
  wait on storage, so the GPUs draw 22% of their limit — held without work;
- ``research`` keeps a notebook (``jupyter-alice-0``) on one GPU of the third node: working
  in the day (09:00-18:00 UTC), idle (6%) and still held overnight;
- the third node's last GPU fails on the fifth day (XID 79, then ``gpu_healthy`` 0 and nothing
  else, as a lost GPU publishes).

Written as CloudWatch stores an hour of one-minute samples (a statistic set: 60 samples), for
the exporter's per-GPU and cluster series and Container Insights' ``pod_gpu_*`` and
``node_gpu_*`` series: about 20,000 datapoints, which keeps moto's GetMetricData (a scan of
every stored point per query and period) to seconds.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from cli.demo_storage import END
from contract.metrics import (
    CI_NODE_GPU_POWER_METRIC,
    CI_POD_GPU_POWER_METRIC,
    CI_POD_GPU_UTILIZATION_METRIC,
    DIM_CLUSTER,
    DIM_GPU_DEVICE,
    DIM_GPU_INDEX,
    DIM_JOB,
    DIM_NAMESPACE,
    DIM_NODE,
    DIM_POD_NAME,
    DIM_SHARD,
    DIM_XID_CODE,
    NAMESPACE_CONTAINER_INSIGHTS,
    NAMESPACE_GPU,
    NAMESPACE_TRAINING,
    GpuMetric,
    TrainingMetric,
    alarm_shard,
    gpu_schema,
)

DAYS: Final = 7
HOURS: Final = DAYS * 24
#: The week's simulated hours end at the demo's "now", where the training step's run is.
START: Final = END - HOURS * 3600
POWER_LIMIT_W: Final = 700.0
SAMPLES: Final = 60
#: The hour (from the week's start) the failing GPU is lost.
LOST_AT_HOUR: Final = 4 * 24 + 14
#: Where each team runs: node -> namespace, pod name pattern, its GPUs and those the team holds.
NODES: Final = {
    "ip-10-0-2-21.ec2.internal": ("vision", "resnet-healthy-worker-{gpu}", 2, (0, 1)),
    "ip-10-0-2-22.ec2.internal": ("nlp", "bert-data-bound-worker-{gpu}", 2, (0, 1)),
    "ip-10-0-2-23.ec2.internal": ("research", "jupyter-alice-{gpu}", 3, (0,)),
}
GPUS: Final = tuple((node, gpu) for node, (_, _, count, _) in NODES.items() for gpu in range(count))
FAILING: Final = ("ip-10-0-2-23.ec2.internal", 2)
#: The jobs of the week's teams (as the training step names them) and their samples a second
#: (a batch of 64 every 2 s, as there).
WEEK_JOBS: Final = ("resnet-healthy", "bert-data-bound")
THROUGHPUT: Final = 32.0


@dataclass(frozen=True)
class GpuHourSample:
    node: str
    gpu: int
    hour: int
    #: Mean power as a percent of the limit, mean SM activity; None where the GPU is lost.
    power: float | None
    sm: float | None
    healthy: bool
    namespace: str | None = None
    pod: str | None = None


def _behaviour(node: str, gpu: int, hour: int) -> GpuHourSample:
    namespace, pattern, _, held = NODES[node]
    if (node, gpu) == FAILING and hour >= LOST_AT_HOUR:
        return GpuHourSample(node, gpu, hour, None, None, healthy=False)
    if gpu not in held:
        return GpuHourSample(node, gpu, hour, 5.0, 0.0, healthy=True)
    pod = pattern.format(gpu=gpu - held[0])
    if namespace == "vision":
        power, sm = 88.0, 72.0
    elif namespace == "nlp":
        power, sm = 22.0, 8.0
    else:  # the notebook: working in the day, idle and still held overnight
        clock = datetime.fromtimestamp(START + hour * 3600, UTC).hour
        power, sm = (55.0, 35.0) if 9 <= clock < 18 else (6.0, 0.0)
    return GpuHourSample(node, gpu, hour, power, sm, healthy=True, namespace=namespace, pod=pod)


def _statistics(values: list[float], samples: int) -> dict[str, float]:
    """``samples`` samples of each of these values, as CloudWatch stores them in a statistic
    set."""
    return {
        "SampleCount": samples * len(values),
        "Sum": samples * sum(values),
        "Minimum": min(values),
        "Maximum": max(values),
    }


def _datum(
    name: str,
    dims: dict[str, str],
    hour: int,
    values: list[float],
    unit: str = "None",
    samples: int = SAMPLES,
) -> dict[str, Any]:
    return {
        "MetricName": name,
        "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
        "Timestamp": datetime.fromtimestamp(START + hour * 3600 + 1800, UTC),
        "StatisticValues": _statistics(values, samples),
        "Unit": unit,
    }


def _exporter_values(s: GpuHourSample) -> dict[GpuMetric, float]:
    """What the exporter publishes for a GPU that hour (a lost GPU: only gpu_healthy)."""
    metrics = {GpuMetric.HEALTHY: 1.0 if s.healthy else 0.0}
    if s.power is not None and s.sm is not None:
        metrics[GpuMetric.POWER_UTILIZATION] = s.power
        metrics[GpuMetric.SM_ACTIVE] = s.sm
        if s.pod is not None:
            metrics[GpuMetric.ALLOCATED_POWER_UTILIZATION] = s.power
    return metrics


def _exporter_data(cluster: str, hour: int, samples: list[GpuHourSample]) -> list[dict[str, Any]]:
    """Both of the exporter's dimension sets: per GPU, and cluster-wide (every GPU's samples
    of the hour in one statistic set, as CloudWatch aggregates them)."""
    data = []
    cluster_wide: dict[GpuMetric, list[float]] = {}
    for s in samples:
        per_gpu = {DIM_CLUSTER: cluster, DIM_NODE: s.node, DIM_GPU_INDEX: str(s.gpu)}
        for metric, value in _exporter_values(s).items():
            dims = dict(per_gpu)
            if DIM_SHARD in gpu_schema(metric):  # as the exporter writes the alarm metrics
                dims[DIM_SHARD] = alarm_shard(s.node, s.gpu, 1)
            data.append(_datum(str(metric), dims, hour, [value]))
            cluster_wide.setdefault(metric, []).append(value)
    data += [
        _datum(str(metric), {DIM_CLUSTER: cluster}, hour, values)
        for metric, values in cluster_wide.items()
    ]
    return data


def _container_insights_data(cluster: str, s: GpuHourSample) -> Iterator[dict[str, Any]]:
    if s.power is None:
        return
    device = f"nvidia{s.gpu}"
    watts = s.power / 100 * POWER_LIMIT_W
    yield _datum(
        CI_NODE_GPU_POWER_METRIC,
        {
            DIM_CLUSTER: cluster,
            DIM_GPU_DEVICE: device,
            "InstanceId": f"i-0{list(NODES).index(s.node) + 1:016d}",
            "InstanceType": "p5.48xlarge",
            DIM_NODE: s.node,
        },
        s.hour,
        [watts],
    )
    if s.pod is None or s.namespace is None:
        return
    pod = {
        DIM_CLUSTER: cluster,
        "FullPodName": s.pod,
        DIM_GPU_DEVICE: device,
        DIM_NAMESPACE: s.namespace,
        DIM_POD_NAME: s.pod,
    }
    yield _datum(CI_POD_GPU_UTILIZATION_METRIC, pod, s.hour, [s.sm or 0.0], "Percent")
    yield _datum(CI_POD_GPU_POWER_METRIC, pod, s.hour, [watts])


@dataclass
class WeekSeeder:
    """Iterated, it writes the week a day at a time and yields, after each day but the last,
    the time of the training analyzer's daily run that covers that day (its end);
    the last day is written when the iteration ends, before the demo's final run. A day at a
    time because moto's ListMetrics compares every stored point with every other of its
    metric name: each run then lists only the days before it."""

    cloudwatch: Any
    cluster: str
    datapoints: int = 0

    def __iter__(self) -> Iterator[float]:
        for day in range(DAYS):
            self._put(day)
            if day < DAYS - 1:
                yield START + (day + 1) * 86_400

    def _put(self, day: int) -> None:
        hours = range(day * 24, (day + 1) * 24)
        exporter: list[dict[str, Any]] = []
        insights: list[dict[str, Any]] = []
        for hour in hours:
            samples = [_behaviour(node, gpu, hour) for node, gpu in GPUS]
            exporter += _exporter_data(self.cluster, hour, samples)
            for sample in samples:
                insights += _container_insights_data(self.cluster, sample)
        node, gpu = FAILING
        if LOST_AT_HOUR in hours:
            exporter.append(
                _datum(
                    str(GpuMetric.XID_ERRORS),
                    {
                        DIM_CLUSTER: self.cluster,
                        DIM_NODE: node,
                        DIM_GPU_INDEX: str(gpu),
                        DIM_XID_CODE: "79",
                    },
                    LOST_AT_HOUR,
                    [1.0],
                    "Count",
                    samples=1,  # one event
                )
            )
        # The two teams' jobs ran all week: their throughput on the days before the training
        # step's (which the emitter writes for its last day), as the emitter's job series.
        training = [
            _datum(
                str(TrainingMetric.SAMPLES_PER_SECOND),
                {DIM_CLUSTER: self.cluster, DIM_JOB: job},
                hour,
                [THROUGHPUT],
                "Count/Second",
            )
            for hour in hours
            for job in WEEK_JOBS
            if day < DAYS - 1
        ]
        for namespace, data in (
            (NAMESPACE_GPU, exporter),
            (NAMESPACE_CONTAINER_INSIGHTS, insights),
            (NAMESPACE_TRAINING, training),
        ):
            for first in range(0, len(data), 1000):
                self.cloudwatch.put_metric_data(
                    Namespace=namespace, MetricData=data[first : first + 1000]
                )
        self.datapoints += len(exporter) + len(insights) + len(training)
