"""A typed model of the ``amazon-cloudwatch-observability`` add-on's configuration values.

EKS takes these values as one JSON string; building it from a model (rather than writing
JSON by hand) means a test can parse it back and check each part, and a typo in a key is a
type error instead of a silently ignored value.
"""

import json
from dataclasses import dataclass, field
from typing import Any

from cdk.node_config.cloudwatch_agent_config import container_insights_agent_config


@dataclass(frozen=True, kw_only=True)
class Toleration:
    """A Kubernetes toleration; no key with ``Exists`` tolerates every taint."""

    key: str | None = None
    operator: str = "Exists"
    effect: str | None = None

    def to_dict(self) -> dict[str, str]:
        values = {"key": self.key, "operator": self.operator, "effect": self.effect}
        return {name: value for name, value in values.items() if value is not None}


TOLERATE_ALL = (Toleration(),)


@dataclass(frozen=True, kw_only=True)
class ObservabilityAddonConfiguration:
    """What this project sets on the add-on: the agent config, container logs, tolerations."""

    cluster_name: str
    container_logs: bool = True
    tolerations: tuple[Toleration, ...] = TOLERATE_ALL
    agent_config: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def for_gpu_cluster(
        cls,
        *,
        cluster_name: str,
        container_logs: bool,
        tolerate_all_taints: bool,
        gpu_taint_keys: tuple[str, ...],
    ) -> "ObservabilityAddonConfiguration":
        """Enhanced Container Insights with GPU metrics and the EMF listener on."""
        tolerations = (
            TOLERATE_ALL
            if tolerate_all_taints
            else tuple(Toleration(key=key) for key in gpu_taint_keys)
        )
        return cls(
            cluster_name=cluster_name,
            container_logs=container_logs,
            tolerations=tolerations,
            agent_config=container_insights_agent_config(cluster_name=cluster_name),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": {"config": self.agent_config},
            "containerLogs": {"enabled": self.container_logs},
            "tolerations": [toleration.to_dict() for toleration in self.tolerations],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
