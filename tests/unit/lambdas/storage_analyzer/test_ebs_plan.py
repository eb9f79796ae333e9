"""The datapoint floor counts every pass the storage rules need: the first pass of every
volume, and the hourly second pass of each volume whose window screen could fire, in calls of
their own (the second pass is chosen from what the first returned)."""

from typing import Any

from benchmarks.storage_analyzer import volume_queries
from lambdas.shared.metric_fetcher import batches, floor, floor_of_passes, window_period
from lambdas.storage_analyzer.ebs_analysis import Volume, VolumeMetrics
from lambdas.storage_analyzer.ebs_plan import passes

END = 1_764_288_000.0  # 2025-11-28T00:00:00Z
START = END - 14 * 86_400  # 336 hours
WINDOW = window_period(START, END)
CALM = Volume("vol-calm", "gp3", 500, "in-use", iops=3000, throughput_mibps=125)
QUEUED = Volume("vol-queued", "gp3", 500, "in-use", iops=3000, throughput_mibps=125)
LIMITED = Volume("vol-limited", "gp2", 500, "in-use")
SCREENED = {
    # gp3 at 3,000 IOPS: queue limit 4 x 3 = 12; a window maximum of 12 settles the rule.
    "vol-calm": VolumeMetrics(queue_length=[12.0], iops_exceeded=[0.0], throughput_exceeded=[0.0]),
    "vol-queued": VolumeMetrics(
        queue_length=[12.5], iops_exceeded=[0.0], throughput_exceeded=[0.0]
    ),
    # gp2 500 GiB: 1,500 IOPS baseline, queue limit 6; both limits hit at least once.
    "vol-limited": VolumeMetrics(
        queue_length=[5.0], iops_exceeded=[1.0], throughput_exceeded=[1.0]
    ),
}


def test_the_second_pass_holds_only_the_screens_that_could_fire() -> None:
    first, second = passes([CALM, QUEUED, LIMITED], SCREENED, WINDOW)
    # Two hourly math totals (2 inputs each) and three window screens a volume, and the
    # burst balance's window minimum for the gp2 one.
    assert len(first) == 5 + 5 + 6
    assert [(q.key, q.period_s, q.stat) for q in second] == [
        (("vol-queued", "queue_length"), 3600, "Average"),
        (("vol-limited", "iops_exceeded"), 3600, "Maximum"),
        (("vol-limited", "throughput_exceeded"), 3600, "Maximum"),
    ]


def test_the_floor_counts_the_second_pass_in_calls_of_its_own() -> None:
    first, second = passes([CALM, QUEUED, LIMITED], SCREENED, WINDOW)
    # 28 query entries, 2 x 336 + 3 points a volume (+1 for the gp2 burst balance).
    assert floor(first, start=START, end=END) == (1, 675 + 675 + 676)
    # Three hourly series of 336 points, fetched after the first pass answered.
    assert floor(second, start=START, end=END) == (1, 3 * 336)
    assert floor_of_passes((first, second), start=START, end=END) == (2, 2026 + 1008)


def test_no_screen_that_could_fire_means_no_second_pass() -> None:
    first, second = passes([CALM], SCREENED, WINDOW)
    assert second == []
    assert floor_of_passes((first, second), start=START, end=END) == (1, 675)


def test_the_first_pass_of_a_fleet_is_packed_at_the_call_floor() -> None:
    """10,000 volumes, one in five gp2 (with its burst screen): 92,000 query entries, every
    call holding 500 (a three-entry math total does not fit a call with 498 or 499 in it, so
    the room is filled from the next volumes' one-entry screens)."""
    volumes = [
        Volume(f"vol-{i}", "gp2" if i % 5 == 0 else "gp3", 500, "in-use", 3000, 125)
        for i in range(10_000)
    ]
    first, _ = passes(volumes, {}, WINDOW)
    calls = list(batches(first, start=START, end=END))
    assert floor(first, start=START, end=END)[0] == 184
    assert len(calls) == 184
    assert sorted(q.key for c in calls for q in c) == sorted(q.key for q in first)


def _series(queries: list[Any]) -> set[tuple[str, str]]:
    """(metric, statistic) of every series a plan reads, math inputs included."""
    found: set[tuple[str, str]] = set()
    for q in queries:
        found |= _series(list(q.inputs)) if q.inputs else {(q.metric, q.stat)}
    return found


def test_the_benchmarks_baseline_reads_the_deployed_plans_series_every_hour() -> None:
    """One plan is deployed (ebs_plan); the benchmark's baseline (benchmarks/storage_analyzer.py)
    reads the same series, each hourly, so ``make bench`` compares the plans on one metric list."""
    first, second = passes([LIMITED], {"vol-limited": VolumeMetrics(queue_length=[50.0])}, WINDOW)
    hourly = [q for q in [*first, *second] if q.period_s == 3600]
    baseline = volume_queries(LIMITED)
    assert {q.period_s for q in baseline} == {3600}
    assert {m for m, _ in _series(baseline)} == {m for m, _ in _series([*first, *second])}
    assert _series(hourly) <= _series(baseline)
    assert ("BurstBalance", "Minimum") in _series(baseline)
