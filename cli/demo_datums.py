"""Datums the demo writes as CloudWatch stores them: an hour of samples as one statistic set,
and the dimension sets of Container Insights' GPU metrics (``node_gpu_*``, ``pod_gpu_*``)."""

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from contract.metrics import DIM_CLUSTER, DIM_GPU_DEVICE, DIM_NAMESPACE, DIM_NODE, DIM_POD_NAME


def statistic_set(
    name: str,
    dims: dict[str, str],
    hour_start: float,
    values: Sequence[float],
    unit: str = "None",
    repeat: int = 1,
) -> dict[str, Any]:
    """The hour's samples (each value ``repeat`` times) as one PutMetricData statistic set,
    stamped mid-hour."""
    return {
        "MetricName": name,
        "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
        "Timestamp": datetime.fromtimestamp(hour_start + 1800, UTC),
        "StatisticValues": {
            "SampleCount": repeat * len(values),
            "Sum": repeat * sum(values),
            "Minimum": min(values),
            "Maximum": max(values),
        },
        "Unit": unit,
    }


def ci_node_dimensions(cluster: str, device: str, instance_id: str, node: str) -> dict[str, str]:
    return {
        DIM_CLUSTER: cluster,
        DIM_GPU_DEVICE: device,
        "InstanceId": instance_id,
        "InstanceType": "p5.48xlarge",
        DIM_NODE: node,
    }


def ci_pod_dimensions(cluster: str, device: str, namespace: str, pod: str) -> dict[str, str]:
    return {
        DIM_CLUSTER: cluster,
        "FullPodName": pod,
        DIM_GPU_DEVICE: device,
        DIM_NAMESPACE: namespace,
        DIM_POD_NAME: pod,
    }
