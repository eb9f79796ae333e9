"""The training analyzer on 1,000 jobs x 14 days, 4 ranks each on 250 nodes of 8 GPUs,
through the real botocore clients answered at the HTTP layer (benchmarks/wire.py): today's
plan (every job series hourly, botocore's default timestamp parser) and the datapoint-floor
plan (window sums, the handler's client), each in a fresh process."""

import resource
import time
from typing import Any
from unittest import mock

from benchmarks import wire
from benchmarks.storage_analyzer import in_fresh_process
from benchmarks.training_fleet import QUIET_GOODPUT, gpu_dimensions
from lambdas.shared.metric_fetcher import cost_usd, floor, window_period
from lambdas.shared.shards import MEMORY_HEADROOM, TRAINING, TRAINING_SHARD_JOBS
from lambdas.training_analyzer.aws import baseline_query, job_queries
from lambdas.training_analyzer.run import analyze_training

JOBS = 1000
NODES = 250
DAYS = 14
END = 1_764_288_000.0  # 2025-11-28T00:00:00Z
START = END - DAYS * 86_400
HOURS = DAYS * 24
PAGE = 500


class FakeCloudWatch:
    """ListMetrics of every job and GPU; GetMetricData of every series, at any period."""

    def __init__(self, jobs: int = JOBS) -> None:
        self.jobs = jobs
        self.calls = 0
        self.paged = 0
        self.datapoints = 0
        self.metrics = 0
        self.requested: list[tuple[float, float, int]] = []
        self._hours = [START + h * 3600 for h in range(HOURS)]
        self._values = {
            "steps": 1800.0,
            "step_time_seconds": 2.0,
            "data_wait_seconds": 0.5,
            "samples_per_second": 900.0,
            "checkpoint_save_seconds": 60.0,
            "job_failed": 0.0,
            "job_succeeded": 0.0,
            "gpu_allocated_power_utilization": 55.0,
            "gpu_sm_active": 70.0,
            # Goodput's (lambdas/training_analyzer/aws.py JOB_METRICS): an hour of a rank's
            # seconds, most of it the steps' work, a fifth waiting for data.
            "compute_seconds": 2880.0,
            "data_wait_total_seconds": 720.0,
            "step_number": 1800.0,
            **QUIET_GOODPUT,
        }

    def list_metrics(self, params: dict[str, Any]) -> dict[str, Any]:
        if params["Namespace"] == "GpuInsights/Training":
            dims = [[("ClusterName", "bench"), ("JobName", f"job-{j}")] for j in range(self.jobs)]
        else:
            dims = [
                gpu_dimensions(params["MetricName"], f"node-{n}", g)
                for n in range(NODES)
                for g in range(8)
            ]
        first = int(params.get("NextToken", 0))
        page = [
            {
                "Namespace": params["Namespace"],
                "MetricName": params["MetricName"],
                "Dimensions": [{"Name": k, "Value": v} for k, v in d],
            }
            for d in dims[first : first + PAGE]
        ]
        more = {"NextToken": str(first + PAGE)} if first + PAGE < len(dims) else {}
        return {"Metrics": page, **more}

    def get_metric_data(self, params: dict[str, Any]) -> dict[str, Any]:
        """Under CloudWatch's limits (``wire.metric_data_page``); a call that pages counts."""
        self.calls += 1
        answer = wire.metric_data_page(params, lambda: self._results(params))
        self.paged += "NextToken" in answer
        return answer

    def _results(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        results = []
        for q in params["MetricDataQueries"]:
            stat = q["MetricStat"]
            self.metrics += 1
            value = self._values[stat["Metric"]["MetricName"]]
            if stat["Period"] > 3600:  # one point over the window: a baseline, or a sum
                if stat["Metric"]["MetricName"] == "samples_per_second":
                    value = 1000.0
                elif stat["Stat"] == "SampleCount":
                    value = float(HOURS)
                elif stat["Stat"] == "Sum":
                    value *= HOURS
                stamps, values = [params["StartTime"]], [value]
            elif stat["Stat"] == "SampleCount":
                stamps, values = self._hours, [1.0] * HOURS
            else:
                stamps, values = self._hours, [value] * HOURS
            self.datapoints += len(values)
            results.append({"Id": q["Id"], "Timestamps": stamps, "Values": values})
        return results


def _ranks(jobs: int) -> dict[str, Any]:
    rows = [
        [
            {"field": "JobName", "value": f"job-{j}"},
            {"field": "Rank", "value": str(r)},
            {"field": "steps", "value": "604800"},
            {"field": "step_time", "value": "2.0"},
            {"field": "node", "value": f"node-{(j * 4 + r) // 8 % NODES}"},
        ]
        for j in range(jobs)
        for r in range(4)
    ]
    return {"status": "Complete", "results": rows}


def _floor(plan: str, jobs: int) -> tuple[int, int]:
    window = window_period(START, END) if plan == "floor" else None
    series = [q for j in range(jobs) for q in job_queries("bench", f"job-{j}", window)]
    baselines = [baseline_query("bench", f"job-{j}", int(END - START)) for j in range(jobs)]
    gpus = [q for q in series[:1] for _ in range(NODES * 8 * 2)]  # hourly, like a job series
    parts = [
        floor(series, start=START, end=END),
        floor(baselines, start=2 * START - END, end=START),
        floor([q for q in gpus if q.period_s == 3600], start=START, end=END),
    ]
    return sum(p[0] for p in parts), sum(p[1] for p in parts)


def measure(plan: str, jobs: int = JOBS) -> dict[str, float]:
    fake = FakeCloudWatch(jobs)
    today = plan == "today"
    cloudwatch = wire.client("cloudwatch", lambda_session=not today)
    wire.serve_json(
        cloudwatch, {"GetMetricData": fake.get_metric_data, "ListMetrics": fake.list_metrics}
    )
    logs = wire.client("logs", lambda_session=not today)
    wire.serve_json(
        logs, {"StartQuery": lambda _: {"queryId": "q"}, "GetQueryResults": lambda _: _ranks(jobs)}
    )
    hourly = mock.patch("lambdas.training_analyzer.run.window_period", return_value=None)
    with wire.ParseClock() as parsing:
        if today:
            hourly.start()
        started = time.process_time()
        run = analyze_training(
            cloudwatch=cloudwatch, logs=logs, cluster="bench", start=START, end=END,
            gpu_hour_usd=6.88,
        )  # fmt: skip
        cpu = time.process_time() - started
        if today:
            hourly.stop()
    if fake.paged:
        raise AssertionError(f"{fake.paged} GetMetricData call(s) went over a limit and paged")
    calls, points = _floor(plan, jobs)
    return {
        "cpu_s": cpu,
        "parse_s": parsing.cpu_s,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "calls": float(fake.calls),
        "floor_calls": float(calls),
        "datapoints": float(fake.datapoints),
        "floor_datapoints": float(points),
        "usd": cost_usd(fake.metrics),
        "findings": float(len(run.findings)),
    }


def main() -> dict[str, dict[str, float]]:
    figures = {plan: in_fresh_process(plan, JOBS, measure) for plan in ("today", "floor")}
    shard = in_fresh_process("floor", TRAINING_SHARD_JOBS, measure)
    print(f"training analyzer: {JOBS:,} jobs x {DAYS} days, 4 ranks each, {NODES} nodes of 8 GPUs")
    for name, f in figures.items():
        print(
            f"  {name:<7} calls {f['calls']:>5,.0f} (floor {f['floor_calls']:,.0f})  "
            f"datapoints {f['datapoints']:>11,.0f} (floor {f['floor_datapoints']:,.0f})  "
            f"CPU {f['cpu_s']:6.1f} s ({f['parse_s'] / f['cpu_s']:.0%} parsing)  "
            f"peak {f['peak_mib']:5.0f} MiB  ${f['usd']:.2f}  findings {f['findings']:,.0f}"
        )
    print(
        f"  the default shard, {TRAINING_SHARD_JOBS:,} jobs (floor plan): "
        f"CPU {shard['cpu_s']:.1f} s, "
        f"peak {shard['peak_mib']:.0f} MiB, in a {TRAINING.memory_mb:,} MB function "
        f"(sized {MEMORY_HEADROOM} x its measured peak of {TRAINING.peak_mib:.0f} MiB)"
    )
    return {**figures, "shard": shard}


if __name__ == "__main__":
    main()
