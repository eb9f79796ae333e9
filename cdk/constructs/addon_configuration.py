"""A typed model of the ``amazon-cloudwatch-observability`` add-on's configuration values.

EKS takes these values as one JSON string; building it from a model (rather than writing
JSON by hand) means a test can parse it back and check each part, and a typo in a key is a
type error instead of a silently ignored value.

The two Container Insights modes are two configurations of the same chart (its values.yaml):

- Classic: the agent's ``logs.metrics_collected.kubernetes`` with enhanced observability and
  accelerated compute metrics (DCGM's GPU series as ``pod_gpu_*`` and ``node_gpu_*``).
- OTel: ``otelContainerInsights.enabled`` ("Controls the OTLP-based Container Insights
  pipeline"; the console installs the add-on "with otelContainerInsights.enabled=true",
  "Enable OTel Container Insights from the console",
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/container-insights-eks-otel-console.html)
  and ``containerInsights.enabled: false`` ("When set to false, the kubernetes key is removed
  from the agent config, disabling legacy CI metrics collection"; left on, "both pipelines are
  independent" and the cluster pays for both). Its OTLP log pipelines
  (``otelContainerInsights.logs``) stay off: Fluent Bit (``containerLogs``) already writes the
  host log group the XID fallback filter reads, and both would ingest every log line twice.

Both keep the agent's EMF listener, which the GPU exporter sends to. In Classic mode with
``serving_metrics`` the agent also scrapes the inference servers' counters and gauges
(cdk/node_config/serving_prometheus.py): ``agent.prometheus.config`` with its target allocator,
and the agent's ``logs.metrics_collected.prometheus``.
"""

import json
from dataclasses import dataclass, field
from typing import Any

from cdk.node_config.cloudwatch_agent_config import container_insights_agent_config
from cdk.node_config.serving_prometheus import prometheus_agent_section, scrape_config
from cdk.node_config.tolerations import TOLERATE_ALL, Toleration, taint_tolerations
from lambdas.shared.container_insights_mode import ContainerInsightsMode

#: The agent configuration of OTel mode: only the EMF listener (tcp:25888) for the exporter.
EMF_ONLY_AGENT_CONFIG: dict[str, Any] = {"logs": {"metrics_collected": {"emf": {}}}}


@dataclass(frozen=True, kw_only=True)
class ObservabilityAddonConfiguration:
    """What this project sets on the add-on: the agent config, container logs, tolerations."""

    cluster_name: str
    container_logs: bool = True
    tolerations: tuple[Toleration, ...] = TOLERATE_ALL
    agent_config: dict[str, Any] = field(default_factory=dict)
    mode: ContainerInsightsMode = ContainerInsightsMode.CLASSIC
    #: The chart's ``agent.prometheus`` (Classic mode's serving scrape), None: not set.
    prometheus: dict[str, Any] | None = None

    @classmethod
    def for_gpu_cluster(
        cls,
        *,
        cluster_name: str,
        container_logs: bool,
        tolerate_all_taints: bool,
        gpu_taint_keys: tuple[str, ...],
        mode: ContainerInsightsMode = ContainerInsightsMode.CLASSIC,
        serving_metrics: bool = False,
    ) -> "ObservabilityAddonConfiguration":
        """Container Insights in ``mode`` with GPU metrics, and the EMF listener on; in Classic
        mode with ``serving_metrics``, the inference servers' scrape as well (OTel mode's
        add-on collects them itself)."""
        tolerated = taint_tolerations(
            tolerate_all_taints=tolerate_all_taints, gpu_taint_keys=gpu_taint_keys
        )
        classic = mode is ContainerInsightsMode.CLASSIC
        agent_config = (
            container_insights_agent_config(cluster_name=cluster_name)
            if classic
            else json.loads(json.dumps(EMF_ONLY_AGENT_CONFIG))
        )
        prometheus = None
        if classic and serving_metrics:
            agent_config["logs"]["metrics_collected"]["prometheus"] = prometheus_agent_section(
                cluster_name
            )
            prometheus = {"config": scrape_config(), "targetAllocator": {"enabled": True}}
        return cls(
            cluster_name=cluster_name,
            container_logs=container_logs,
            tolerations=tolerated,
            agent_config=agent_config,
            mode=mode,
            prometheus=prometheus,
        )

    def to_dict(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            "agent": {
                "config": self.agent_config,
                **({"prometheus": self.prometheus} if self.prometheus is not None else {}),
            },
            "containerLogs": {"enabled": self.container_logs},
            "tolerations": [toleration.to_dict() for toleration in self.tolerations],
        }
        if self.mode is ContainerInsightsMode.OTEL:
            values["containerInsights"] = {"enabled": False}
            values["otelContainerInsights"] = {"enabled": True, "logs": {"enabled": False}}
        return values

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
