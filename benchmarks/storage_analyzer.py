"""The storage analyzer at fleet scale through the real botocore client (benchmarks/wire.py):
10,000 volumes x 14 days. Prints, for today's plan (every series hourly) and the
datapoint-floor plan (ebs_plan): calls against the call floor, datapoints against the
datapoint floor, metrics requested and their GetMetricData dollars, CPU end to end with the
share botocore spent parsing, and peak memory (each run in a fresh process).

The fleet is a mix (``MIX``): most volumes busy within their limits, and a stated share
tripping each screen of lambdas/storage_analyzer/ebs_plan.py, so their hourly series are
fetched in a second pass (queue length, the IOPS and throughput limit checks), besides idle
and low-credit volumes, whose rules the first pass settles. The floor counts both passes.
"""

import multiprocessing
import resource
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from typing import Any, ClassVar, Final

from benchmarks import wire
from lambdas.shared.metric_fetcher import (
    MetricQuery,
    add_series,
    cost_usd,
    fetch,
    floor,
    floor_of_passes,
    metrics_requested,
    sum_terms,
    window_period,
)
from lambdas.storage_analyzer.aws import VolumeScope, discover_volumes
from lambdas.storage_analyzer.ebs_analysis import Volume, VolumeMetrics, analyze_volume
from lambdas.storage_analyzer.ebs_plan import (
    BURSTING_TYPES,
    HOURLY,
    HOURLY_STAT,
    NAMESPACE,
    SCREENED,
    passes,
)
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
#: (pattern, percent of the fleet): volume i has the pattern ``(37 i) % 100`` falls in, so
#: every hundred consecutive volumes hold the mix, spread out.
MIX: Final = (
    ("busy", 72),  # a saturated hour a day, within every limit: the first pass settles it
    ("queue", 6),  # a p95 queue above its limit (second pass; a queue finding)
    ("queue_spike", 2),  # one hour's queue above its limit (second pass; no finding)
    ("iops_limit", 5),  # its IOPS limit hit in one hour a day (second pass)
    ("throughput_limit", 5),  # its throughput limit hit in one hour (second pass)
    ("idle", 5),  # under 1 IOPS every day: an idle finding from the first pass
    ("low_credit", 5),  # a gp2 volume whose burst credits ran out (the window minimum)
)
_BY_PERCENT: Final = [name for name, percent in MIX for _ in range(percent)]


#: The baseline plan's hourly sums (field of VolumeMetrics, metric): what ebs_plan reads as
#: two metric math totals. The deployed analyzer never runs this plan; only this benchmark
#: measures it, against ebs_plan's.
BASELINE_SUMS: Final = (
    ("read_ops", "VolumeReadOps"),
    ("write_ops", "VolumeWriteOps"),
    ("read_bytes", "VolumeReadBytes"),
    ("write_bytes", "VolumeWriteBytes"),
)


def volume_queries(volume: Volume) -> list[MetricQuery]:
    """The baseline plan: every series ebs_plan reads, each hourly over the whole window
    (the screened ones at the statistic ebs_plan reads them hourly at), no screens."""
    dims = (("VolumeId", volume.volume_id),)
    series = [(f, m, "Sum") for f, m in BASELINE_SUMS]
    series += [(f, m, HOURLY_STAT[f]) for f, m, _ in SCREENED]
    if volume.volume_type in BURSTING_TYPES:
        series.append(("burst_balance", "BurstBalance", "Minimum"))
    return [
        MetricQuery((volume.volume_id, field), NAMESPACE, metric, dims, stat, HOURLY)
        for field, metric, stat in series
    ]


def pattern_of(index: int) -> str:
    return _BY_PERCENT[index * 37 % len(_BY_PERCENT)]


