"""A synthetic metric history of a fleet, shaped as the exporter, the training emitter and the
waste attribution publish it: one GPU of every node idle while held, one hot, one lost."""

from cli.backtest.history import Sample
from gpu_insights_agent.contract.metrics import (
    ALARM_METRICS,
    CI_NODE_GPU_METRICS,
    CLUSTER_METRICS,
    FAULT_METRICS,
    GpuMetric,
    TrainingMetric,
    WasteMetric,
    alarm_shard,
)

CLUSTER = "train"
GPUS = 8
SHARDS = 25  # cdk/alarms/sizing.py for 10,000 GPUs


def _gpu(node: str, gpu: int, metric: GpuMetric, t: float, value: float) -> list[Sample]:
    """As published: Container Insights' readings there (DCGM, per GPU device); the exporter's
    per GPU (alarm metrics with the shard), per cluster where read; fault gauges per GPU and
    only when non-zero (a whole hour of zeros is never sent)."""
    if metric in CI_NODE_GPU_METRICS:
        ci = {
            ("ClusterName", CLUSTER),
            ("NodeName", node),
            ("GpuDevice", f"nvidia{gpu}"),
            ("InstanceId", f"i-{node}"),
            ("InstanceType", "p5.48xlarge"),
        }
        return [Sample("ContainerInsights", CI_NODE_GPU_METRICS[metric], frozenset(ci), t, value)]
    if metric in FAULT_METRICS and value == 0:
        return []
    dims = {("ClusterName", CLUSTER), ("NodeName", node), ("GpuIndex", str(gpu))}
    if metric in ALARM_METRICS:  # as the exporter writes them: with the alarm shard
        dims.add(("Shard", alarm_shard(node, gpu, SHARDS)))
    samples = [Sample("GpuInsights", metric, frozenset(dims), t, value)]
    if metric in CLUSTER_METRICS:
        samples.append(
            Sample("GpuInsights", metric, frozenset({("ClusterName", CLUSTER)}), t, value)
        )
    return samples


def _node_gpus(node: str) -> list[Sample]:
    """Container Insights' per-node GPU counts, a sample a minute for the first hour: its eight
    GPUs (``node_gpu_limit``), seven of them held by pods (``node_gpu_usage_total``)."""
    dims = frozenset({("ClusterName", CLUSTER), ("InstanceId", f"i-{node}"), ("NodeName", node)})
    return [
        Sample("ContainerInsights", metric, dims, 60.0 * minute, value)
        for minute in range(60)
        for metric, value in (("node_gpu_limit", float(GPUS)), ("node_gpu_usage_total", 7.0))
    ]


def fleet(nodes: int, *, periods: int = 1) -> list[Sample]:
    """``nodes`` nodes of 8 GPUs; on node-0 GPU 1 is held and idle, GPU 2 runs hot and GPU 3
    is lost; node-0 has the XIDs; job-0 waits on data; namespace ns-0 wastes most."""
    g = GpuMetric
    samples: list[Sample] = []
    for n in range(nodes):
        node = f"node-{n}"
        for gpu in range(GPUS):
            for p in range(periods):
                t = 60.0 * p
                lost = n == 0 and gpu == 3
                samples += _gpu(node, gpu, g.HEALTHY, t, 0.0 if lost else 1.0)
                if lost:
                    continue
                idle = n == 0 and gpu == 1
                hot = n == 0 and gpu == 2
                share = 8.0 if idle else 80.0 + (n % 10)
                for metric, value in (
                    (g.ALLOCATED_POWER_UTILIZATION, share),
                    (g.POWER_UTILIZATION, share),
                    (g.POWER_DRAW, 7 * share),
                    (g.SM_ACTIVE, 1.0 if idle else 85.0),
                    (g.UTILIZATION, 0.0 if idle else 95.0),
                    (g.MEMORY_USED, 8e10),
                    (g.TEMPERATURE, 91.0 if hot else 70.0 + n % 5),
                    (g.THROTTLED_THERMAL, 0.75 if hot else 0.0),
                    (g.THROTTLED_POWER, 0.0),
                ):
                    samples += _gpu(node, gpu, metric, t, value)
        if n < 20:
            xid = frozenset(
                {("ClusterName", CLUSTER), ("NodeName", node), ("GpuIndex", "0"), ("XidCode", "79")}
            )
            samples.append(Sample("GpuInsights", g.XID_ERRORS, xid, 0.0, 5.0 if n == 0 else 1.0))
        job = frozenset({("ClusterName", CLUSTER), ("JobName", f"job-{n}")})
        for job_metric, value in (
            (TrainingMetric.DATA_WAIT_SHARE, 40.0 if n == 0 else 5.0),
            (TrainingMetric.STEP_TIME, 2.0),
            (TrainingMetric.STEPS, 30.0),
            (TrainingMetric.SAMPLES_PER_SECOND, 32.0),
        ):
            samples.append(Sample("GpuInsights/Training", job_metric, job, 0.0, value))
        samples += _node_gpus(node)
        if n % 10 == 0:
            ns = frozenset({("ClusterName", CLUSTER), ("Namespace", f"ns-{n // 10}")})
            hours = 48.0 if n == 0 else 2.0
            samples.append(
                Sample("GpuInsights/Waste", WasteMetric.HELD_NOT_WORKING, ns, 0.0, hours)
            )
            # Its nodes' other held GPUs working all day (ns-0: node-0's five).
            working = 24.0 * (5 if n == 0 else 7)
            samples.append(Sample("GpuInsights/Waste", WasteMetric.HELD_WORKING, ns, 0.0, working))
            samples.append(Sample("GpuInsights/Waste", WasteMetric.WASTE_USD, ns, 0.0, 7 * hours))
    return samples
