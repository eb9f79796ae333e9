"""CloudWatch agent configurations for GPU nodes.

Two documents come from here:

* the configuration for EC2 or self-managed GPU nodes that run the agent directly, with the
  ``nvidia_gpu`` section (the agent maps it onto its internal ``nvidia_smi`` plugin; the
  official schema lists that internal name, and ``nvidia_gpu`` validates through the schema's
  generic metric definition);
* the agent section of the ``amazon-cloudwatch-observability`` add-on, which turns on enhanced
  Container Insights with accelerated-compute (GPU) metrics and opens the EMF listener that the
  GPU exporter sends to.

Both are plain dicts so that tests can validate them against the agent's JSON schema.
"""

from collections.abc import Sequence
from typing import Any, Final

from gpu_insights_agent.contract.metrics import NAMESPACE_CW_AGENT

#: nvidia_gpu measurements that say whether a GPU works: power drawn first, then utilization,
#: memory, temperature and the SM clock (a throttled GPU drops its SM clock). The agent has no
#: power-limit measurement (``power_limit`` fails ``fetch-config`` with "measurement name
#: power_limit is invalid"); the enforced limit comes from the GPU exporter instead, as
#: ``gpu_power_limit_watts`` and ``gpu_power_utilization`` in the ``GpuInsights`` namespace.
DEFAULT_GPU_MEASUREMENTS: Final[tuple[str, ...]] = (
    "power_draw",
    "utilization_gpu",
    "utilization_memory",
    "memory_used",
    "memory_total",
    "temperature_gpu",
    "clocks_current_sm",
)

#: Every measurement the agent's translator accepts for nvidia_gpu (its nvidia_smi allowlist,
#: ``Registered_Metrics_Linux`` in aws/amazon-cloudwatch-agent
#: translator/translate/metrics/config/registered_metrics.go); any other name makes the agent
#: refuse the whole configuration.
KNOWN_GPU_MEASUREMENTS: Final[frozenset[str]] = frozenset(
    {
        *DEFAULT_GPU_MEASUREMENTS,
        "memory_free",
        "fan_speed",
        "pcie_link_gen_current",
        "pcie_link_width_current",
        "encoder_stats_session_count",
        "encoder_stats_average_fps",
        "encoder_stats_average_latency",
        "clocks_current_graphics",
        "clocks_current_memory",
        "clocks_current_video",
    }
)

#: EC2 dimensions the agent can append; InstanceType lets alarms compare like GPUs.
INSTANCE_DIMENSIONS: Final[dict[str, str]] = {
    "InstanceId": "${aws:InstanceId}",
    "InstanceType": "${aws:InstanceType}",
    "AutoScalingGroupName": "${aws:AutoScalingGroupName}",
    "ImageId": "${aws:ImageId}",
}


#: The agent schema's bounds for metrics_collection_interval, in seconds.
MIN_INTERVAL_SECONDS: Final = 1
MAX_INTERVAL_SECONDS: Final = 172_800


class AgentConfigError(ValueError):
    """A requested agent configuration the agent would reject or silently ignore."""


def _check_interval(interval_seconds: int) -> None:
    if not MIN_INTERVAL_SECONDS <= interval_seconds <= MAX_INTERVAL_SECONDS:
        raise AgentConfigError(
            f"collection interval {interval_seconds} s is outside "
            f"{MIN_INTERVAL_SECONDS}..{MAX_INTERVAL_SECONDS} seconds"
        )


def gpu_node_agent_config(
    *,
    interval_seconds: int = 60,
    measurements: Sequence[str] = DEFAULT_GPU_MEASUREMENTS,
) -> dict[str, Any]:
    """Agent configuration for an EC2 or self-managed GPU node.

    Metrics land in ``CWAgent`` as ``nvidia_smi_<measurement>`` with the instance dimensions
    and the GPU's index. The EMF listener is opened too, so the GPU exporter works on nodes
    that run the agent directly.
    """
    _check_interval(interval_seconds)
    unknown = sorted(set(measurements) - KNOWN_GPU_MEASUREMENTS)
    if unknown:
        hint = (
            "; the agent has no power limit: the GPU exporter publishes gpu_power_limit_watts"
            if "power_limit" in unknown
            else ""
        )
        raise AgentConfigError(
            f"unknown nvidia_gpu measurement(s) {unknown}; known: "
            f"{sorted(KNOWN_GPU_MEASUREMENTS)}{hint}"
        )
    if not measurements:
        raise AgentConfigError("nvidia_gpu needs at least one measurement")
    metrics: dict[str, Any] = {
        "namespace": NAMESPACE_CW_AGENT,
        "append_dimensions": dict(INSTANCE_DIMENSIONS),
        # One series per instance type as well, so a fleet-wide view needs no metric math.
        "aggregation_dimensions": [["InstanceType"], ["InstanceId"]],
        "metrics_collected": {
            "nvidia_gpu": {
                "measurement": list(measurements),
                "metrics_collection_interval": interval_seconds,
            }
        },
    }
    return {
        "agent": {"metrics_collection_interval": interval_seconds},
        "metrics": metrics,
        "logs": {"metrics_collected": {"emf": {}}},
    }


def container_insights_agent_config(*, cluster_name: str) -> dict[str, Any]:
    """The agent section of the observability add-on: enhanced Container Insights with GPU
    metrics from DCGM, plus the EMF listener on port 25888 for the GPU exporter."""
    return {
        "logs": {
            "metrics_collected": {
                "kubernetes": {
                    "cluster_name": cluster_name,
                    "enhanced_container_insights": True,
                    "accelerated_compute_metrics": True,
                },
                "emf": {},
            }
        }
    }