def _pattern(name: str) -> dict[str, dict[str, list[float]]]:
    """Hourly statistics of every EBS metric of a volume of this pattern: the hourly sums of
    the counters, and the hourly Average and Maximum of the queue length, whose samples peak
    above their hour's average (bursts: 2.5 x the average, 8 in the busy hour, 60 in an hour
    averaging 40), as CloudWatch's Maximum is of the raw samples."""
    iops = [(2800.0 if h % 24 == 9 else 900.0 + (h % 7) * 40) * 3600 for h in range(HOURS)]
    if name == "idle":
        iops = [0.1 * 3600] * HOURS
    queue = [1.5] * HOURS
    if name == "queue":  # three hours a day (12.5%) at 40: the p95 is 40
        queue = [40.0 if h % 24 in (9, 10, 11) else 1.5 for h in range(HOURS)]
    if name == "queue_spike":
        queue = [40.0 if h == 100 else 1.5 for h in range(HOURS)]
    queue_max = [
        60.0 if q >= 40 else 8.0 if h % 24 == 9 and name != "idle" else q * 2.5
        for h, q in enumerate(queue)
    ]
    busy_hour = [1.0 if h % 24 == 9 else 0.0 for h in range(HOURS)]
    once = [1.0 if h == 200 else 0.0 for h in range(HOURS)]
    return {
        "VolumeReadOps": {"Sum": iops},
        "VolumeWriteOps": {"Sum": [v / 4 for v in iops]},
        "VolumeReadBytes": {"Sum": [(0.0 if name == "idle" else 60.0) * MIB * 3600] * HOURS},
        "VolumeWriteBytes": {"Sum": [(0.0 if name == "idle" else 5.0) * MIB * 3600] * HOURS},
        "VolumeQueueLength": {"Average": queue, "Maximum": queue_max},
        "VolumeIOPSExceededCheck": {
            "Maximum": busy_hour if name == "iops_limit" else [0.0] * HOURS
        },
        "VolumeThroughputExceededCheck": {
            "Maximum": once if name == "throughput_limit" else [0.0] * HOURS
        },
        "BurstBalance": {"Minimum": [4.0 if name == "low_credit" else 100.0] * HOURS},
    }


#: A window statistic from the hourly ones: the Maximum of the hourly Maximums (of the raw
#: samples), the Minimum of the hourly Minimums, the Sum of the hourly Sums.
WINDOW: Final[dict[str, Callable[[list[float]], float]]] = {
    "Maximum": max,
    "Minimum": min,
    "Sum": sum,
}


def _hourly(stats: dict[str, list[float]], stat: str) -> list[float]:
    """The hourly ``stat``; a metric kept at one statistic (0/1 checks, sums) answers it."""
    return stats.get(stat) or next(iter(stats.values()))


def _volume_xml(i: int) -> str:
    kind = "gp2" if i % 5 == 0 or pattern_of(i) == "low_credit" else "gp3"
    return (
        f"<item><volumeId>vol-{i:017x}</volumeId><size>500</size><volumeType>{kind}</volumeType>"
        f"<status>in-use</status><iops>{6000 if i % 3 == 0 else 3000}</iops>"
        f"<throughput>{250 if i % 4 == 0 else 125}</throughput><attachmentSet><item>"
        f"<instanceId>i-{i // 8:017x}</instanceId></item></attachmentSet></item>"
    )


def ec2_answers(volumes: int) -> dict[str, Callable[[dict[str, str]], str]]:
    """DescribeVolumes (the fleet, in one page) and DescribeInstances (no nodes) in EC2's XML."""
    ns = 'xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"'
    items = "".join(_volume_xml(i) for i in range(volumes))
    return {
        "DescribeVolumes": lambda _: (
            f"<DescribeVolumesResponse {ns}><requestId>b</requestId>"
            f"<volumeSet>{items}</volumeSet></DescribeVolumesResponse>"
        ),
        "DescribeInstances": lambda _: (
            f"<DescribeInstancesResponse {ns}><requestId>b"
            "</requestId><reservationSet/></DescribeInstancesResponse>"
        ),
    }


def ec2_client(volumes: int) -> Any:
    client = wire.client("ec2")
    wire.serve_xml(client, ec2_answers(volumes))
    return client


