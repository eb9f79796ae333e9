"""One model's quality values as a cumulative explicit-bucket histogram: fixed bounds, a count
per bucket, and the values' count, sum, least and most since the histogram began. Memory is the
bounds' length, however many values it counts. Standard library only, Python 3.9.

Buckets are OTLP's: bucket ``i`` holds the values in ``(bounds[i-1], bounds[i]]``, the first
everything up to ``bounds[0]`` and the last everything above ``bounds[-1]`` ("Histogram buckets
are inclusive of their upper boundary, except the last bucket where the boundary is at
infinity", ``HistogramDataPoint.explicit_bounds``, opentelemetry-proto
opentelemetry/proto/metrics/v1/metrics.proto), as Prometheus's ``le`` buckets are.
"""

import math
from bisect import bisect_left
from typing import List, Optional, Sequence, Tuple

from gpu_insights_agent.otlp.json_encoding import Attributes, HistogramPoint

#: A score from 0 to 1 (a judge's grade, a thumbs-up sent as 1 or 0) in tenths: a thumbs-down
#: is counted in the first bucket, a thumbs-up in the tenth.
DEFAULT_BOUNDS: Tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
#: The most bounds a histogram takes: each is a number in every datapoint of every model.
MAX_BOUNDS = 100


def bounds_problem(bounds: object) -> Optional[str]:
    """Why ``bounds`` cannot be a histogram's bucket bounds, or None: 1 to ``MAX_BOUNDS``
    finite numbers, strictly increasing ("The values in the explicit_bounds array must be
    strictly increasing", metrics.proto)."""
    if isinstance(bounds, (str, bytes)) or not isinstance(bounds, Sequence):
        return f"buckets must be a sequence of numbers, not {bounds!r:.100}"
    if not 1 <= len(bounds) <= MAX_BOUNDS:
        return f"buckets must hold 1 to {MAX_BOUNDS} bounds, not {len(bounds)}"
    for bound in bounds:
        if isinstance(bound, bool) or not isinstance(bound, (int, float)):
            return f"bucket bound {bound!r:.100} is not a number"
        if not math.isfinite(bound):
            return f"bucket bound {bound!r} is not finite"
    if any(a >= b for a, b in zip(bounds, bounds[1:])):
        return f"bucket bounds must be strictly increasing: {list(bounds)!r:.200}"
    return None


class Histogram:
    """The cumulative histogram of one model's values since ``start_ns``."""

    __slots__ = ("bounds", "counts", "max", "min", "start_ns", "sum")

    def __init__(self, bounds: Tuple[float, ...], start_ns: int) -> None:
        self.bounds = bounds
        self.start_ns = start_ns
        self.counts: List[int] = [0] * (len(bounds) + 1)
        self.sum = 0.0
        self.min: Optional[float] = None
        self.max: Optional[float] = None

    def add(self, value: float) -> None:
        """Count one finite value (the caller checks it is one)."""
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value
        if self.min is None or value < self.min:
            self.min = value
        if self.max is None or value > self.max:
            self.max = value

    def point(
        self, resource: Attributes, name: str, attributes: Attributes, time_ns: int
    ) -> HistogramPoint:
        """The histogram as it stands, as one OTLP datapoint (``otlp.json_encoding``)."""
        return HistogramPoint(
            resource=resource,
            name=name,
            # UCUM's unit of a dimensionless number, as OTLP takes units (``Metric.unit``).
            unit="1",
            attributes=attributes,
            start_ns=self.start_ns,
            time_ns=time_ns,
            bounds=self.bounds,
            bucket_counts=tuple(self.counts),
            sum=self.sum,
            min=self.min,
            max=self.max,
        )
