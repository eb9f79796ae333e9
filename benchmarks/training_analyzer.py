"""The training analyzer on 1,000 jobs x 14 days of hourly metrics, 4 ranks each on 250 nodes
of 8 GPUs, on plain data (no moto): CPU time, peak memory, GetMetricData calls."""

import time
import tracemalloc
from datetime import UTC, datetime
from typing import Any

from lambdas.shared.metric_fetcher import floor_calls
from lambdas.training_analyzer.run import analyze_training

JOBS = 1000
NODES = 250
DAYS = 14
END = datetime(2025, 11, 28, tzinfo=UTC).timestamp()
START = END - DAYS * 86_400
HOURS = DAYS * 24


class FakeCloudWatch:
    def __init__(self) -> None:
        self.calls = 0
        hours = [datetime.fromtimestamp(START + h * 3600, UTC) for h in range(HOURS)]
        self._hourly = (
            hours,
            {
                "steps": [1800.0] * HOURS,
                "step_time_seconds": [2.0] * HOURS,
                "data_wait_seconds": [0.5] * HOURS,
                "samples_per_second": [900.0] * HOURS,
                "checkpoint_save_seconds": [60.0] * HOURS,
                "job_failed": [0.0] * HOURS,
                "job_succeeded": [0.0] * HOURS,
                "gpu_power_utilization": [55.0] * HOURS,
                "gpu_sm_active": [70.0] * HOURS,
            },
        )

    def get_paginator(self, name: str) -> Any:
        outer = self
        del name

        class Listing:
            def paginate(self, **kwargs: Any) -> list[dict[str, Any]]:
                return outer.list_metrics_pages(kwargs["Namespace"])

        return Listing()

    def list_metrics_pages(self, namespace: str) -> list[dict[str, Any]]:
        if namespace == "GpuInsights/Training":
            metrics = [
                {
                    "Dimensions": [
                        {"Name": "ClusterName", "Value": "bench"},
                        {"Name": "JobName", "Value": f"job-{j}"},
                    ]
                }
                for j in range(JOBS)
            ]
        else:
            metrics = [
                {
                    "Dimensions": [
                        {"Name": "ClusterName", "Value": "bench"},
                        {"Name": "NodeName", "Value": f"node-{n}"},
                        {"Name": "GpuIndex", "Value": str(g)},
                    ]
                }
                for n in range(NODES)
                for g in range(8)
            ]
        return [{"Metrics": metrics[i : i + 500]} for i in range(0, len(metrics), 500)]

    def get_metric_data(
        self, *, MetricDataQueries: list[dict[str, Any]], StartTime: Any, **_: Any
    ) -> dict[str, Any]:
        self.calls += 1
        hours, values = self._hourly
        results = []
        for q in MetricDataQueries:
            stat = q["MetricStat"]
            name = stat["Metric"]["MetricName"]
            if stat["Period"] > 86_400:  # the baseline: one point for the earlier window
                results.append({"Id": q["Id"], "Timestamps": [StartTime], "Values": [1000.0]})
            elif stat["Stat"] == "SampleCount":
                results.append({"Id": q["Id"], "Timestamps": hours, "Values": [1.0] * HOURS})
            else:
                results.append({"Id": q["Id"], "Timestamps": hours, "Values": values[name]})
        return {"MetricDataResults": results}


class FakeLogs:
    def start_query(self, **_: Any) -> dict[str, str]:
        return {"queryId": "q"}

    def get_query_results(self, **_: Any) -> dict[str, Any]:
        rows = [
            [
                {"field": "JobName", "value": f"job-{j}"},
                {"field": "Rank", "value": str(r)},
                {"field": "steps", "value": "604800"},
                {"field": "step_time", "value": "2.0"},
                {"field": "node", "value": f"node-{(j * 4 + r) // 8 % NODES}"},
            ]
            for j in range(JOBS)
            for r in range(4)
        ]
        return {"status": "Complete", "results": rows}


def _run(cloudwatch: FakeCloudWatch) -> Any:
    return analyze_training(
        cloudwatch=cloudwatch,
        logs=FakeLogs(),
        cluster="bench",
        start=START,
        end=END,
        gpu_hour_usd=6.88,
    )


def main() -> dict[str, float]:
    cloudwatch = FakeCloudWatch()
    started = time.process_time()
    run = _run(cloudwatch)
    cpu = time.process_time() - started
    tracemalloc.start()
    _run(FakeCloudWatch())
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    floor = floor_calls(JOBS * 8, HOURS) + floor_calls(JOBS, 1) + floor_calls(NODES * 8 * 2, HOURS)
    print(
        f"training analyzer: {JOBS:,} jobs x {DAYS} days hourly, 4 ranks each, "
        f"{NODES} nodes of 8 GPUs"
    )
    print(f"  CPU time                  {cpu:8.2f} s")
    print(f"  peak Python memory        {peak:8.1f} MiB")
    print(f"  GetMetricData calls       {cloudwatch.calls:8,}       floor {floor:,}")
    print(f"  findings                  {len(run.findings):8,}")
    return {
        "cpu_s": cpu,
        "peak_mib": peak,
        "calls": float(cloudwatch.calls),
        "floor_calls": float(floor),
        "findings": float(len(run.findings)),
    }


if __name__ == "__main__":
    main()
