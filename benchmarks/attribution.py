"""The GPU-hour attribution (lambdas/training_analyzer/gpu_hours) on a synthetic week of a
large fleet: every
GPU-hour classified and every hold attributed, as the daily run does for one day, here for
seven days at once. Prints wall and CPU time and peak Python memory. The pods are the realistic
cluster model's (cli/demo/realistic): each job an Indexed Job over eight nodes, its pods named and
their controller (Container Insights' PodName) given as the agent gives them."""

import time
import tracemalloc
from typing import Any

from cli.demo.realistic import container_insights as ci
from cli.demo.realistic import pods as k8s
from lambdas.training_analyzer.gpu_hours.attribution import GpuHour, GpuKey, Hold, attribute
from lambdas.training_analyzer.gpu_hours.findings import day_table

GPUS_PER_NODE = 8
HOURS = 7 * 24
NAMESPACES = ("vision", "nlp", "research", "speech", "recsys")


def synthetic_week(nodes: int) -> tuple[list[GpuHour], list[Hold]]:
    """Each node's GPUs held by one job of a namespace; one GPU in eight idles while held,
    one in sixteen is free, every GPU's hour measured by the exporter."""
    gpu_hours: list[GpuHour] = []
    holds: list[Hold] = []
    jobs: dict[str, list[k8s.Pod]] = {}
    for n in range(nodes):
        namespace = NAMESPACES[n % len(NAMESPACES)]
        job = f"{namespace}-job-{n // 8}"
        if job not in jobs:
            jobs[job] = k8s.job_pods(namespace, job, 8 * GPUS_PER_NODE, indexed=True)
        for g in range(GPUS_PER_NODE):
            pod = jobs[job][n % 8 * GPUS_PER_NODE + g]
            controller = ci.pod_name(pod)
            key = GpuKey(f"node-{n}", str(g))
            idle = (n + g) % 8 == 0
            free = (n * GPUS_PER_NODE + g) % 16 == 5
            for hour in range(HOURS):
                gpu_hours.append(
                    GpuHour(
                        gpu=key,
                        hour=hour * 3600,
                        power_utilization=12.0 if idle else 85.0,
                        sm_active=3.0 if idle else 70.0,
                        in_use=not free,
                    )
                )
                if not free:
                    holds.append(
                        Hold(
                            gpu=key,
                            hour=hour * 3600,
                            namespace=namespace,
                            pod=pod.name,
                            controller=controller,
                            share=1.0,
                        )
                    )
    return gpu_hours, holds


def main(nodes: int = 1000) -> dict[str, Any]:
    gpu_hours, holds = synthetic_week(nodes)
    tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    table = day_table(attribute(gpu_hours, holds), gpu_hour_usd=6.88)
    seconds, cpu_seconds = time.perf_counter() - wall, time.process_time() - cpu
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "nodes": nodes,
        "gpu_hours": len(gpu_hours),
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "peak_mib": peak / 2**20,
        "namespaces": len(table.get("namespaces", [])),
        "not_working": sum(r["not_working_gpu_hours"] for r in table.get("namespaces", [])),
    }


if __name__ == "__main__":
    print(main())
