"""A fail-slow page's culprit node, recorded for the lemon-node score: one EMF line the
function prints once the page is sent, counting 1 on the metric ``fail_slow_culprits``
(namespace ``GpuInsights``, dimensions ClusterName and NodeName). The weekly report sums 30 days
of it per node (lambdas/weekly_report/aws.py ``fail_slow_counts``).

Why a metric printed, not an object or an item: Lambda sends what a function prints to its log
group, and CloudWatch Logs extracts the metrics of a line in the embedded metric format with no
API call and no permission beyond the log group's ("Embedded metric format ... you can generate
EMF logs ... by using print", CloudWatch User Guide,
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Generation.html),
so nothing the notifier may be refused stands between a page and its record, and the report's
role already reads the namespace. "Data points with a period of 3600 seconds (1 hour) are
available for 455 days (15 months)" (GetMetricData, Amazon CloudWatch API Reference,
https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_GetMetricData.html): 30
days are read back whole.

The node comes from series labels (outside the product): only a Kubernetes node name is a
dimension (a DNS subdomain: xid_fields.py ``K8S_SUBDOMAIN``); any other is refused, with why,
and nothing is recorded. The page is sent all the same: the line is printed after it.
"""

from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_NODE,
    FAIL_SLOW_CULPRIT_METRIC,
    NAMESPACE_GPU,
)
from gpu_insights_agent.emf.document import emf_document, encode
from lambdas.notifier.notification import Incident
from lambdas.notifier.xid_fields import K8S_SUBDOMAIN


class CulpritRecordError(ValueError):
    """A culprit that cannot be recorded (its node is no Kubernetes node name)."""


def culprit_line(incident: Incident, now_ms: int) -> str | None:
    """The EMF line recording the page's culprit node; None where the page names none.
    ``CulpritRecordError`` where its node cannot be a metric's dimension."""
    node = incident.culprit_node
    if node is None:
        return None
    if not K8S_SUBDOMAIN.fullmatch(node):
        raise CulpritRecordError(
            f"{incident.key}: culprit node {node[:80]!r} is no Kubernetes node name; not recorded"
        )
    return encode(
        emf_document(
            namespace=NAMESPACE_GPU,
            timestamp_ms=now_ms,
            dimension_sets=[(DIM_CLUSTER, DIM_NODE)],
            dimensions={DIM_CLUSTER: incident.cluster, DIM_NODE: node},
            metrics={FAIL_SLOW_CULPRIT_METRIC: 1.0},
            units={FAIL_SLOW_CULPRIT_METRIC: "Count"},
        )
    )
