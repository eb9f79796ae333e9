"""The count of refused log events as a metric: one EMF line the function prints.

Lambda sends what a function prints to its log group, and CloudWatch Logs extracts the metrics
of a line in the embedded metric format with no API call and no permission beyond the log
group's ("Embedded metric format ... you can generate EMF logs ... by using print", CloudWatch
User Guide, https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Generation.html).
The line is printed on every batch, zero included, so the metric's alarm sees data.
"""

from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    NAMESPACE_GPU,
    NOTIFIER_REFUSED_METRIC,
)
from gpu_insights_agent.emf.document import emf_document, encode


def refused_line(cluster: str, refused: int, now_ms: int) -> str:
    """The EMF line of one batch's refused events, per cluster."""
    return encode(
        emf_document(
            namespace=NAMESPACE_GPU,
            timestamp_ms=now_ms,
            dimension_sets=[(DIM_CLUSTER,)],
            dimensions={DIM_CLUSTER: cluster},
            metrics={NOTIFIER_REFUSED_METRIC: float(refused)},
            units={NOTIFIER_REFUSED_METRIC: "Count"},
        )
    )
