"""The storage analyzer at fleet scale, on plain data (no moto): 10,000 volumes x 14 days of
hourly metrics. Prints CPU time, peak Python memory, and GetMetricData calls against the
floor and against one call per metric.

The fake CloudWatch answers every query with the same prebuilt lists (a busy gp3 pattern with
a saturated hour a day), so the figures measure the analyzer, not the fake.
"""

import time
import tracemalloc
from datetime import UTC, datetime
from typing import Any

from lambdas.shared.metric_fetcher import floor_calls, points_per_series
from lambdas.storage_analyzer.aws import VolumeScope, discover_volumes, volume_queries
from lambdas.storage_analyzer.run import analyze_storage

VOLUMES = 10_000
DAYS = 14
END = datetime(2025, 11, 28, tzinfo=UTC).timestamp()
START = END - DAYS * 86_400
HOURS = DAYS * 24
MIB = 2**20


def _pattern() -> dict[str, list[float]]:
    iops = [(2800.0 if h % 24 == 9 else 900.0 + (h % 7) * 40) * 3600 for h in range(HOURS)]
    return {
        "VolumeReadOps": iops,
        "VolumeWriteOps": [v / 4 for v in iops],
        "VolumeReadBytes": [60.0 * MIB * 3600] * HOURS,
        "VolumeWriteBytes": [5.0 * MIB * 3600] * HOURS,
        "VolumeQueueLength": [1.5] * HOURS,
        "VolumeIOPSExceededCheck": [0.0] * HOURS,
        "VolumeThroughputExceededCheck": [0.0] * HOURS,
        "BurstBalance": [100.0] * HOURS,
    }


class FakeEc2:
    def __init__(self, volumes: int) -> None:
        self._volumes = [
            {
                "VolumeId": f"vol-{i:017x}",
                "VolumeType": "gp2" if i % 5 == 0 else "gp3",
                "Size": 500,
                "State": "in-use",
                "Iops": 6000 if i % 3 == 0 else 3000,
                "Throughput": 250 if i % 4 == 0 else 125,
                "Attachments": [{"InstanceId": f"i-{i // 8:017x}"}],
            }
            for i in range(volumes)
        ]

    def get_paginator(self, name: str) -> Any:
        outer = self

        class Paginator:
            def paginate(self, **_: Any) -> Any:
                if name == "describe_instances":
                    return iter([{"Reservations": []}])
                return (
                    {"Volumes": outer._volumes[i : i + 500]}
                    for i in range(0, len(outer._volumes), 500)
                )

        return Paginator()


class FakeCloudWatch:
    def __init__(self) -> None:
        self.calls = 0
        self.datapoints = 0
        self._values = _pattern()
        self._timestamps = [datetime.fromtimestamp(START + h * 3600, UTC) for h in range(HOURS)]

    def get_metric_data(
        self,
        *,
        MetricDataQueries: list[dict[str, Any]],
        **_: Any,
    ) -> dict[str, Any]:
        self.calls += 1
        results = []
        for query in MetricDataQueries:
            values = self._values[query["MetricStat"]["Metric"]["MetricName"]]
            self.datapoints += len(values)
            results.append({"Id": query["Id"], "Timestamps": self._timestamps, "Values": values})
        return {"MetricDataResults": results}


def _run(cloudwatch: FakeCloudWatch) -> Any:
    return analyze_storage(
        ec2=FakeEc2(VOLUMES),
        s3=None,
        cloudwatch=cloudwatch,
        cluster="bench",
        scope=VolumeScope.CLUSTER,
        buckets=[],
        start=START,
        end=END,
    )


def main() -> dict[str, float]:
    cloudwatch = FakeCloudWatch()
    started = time.process_time()
    run = _run(cloudwatch)
    cpu = time.process_time() - started
    tracemalloc.start()
    _run(FakeCloudWatch())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    volumes = discover_volumes(FakeEc2(VOLUMES), cluster="bench", scope=VolumeScope.CLUSTER)
    series = sum(len(volume_queries(v)) for v in volumes)
    points = points_per_series(START, END, 3600)
    floor = floor_calls(series, points)
    figures = {
        "volumes": float(run.volumes),
        "series": float(series),
        "cpu_s": cpu,
        "peak_mib": peak / MIB,
        "calls": float(cloudwatch.calls),
        "floor_calls": float(floor),
        "one_per_metric_calls": float(series),
        "findings": float(len(run.findings)),
    }
    print(
        f"storage analyzer: {VOLUMES:,} volumes x {DAYS} days hourly ({series:,} series, "
        f"{cloudwatch.datapoints:,} datapoints)"
    )
    print(f"  CPU time                  {cpu:8.2f} s     (goal < 10 s)")
    print(f"  peak Python memory        {peak / MIB:8.1f} MiB   (goal < 512 MiB)")
    print(
        f"  GetMetricData calls       {cloudwatch.calls:8,}       floor {floor:,}; "
        f"one call per metric would be {series:,} ({series / max(1, cloudwatch.calls):.0f}x)"
    )
    print(f"  findings                  {len(run.findings):8,}")
    return figures


if __name__ == "__main__":
    main()
