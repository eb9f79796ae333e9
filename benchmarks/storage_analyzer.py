"""The storage analyzer at fleet scale through the real botocore client (benchmarks/wire.py):
10,000 volumes x 14 days. Prints, for today's plan (every series hourly) and the
datapoint-floor plan (ebs_plan): calls against the call floor, datapoints against the
datapoint floor, metrics requested and their GetMetricData dollars, CPU end to end with the
share botocore spent parsing, and peak memory (each run in a fresh process).

Every volume has the same busy gp3/gp2 pattern (a saturated hour a day), so the figures
measure the client and the analyzer, not the fake.
"""

import multiprocessing
import resource
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from typing import Any, ClassVar

from benchmarks import wire
from lambdas.shared.metric_fetcher import (
    MetricQuery,
    cost_usd,
    fetch,
    floor,
    metrics_requested,
    window_period,
)
from lambdas.storage_analyzer.aws import VolumeScope, discover_volumes, volume_queries
from lambdas.storage_analyzer.ebs_analysis import VolumeMetrics, analyze_volume
from lambdas.storage_analyzer.ebs_plan import first_pass
from lambdas.storage_analyzer.run import analyze_storage

VOLUMES = 10_000
#: Today's plan reads 7.4 million datapoints a 1,000 volumes: it is measured on this many
#: and scaled linearly (its cost is per datapoint) to VOLUMES.
BASELINE_VOLUMES = 1_000
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


def _volume_xml(i: int) -> str:
    kind = "gp2" if i % 5 == 0 else "gp3"
    return (
        f"<item><volumeId>vol-{i:017x}</volumeId><size>500</size><volumeType>{kind}</volumeType>"
        f"<status>in-use</status><iops>{6000 if i % 3 == 0 else 3000}</iops>"
        f"<throughput>{250 if i % 4 == 0 else 125}</throughput><attachmentSet><item>"
        f"<instanceId>i-{i // 8:017x}</instanceId></item></attachmentSet></item>"
    )


def ec2_client(volumes: int) -> Any:
    ns = 'xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"'
    items = "".join(_volume_xml(i) for i in range(volumes))
    client = wire.client("ec2")
    wire.serve_xml(
        client,
        {
            "DescribeVolumes": lambda _: (
                f"<DescribeVolumesResponse {ns}><requestId>b</requestId>"
                f"<volumeSet>{items}</volumeSet></DescribeVolumesResponse>"
            ),
            "DescribeInstances": lambda _: (
                f"<DescribeInstancesResponse {ns}><requestId>b"
                "</requestId><reservationSet/></DescribeInstancesResponse>"
            ),
        },
    )
    return client


