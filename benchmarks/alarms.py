"""The alarms over a synthetic 10,000-GPU fleet (1,250 eight-GPU nodes): every GPU evaluated,
no alarm PARTIAL_DATA, and each injected fault reported on the GPU it happened to."""

import resource
import time
from typing import Any

from cdk.alarms.catalog import AlarmSettings, gpu_alarms
from cdk.alarms.model import insights_query
from cdk.alarms.sizing import shards_for
from cli.backtest.engine import backtest
from cli.backtest.history import Sample
from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_NODE,
    DIM_SHARD,
    NAMESPACE_GPU,
    GpuMetric,
    alarm_shard,
)

NODES, GPUS_PER_NODE = 1250, 8
T0 = 1_764_000_000.0 - 1_764_000_000.0 % 3600
MINUTES = 75
CLUSTER = "bench"
#: (node, gpu) -> the fault injected there.
FAULTS = {(17, 3): "low", (900, 0): "low", (404, 7): "lost", (1111, 5): "thermal"}


def history(shards: int) -> list[Sample]:
    samples: list[Sample] = []
    for n in range(NODES):
        node = f"ip-10-{n // 250}-{n % 250}-7.ec2.internal"
        for g in range(GPUS_PER_NODE):
            dims = frozenset(
                {(DIM_CLUSTER, CLUSTER), (DIM_NODE, node), (DIM_GPU_INDEX, str(g)),
                 (DIM_SHARD, alarm_shard(node, g, shards))}
            )  # fmt: skip
            fault = FAULTS.get((n, g))
            for m in range(MINUTES):
                t = T0 + m * 60
                healthy = 0.0 if fault == "lost" and m >= 60 else 1.0
                samples.append(Sample(NAMESPACE_GPU, str(GpuMetric.HEALTHY), dims, t, healthy))
                if m % 5:
                    continue  # one sample per 5-minute period is what those alarms read
                power = 12.0 if fault == "low" else 85.0
                thermal = 1.0 if fault == "thermal" else 0.0
                for metric, value in (
                    (GpuMetric.ALLOCATED_POWER_UTILIZATION, power),
                    (GpuMetric.THROTTLED_THERMAL, thermal),
                    (GpuMetric.THROTTLED_POWER, 0.0),
                ):
                    samples.append(Sample(NAMESPACE_GPU, str(metric), dims, t, value))
    return samples


def main() -> dict[str, Any]:
    gpus = NODES * GPUS_PER_NODE
    settings = AlarmSettings(cluster_name=CLUSTER, shards=shards_for(gpus))
    specs = gpu_alarms(settings)
    samples = history(settings.shards)
    started = time.perf_counter()
    results = backtest(specs, samples, start=T0, end=T0 + MINUTES * 60)
    seconds = time.perf_counter() - started
    # Peak resident memory of the whole run (history included); tracemalloc would slow it 2x.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    evaluated = sum(r.evaluated for r in results if r.spec.alarm_kind == "gpu-lost")
    named = []
    for r in results:
        named += [f"{r.spec.alarm_kind} on {r.named(g)}" for g in r.contributors_alarmed]
    for line in sorted(named):
        print(f"  {line}")
    return {
        "gpus": gpus,
        "gpus_evaluated": evaluated,
        "alarms": len(specs),
        "insights_alarms": sum(insights_query(r.spec.metric) is not None for r in results),
        "partial": sum(r.partial_evaluations for r in results),
        "most_series": max(r.most_series for r in results),
        "faults_named": len(named),
        "faults": len(FAULTS),
        "seconds": seconds,
        "peak_mib": peak,
    }


if __name__ == "__main__":
    print(main())
