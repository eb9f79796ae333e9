"""Datums the demo writes as CloudWatch stores them: an hour of samples as one statistic set.
The dimensions of Container Insights' GPU series are the realistic cluster model's
(cli/demo/realistic/container_insights.py)."""

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any


def statistic_set(
    name: str,
    dims: dict[str, str],
    hour_start: float,
    values: Sequence[float],
    unit: str = "None",
    repeat: int = 1,
    counts: Sequence[int] | None = None,
) -> dict[str, Any]:
    """The hour's samples (each value ``repeat`` times, or its own of ``counts``) as one
    PutMetricData statistic set, stamped mid-hour."""
    times = [repeat] * len(values) if counts is None else list(counts)
    return {
        "MetricName": name,
        "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
        "Timestamp": datetime.fromtimestamp(hour_start + 1800, UTC),
        "StatisticValues": {
            "SampleCount": sum(times),
            "Sum": sum(v * n for v, n in zip(values, times, strict=True)),
            "Minimum": min(values),
            "Maximum": max(values),
        },
        "Unit": unit,
    }
