"""One model's quality values into buckets: OTLP's upper-inclusive buckets, fixed bounds, and
the bounds a histogram refuses."""

import pytest

from gpu_insights_agent.quality.histogram import MAX_BOUNDS, Histogram, bounds_problem

#: A stream of a judge's scores and the buckets it fills: (-inf, .25], (.25, .5], (.5, .75],
#: (.75, 1], (1, +inf). A value on a bound is counted below it ("inclusive of their upper
#: boundary", metrics.proto), so 0.25 and 1.0 fall in the first and fourth buckets.
BOUNDS = (0.25, 0.5, 0.75, 1.0)
STREAM = (0.05, 0.25, 0.3, 0.3, 0.95, 1.0, 1.7)
BUCKETS = [2, 2, 0, 2, 1]


def test_a_recorded_stream_fills_the_buckets_its_values_fall_in() -> None:
    histogram = Histogram(BOUNDS, start_ns=7)
    for value in STREAM:
        histogram.add(value)
    assert histogram.counts == BUCKETS
    assert (histogram.min, histogram.max) == (0.05, 1.7)
    assert histogram.sum == pytest.approx(4.55)
    point = histogram.point((("k8s.cluster.name", "c"),), "q", (("model_name", "m"),), 9)
    assert (point.start_ns, point.time_ns, point.bucket_counts) == (7, 9, tuple(BUCKETS))
    assert point.bounds == BOUNDS


def test_memory_is_the_bounds_however_many_values() -> None:
    histogram = Histogram(BOUNDS, start_ns=0)
    for i in range(100_000):
        histogram.add((i % 13) / 10)
    assert len(histogram.counts) == len(BOUNDS) + 1
    assert sum(histogram.counts) == 100_000


@pytest.mark.parametrize(
    ("bounds", "problem"),
    [
        ((), "1 to 100 bounds, not 0"),
        (tuple(range(MAX_BOUNDS + 1)), "1 to 100 bounds, not 101"),
        ((0.5, 0.5), "strictly increasing"),
        ((1.0, 0.5), "strictly increasing"),
        ((0.1, float("nan")), "not finite"),
        ((0.1, float("inf")), "not finite"),
        (("0.1",), "is not a number"),
        ((True,), "is not a number"),
        ("0.1,0.2", "a sequence of numbers"),
        (0.5, "a sequence of numbers"),
    ],
)
def test_bounds_that_cannot_make_a_histogram_are_named(bounds: object, problem: str) -> None:
    assert problem in (bounds_problem(bounds) or "")


def test_good_bounds_pass() -> None:
    assert bounds_problem(BOUNDS) is None
    assert bounds_problem([-10, -1, 0]) is None  # a log-probability's
