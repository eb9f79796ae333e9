"""The day's attribution as CloudWatch metrics (``GpuInsights/Waste``, per cluster and
namespace), for dashboards that show held-but-idle GPU-hours and dollars by namespace."""

from datetime import UTC, datetime
from typing import Any

from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_NAMESPACE,
    NAMESPACE_WASTE,
    WASTE_METRIC_UNITS,
    WasteMetric,
)

#: PutMetricData takes at most 1,000 metrics a call.
MAX_PER_CALL = 1000
_FIELDS = {
    WasteMetric.HELD: "held_gpu_hours",
    WasteMetric.HELD_NOT_WORKING: "not_working_gpu_hours",
    WasteMetric.HELD_WORKING: "working_gpu_hours",
    WasteMetric.WASTE_USD: "waste_usd",
}


def waste_metric_data(table: dict[str, Any], cluster: str, stamp: float) -> list[dict[str, Any]]:
    """One datum per namespace and metric, stamped at the start of the day it counts."""
    when = datetime.fromtimestamp(stamp, UTC)
    return [
        {
            "MetricName": str(metric),
            "Dimensions": [
                {"Name": DIM_CLUSTER, "Value": cluster},
                {"Name": DIM_NAMESPACE, "Value": row["namespace"]},
            ],
            "Timestamp": when,
            "Value": float(row[field]),
            "Unit": WASTE_METRIC_UNITS[metric],
        }
        for row in table.get("namespaces", [])
        for metric, field in _FIELDS.items()
    ]


def put_waste_metrics(cloudwatch: Any, data: list[dict[str, Any]]) -> None:
    for first in range(0, len(data), MAX_PER_CALL):
        cloudwatch.put_metric_data(
            Namespace=NAMESPACE_WASTE, MetricData=data[first : first + MAX_PER_CALL]
        )
