"""The EKS control plane's vended metrics, as CloudWatch holds them for the demo's cluster.

"For clusters that are Kubernetes version 1.28 and above, you get CloudWatch vended metrics for
free in the AWS/EKS namespace ... Every metric listed has a frequency of one minute" ("Monitor
cluster data with Amazon CloudWatch", Amazon EKS User Guide,
https://docs.aws.amazon.com/eks/latest/userguide/cloudwatch.html), each with the dimension
``ClusterName`` and the names as aws-cdk-lib spells them (aws-eks/lib/
eks-canned-metrics.generated.js, ``EKSMetrics``): the API server's requests by result
(``apiserver_request_total_4XX``, ``_5XX``, ``_429``: counts, read as a Sum), its p99 latency by
verb (``apiserver_request_duration_seconds_<VERB>_P99``: seconds, read as an Average), the etcd
database's size (``apiserver_storage_size_bytes``: bytes, read as a Maximum) and the scheduler's
queue (``scheduler_pending_pods``, ``scheduler_pending_pods_UNSCHEDULABLE``: pods, a Sum).

The figures are a quiet cluster's minute: a few 4XX (controllers' 404s on objects already gone
and 409 conflicts on updates are routine), no 5XX and no throttling; p99s well under the
Kubernetes API call latency SLOs (1 s for a single object, 30 s for a cluster-wide LIST:
kubernetes/community sig-scalability/slos/api_call_latency.md); an etcd a fraction of its
8 GiB limit (EKS's, cdk/alarms/cluster.py); and no pod pending but in the hours one is
(``pending``). As cli/demo/storage.py writes AWS/EBS and AWS/S3, one datapoint an hour stands
for the hour's minutes: an hour's statistic of it is that minute's figure.
"""

from collections.abc import Container, Iterator
from datetime import UTC, datetime
from typing import Any, Final

NAMESPACE: Final = "AWS/EKS"
DIMENSION: Final = "ClusterName"
#: A quiet minute of each metric, and its unit.
QUIET_MINUTE: Final[dict[str, tuple[float, str]]] = {
    "apiserver_request_total_4XX": (24.0, "Count"),
    "apiserver_request_total_5XX": (0.0, "Count"),
    "apiserver_request_total_429": (0.0, "Count"),
    "apiserver_request_duration_seconds_GET_P99": (0.045, "Seconds"),
    "apiserver_request_duration_seconds_POST_P99": (0.09, "Seconds"),
    "apiserver_request_duration_seconds_PUT_P99": (0.08, "Seconds"),
    "apiserver_request_duration_seconds_PATCH_P99": (0.07, "Seconds"),
    "apiserver_request_duration_seconds_DELETE_P99": (0.085, "Seconds"),
    "apiserver_request_duration_seconds_LIST_P99": (0.6, "Seconds"),
    "apiserver_storage_size_bytes": (210.0 * 2**20, "Bytes"),
    "scheduler_pending_pods": (0.0, "Count"),
    "scheduler_pending_pods_UNSCHEDULABLE": (0.0, "Count"),
}
#: The scheduler's queue in an hour a pod is pending: in the queue, and unschedulable.
PENDING_METRICS: Final = ("scheduler_pending_pods", "scheduler_pending_pods_UNSCHEDULABLE")


def hourly_datums(
    cluster: str, start: float, end: float, pending: Container[int] = ()
) -> Iterator[dict[str, Any]]:
    """PutMetricData's datums: each metric's datapoint at each hour from ``start`` to ``end``
    (epoch seconds); ``pending``: the hours (their start, epoch seconds) a pod waits, one."""
    hour = start - start % 3600
    while hour < end:
        for name, (value, unit) in QUIET_MINUTE.items():
            waiting = name in PENDING_METRICS and int(hour) in pending
            yield {
                "MetricName": name,
                "Dimensions": [{"Name": DIMENSION, "Value": cluster}],
                "Timestamp": datetime.fromtimestamp(hour, UTC),
                "Value": 1.0 if waiting else value,
                "Unit": unit,
            }
        hour += 3600


def put_control_plane(
    cloudwatch: Any, cluster: str, start: float, end: float, pending: Container[int] = ()
) -> int:
    """The control plane's hours written to CloudWatch (1,000 datums a PutMetricData call, its
    documented maximum); the datapoints written."""
    datums = list(hourly_datums(cluster, start, end, pending))
    for first in range(0, len(datums), 1000):
        cloudwatch.put_metric_data(Namespace=NAMESPACE, MetricData=datums[first : first + 1000])
    return len(datums)