class FakeCloudWatch:
    """GetMetricData over each volume's pattern, under CloudWatch's limits
    (``wire.metric_data_page``): hourly statistics, window statistics from them, the plan's
    ``FILL(a, 0) + FILL(b, 0)`` math (``metric_fetcher.add_series``); PutMetricData (the
    findings counts) accepted. Counts the screened metrics' hourly datapoints apart (the
    second pass), and the calls that had to page (a batch over a limit)."""

    HOURLY_SCREENED: ClassVar[frozenset[str]] = frozenset(m for _, m, _ in SCREENED)

    def __init__(self) -> None:
        self.calls = 0
        self.paged = 0
        self.datapoints = 0
        self.screened_hourly = 0
        self.metrics = 0
        self._values = {name: _pattern(name) for name, _ in MIX}
        self._windows = {
            (name, metric, stat): reduce(_hourly(stats, stat))
            for name, series in self._values.items()
            for metric, stats in series.items()
            for stat, reduce in WINDOW.items()
        }
        self._hours = [START + h * 3600 for h in range(HOURS)]

    def window(self, volume_id: str, metric: str, stat: str) -> float:
        """The one point a window-long period of this volume's metric has."""
        return self._windows[pattern_of(int(volume_id[4:], 16)), metric, stat]

    def _series(self, query: dict[str, Any]) -> tuple[list[float], list[float]]:
        stat = query["MetricStat"]
        metric = stat["Metric"]["MetricName"]
        volume_id = stat["Metric"]["Dimensions"][0]["Value"]
        if stat["Period"] > 3600:
            return [START], [self.window(volume_id, metric, stat["Stat"])]
        if metric in self.HOURLY_SCREENED:
            self.screened_hourly += HOURS
        stats = self._values[pattern_of(int(volume_id[4:], 16))][metric]
        return self._hours, _hourly(stats, stat["Stat"])

    def _results(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        queries = {q["Id"]: q for q in params["MetricDataQueries"]}
        results = []
        for query in queries.values():
            if query.get("ReturnData") is False:
                self.metrics += 1
                continue
            if "Expression" in query:
                terms = sum_terms(query["Expression"]) or []
                stamps, values = add_series(
                    [(*self._series(queries[name]), fill) for name, fill in terms]
                )
            else:
                self.metrics += 1
                stamps, values = self._series(query)
            self.datapoints += len(values)
            results.append({"Id": query["Id"], "Timestamps": stamps, "Values": values})
        return results

    def get_metric_data(self, params: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        answer = wire.metric_data_page(params, lambda: self._results(params))
        self.paged += "NextToken" in answer
        return answer

    def serve(self, client: Any) -> Any:
        """``client`` (a CloudWatch client) answered by this fake."""
        wire.serve_json(
            client, {"GetMetricData": self.get_metric_data, "PutMetricData": lambda _: {}}
        )
        return client

    def client(self, *, lambda_session: bool = True) -> Any:
        return self.serve(wire.client("cloudwatch", lambda_session=lambda_session))


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


def _floor(plan: str, volumes: int) -> tuple[int, int, int, int, int]:
    """(calls, datapoints, metrics, second-pass datapoints, second-pass volumes) the plan
    needs at the least: for the floor plan, its first pass and the second pass of the volumes
    whose screens the fake's window points trip."""
    found = discover_volumes(ec2_client(volumes), cluster="bench", scope=VolumeScope.CLUSTER)
    if plan == "today":
        queries = [q for v in found for q in volume_queries(v)]
        return (*floor(queries, start=START, end=END), metrics_requested(queries), 0, 0)
    fake = FakeCloudWatch()

    def screens(volume_id: str) -> dict[str, Any]:
        return {f: [fake.window(volume_id, m, s)] for f, m, s in SCREENED}

    screened = {v.volume_id: VolumeMetrics(**screens(v.volume_id)) for v in found}
    first, second = passes(found, screened, window_period(START, END))
    calls, points = floor_of_passes((first, second), start=START, end=END)
    _, second_points = floor(second, start=START, end=END)
    metrics = metrics_requested(first) + metrics_requested(second)
    return calls, points, metrics, second_points, len({q.key[0] for q in second})


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
    if fake.paged:
        raise AssertionError(
            f"{fake.paged} GetMetricData call(s) went over a limit and had to page: the "
            "fetcher's batches must fit 500 queries and 100,800 datapoints"
        )
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
        "second_pass_datapoints": float(fake.screened_hourly if plan != "today" else 0),
        "floor_second_pass_datapoints": float(least[3]),
        "second_pass_volumes": float(least[4]),
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
    mix = ", ".join(f"{name} {percent}%" for name, percent in MIX)
    print(f"  fleet: {mix}")
    print(
        f"  floor plan's second pass: {after['second_pass_volumes']:,.0f} volumes "
        f"({after['second_pass_volumes'] / VOLUMES:.0%}) whose screens could fire, "
        f"{after['second_pass_datapoints']:,.0f} datapoints "
        f"(floor {after['floor_second_pass_datapoints']:,.0f}), of the "
        f"{after['datapoints']:,.0f} in all"
    )
    return {"today": today, "floor": after}


if __name__ == "__main__":
    main()
