"""The one place that names CloudWatch namespaces, ports and dimensions.

Everything else (CDK stacks, exporter, analyzers, dashboards) imports these names, so a
rename here is a contract change that every consumer sees at once.
"""

from typing import Final

#: Custom metrics published by the GPU node exporter (EMF through the CloudWatch agent).
NAMESPACE_GPU: Final = "GpuInsights"
#: Metrics published by training scripts through ``agent.training``.
NAMESPACE_TRAINING: Final = "GpuInsights/Training"
#: Counts of findings published by the analyzers.
NAMESPACE_FINDINGS: Final = "GpuInsights/Findings"
#: Namespace of Container Insights (node_gpu_*, pod_gpu_* metrics from DCGM).
NAMESPACE_CONTAINER_INSIGHTS: Final = "ContainerInsights"
#: Namespace the CloudWatch agent uses for host metrics (``nvidia_smi_*`` on EC2 nodes).
NAMESPACE_CW_AGENT: Final = "CWAgent"

#: The CloudWatch agent's Embedded Metric Format listener (TCP and UDP).
EMF_PORT: Final = 25888

#: Dimension names shared by the exporter, alarms and dashboards.
DIM_CLUSTER: Final = "ClusterName"
DIM_NODE: Final = "NodeName"
DIM_GPU_INDEX: Final = "GpuIndex"
DIM_XID_CODE: Final = "XidCode"
DIM_JOB: Final = "JobName"
DIM_KIND: Final = "Kind"
DIM_SEVERITY: Final = "Severity"

#: Where the add-on's CloudWatch agent and Fluent Bit run, and the account they use.
AGENT_NAMESPACE: Final = "amazon-cloudwatch"
AGENT_SERVICE_ACCOUNT: Final = "cloudwatch-agent"


def container_insights_log_group_prefix(cluster_name: str) -> str:
    """Log groups Container Insights writes to: performance, application, host, dataplane."""
    return f"/aws/containerinsights/{cluster_name}"