class FakeCloudWatch:
    """GetMetricData over the pattern: hourly series, window statistics, ``a + b`` math."""

    REDUCE: ClassVar[dict[str, Callable[[list[float]], float]]] = {
        "Maximum": max,
        "Minimum": min,
        "Sum": sum,
    }

    def __init__(self) -> None:
        self.calls = 0
        self.datapoints = 0
        self.metrics = 0
        self._values = _pattern()
        self._hours = [START + h * 3600 for h in range(HOURS)]

    def _series(self, query: dict[str, Any]) -> tuple[list[float], list[float]]:
        stat = query["MetricStat"]
        values = self._values[stat["Metric"]["MetricName"]]
        if stat["Period"] > 3600:
            return [START], [self.REDUCE[stat["Stat"]](values)]
        return self._hours, values

    def get_metric_data(self, params: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        queries = {q["Id"]: q for q in params["MetricDataQueries"]}
        results = []
        for query in queries.values():
            if query.get("ReturnData") is False:
                self.metrics += 1
                continue
            if "Expression" in query:
                terms = [self._series(queries[t.strip()]) for t in query["Expression"].split("+")]
                stamps = terms[0][0]
                values = [sum(v) for v in zip(*(t[1] for t in terms), strict=True)]
            else:
                self.metrics += 1
                stamps, values = self._series(query)
            self.datapoints += len(values)
            results.append({"Id": query["Id"], "Timestamps": stamps, "Values": values})
        return {"MetricDataResults": results}

    def client(self, *, lambda_session: bool = True) -> Any:
        client = wire.client("cloudwatch", lambda_session=lambda_session)
        wire.serve_json(client, {"GetMetricData": self.get_metric_data})
        return client


def _today(ec2: Any, cloudwatch: Any) -> int:
    """Today's plan: every series hourly, then the same rules."""
    volumes = discover_volumes(ec2, cluster="bench", scope=VolumeScope.CLUSTER)
    by_id = {v.volume_id: v for v in volumes}
    metrics = {v.volume_id: VolumeMetrics() for v in volumes}
    queries = [q for v in volumes for q in volume_queries(v)]
    for batch in fetch(cloudwatch, queries, start=START, end=END):
        for series in batch:
            setattr(metrics[series.query.key[0]], series.query.key[1], series.values)
    return sum(len(analyze_volume(by_id[k], m)) for k, m in metrics.items())


def _floor(plan: str, volumes: int) -> tuple[int, int, int]:
    """(calls, datapoints, metrics) the first pass of the plan needs at the least."""
    found = discover_volumes(ec2_client(volumes), cluster="bench", scope=VolumeScope.CLUSTER)
    window = window_period(START, END)
    queries: list[MetricQuery] = [
        q for v in found for q in (volume_queries(v) if plan == "today" else first_pass(v, window))
    ]
    calls, points = floor(queries, start=START, end=END)
    return calls, points, metrics_requested(queries)


def measure(plan: str, volumes: int) -> dict[str, float]:
    """One run in this process: the figures of ``plan`` ("today" or "floor")."""
    fake = FakeCloudWatch()
    ec2, cloudwatch = ec2_client(volumes), fake.client(lambda_session=plan != "today")
    with wire.ParseClock() as parsing:
        started = time.process_time()
        if plan == "today":
            findings = _today(ec2, cloudwatch)
        else:
            run = analyze_storage(
                ec2=ec2,
                s3=None,
                cloudwatch=cloudwatch,
                cluster="bench",
                scope=VolumeScope.CLUSTER,
                buckets=[],
                start=START,
                end=END,
            )
            findings = len(run.findings)
        cpu = time.process_time() - started
    least = _floor(plan, volumes)
    return {
        "volumes": float(volumes),
        "cpu_s": cpu,
        "parse_s": parsing.cpu_s,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "calls": float(fake.calls),
        "floor_calls": float(least[0]),
        "datapoints": float(fake.datapoints),
        "floor_datapoints": float(least[1]),
        "metrics": float(fake.metrics),
        "usd": cost_usd(fake.metrics),
        "findings": float(findings),
    }


def in_fresh_process(
    plan: str, size: int, run: Callable[[str, int], dict[str, float]] | None = None
) -> dict[str, float]:
    """``run(plan, size)`` (this module's ``measure`` by default) in a fresh interpreter,
    so that its peak RSS is its own."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(run or measure, plan, size).result()


def scaled(figures: dict[str, float], volumes: int) -> dict[str, float]:
    """Per-volume figures scaled to ``volumes`` (memory is not: it is bounded by a batch)."""
    factor = volumes / figures["volumes"]
    keep = {"peak_mib"}
    return {k: v if k in keep else v * factor for k, v in figures.items()}


def main() -> dict[str, dict[str, float]]:
    today = scaled(in_fresh_process("today", BASELINE_VOLUMES), VOLUMES)
    after = in_fresh_process("floor", VOLUMES)
    print(f"storage analyzer: {VOLUMES:,} volumes x {DAYS} days, real botocore client")
    for name, f in (("today*", today), ("floor", after)):
        print(
            f"  {name:<7} calls {f['calls']:>7,.0f} (floor {f['floor_calls']:,.0f})  "
            f"datapoints {f['datapoints']:>12,.0f} (floor {f['floor_datapoints']:,.0f})  "
            f"CPU {f['cpu_s']:7.1f} s ({f['parse_s'] / f['cpu_s']:.0%} parsing)  "
            f"peak {f['peak_mib']:6.0f} MiB  ${f['usd']:.2f}  findings {f['findings']:,.0f}"
        )
    print(f"  * today's plan measured on {BASELINE_VOLUMES:,} volumes, scaled per volume")
    return {"today": today, "floor": after}


if __name__ == "__main__":
    main()
