"""The cluster dashboard, both modes: the EKS control plane under the jobs (AWS/EKS metrics,
with the control-plane alarms' thresholds drawn), then the pods and nodes the GPUs wait on, read
where each mode has them.

Control plane: "For clusters that are Kubernetes version 1.28 and above, you get CloudWatch
vended metrics for free in the AWS/EKS namespace ... Every metric listed has a frequency of one
minute" ("Monitor cluster data with Amazon CloudWatch", Amazon EKS User Guide,
https://docs.aws.amazon.com/eks/latest/userguide/cloudwatch.html), each with the dimension
``ClusterName`` (aws-cdk-lib aws-eks ``EKSMetrics``); the statistic of each widget is the one
the page lists and the alarm reads (cdk/alarms/cluster.py ``CONTROL_PLANE``), so an alarm's
line (``AlarmLine``, built by the CDK app from the deployed alarms) compares with the widget.

OTel mode reads Kube State Metrics with PromQL (lambdas/shared/kube_state.py: GPU pods pending
and unschedulable, GPU nodes not Ready or cordoned). Classic mode has no KSM: Container
Insights' cluster-wide ``pod_status_pending``, ``node_status_condition_ready``,
``cluster_node_count`` and ``cluster_failed_node_count``, each published with the dimension set
{ClusterName} (aws/amazon-cloudwatch-agent's EMF metric declarations; "Amazon EKS and
Kubernetes Container Insights metrics", container-insights-metrics-EKS.html), none of them per
GPU: Classic publishes no pod's GPU request with its pending status.
"""

from collections.abc import Sequence
from typing import Any, Final

from dashboards.body import body
from dashboards.widgets import (
    AlarmLine,
    Widget,
    expression_row,
    metric_row,
    metric_widget,
    promql_chart,
    text,
)
from gpu_insights_agent.contract.metrics import DIM_CLUSTER, NAMESPACE_CONTAINER_INSIGHTS
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.shared.kube_state import (
    KSM_CAPACITY,
    KSM_GPU_RESOURCE,
    KSM_NODE_CONDITION,
    KSM_NODE_UNSCHEDULABLE,
    KSM_POD_PHASE,
    KSM_RESOURCE,
    gpu_pods_waiting,
    ksm_selector,
)
from lambdas.shared.promql import quote_label

CLUSTER_DASHBOARD: Final = "cluster"
NAMESPACE_EKS: Final = "AWS/EKS"
GIB: Final = 2**30
#: The API verbs whose p99 EKS publishes (``apiserver_request_duration_seconds_<VERB>_P99``);
#: LIST apart, held to the cluster-wide LIST's latency service level, not one object's.
SINGLE_OBJECT_VERBS: Final = ("GET", "POST", "PUT", "PATCH", "DELETE")
#: Kube State Metrics read over two of the add-on's 30 s scrapes, as the pending-pod alarm.
KSM_WINDOW: Final = "2m"
GPU_PODS_PENDING: Final = "GPU pods pending"
GPU_NODES_DOWN: Final = "GPU nodes not Ready or cordoned"


def drawn(
    lines: Sequence[AlarmLine], metrics: Sequence[str], stat: str, period_s: int
) -> list[dict[str, Any]]:
    """The lines of the alarms that read one of ``metrics`` with ``stat`` over ``period_s``,
    as the widget does; one per threshold (the verbs' latency alarms share theirs)."""
    seen: dict[float, dict[str, Any]] = {}
    for line in lines:
        if line.metric in metrics and (line.function, line.period_s) == (stat, period_s):
            seen.setdefault(
                line.threshold, {"value": line.threshold, "label": line.label, "fill": line.fill}
            )
    return list(seen.values())


def _eks(
    title: str,
    metrics: Sequence[str],
    stat: str,
    period_s: int,
    lines: Sequence[AlarmLine],
    cluster: str,
    *,
    width: int = 8,
) -> Widget:
    rows = [
        metric_row(NAMESPACE_EKS, m, [(DIM_CLUSTER, cluster)], stat=stat, id=f"m{i}", visible=True)
        for i, m in enumerate(metrics)
    ]
    annotations = drawn(lines, metrics, stat, period_s)
    return metric_widget(
        title, rows, period=period_s, width=width, stat=stat, annotations=annotations
    )


def _etcd(cluster: str, lines: Sequence[AlarmLine], limit_gib: float | None) -> Widget:
    """The etcd database's size in GiB, with its limit and the alarm's share of it."""
    metric = "apiserver_storage_size_bytes"
    # The alarm's threshold is in bytes: drawn, and named, in the widget's GiB.
    annotations = [
        {**a, "value": a["value"] / GIB, "label": f"{a['label'].rsplit(' ', 1)[0]} "
         f"{a['value'] / GIB:.3g} GiB"}
        for a in drawn(lines, [metric], "Maximum", 300)
    ]  # fmt: skip
    if limit_gib is not None:
        annotations.append({"value": limit_gib, "label": f"etcd limit {limit_gib:g} GiB"})
    return metric_widget(
        "etcd database size (GiB)",
        [
            metric_row(NAMESPACE_EKS, metric, [(DIM_CLUSTER, cluster)], stat="Maximum", id="b"),
            expression_row(f"b / {GIB}", id="gib", label="GiB"),
        ],
        period=300,
        width=8,
        annotations=annotations,
    )


def _otel_rows(cluster: str, labels: DcgmLabels, pending_minutes: int | None) -> list[Widget]:
    """Kube State Metrics' GPU pods waiting and GPU nodes down, counted with PromQL."""
    node = (labels.cluster, labels.node)
    by = ", ".join(quote_label(n) for n in node)

    def latest(metric: str, **matchers: str) -> str:
        series = ksm_selector(metric, cluster, labels, **matchers)
        return f"max by ({by}) (last_over_time({series}[{KSM_WINDOW}]))"

    gpu_node = f"({latest(KSM_CAPACITY, **{KSM_RESOURCE: KSM_GPU_RESOURCE})} > 0)"
    not_ready = f"({latest(KSM_NODE_CONDITION, condition='Ready', status='true')} == 0)"
    cordoned = f"({latest(KSM_NODE_UNSCHEDULABLE)} == 1)"
    alarm = (
        f"; alarm: one unschedulable {pending_minutes} min" if pending_minutes is not None else ""
    )
    return [
        promql_chart(
            GPU_PODS_PENDING + alarm,
            [
                (f"count({gpu_pods_waiting(cluster, KSM_WINDOW, labels, waiting=KSM_POD_PHASE)})",
                 "pending"),
                (f"count({gpu_pods_waiting(cluster, KSM_WINDOW, labels)})", "unschedulable"),
            ],
            width=12,
        ),
        promql_chart(
            GPU_NODES_DOWN,
            [
                (f"count({not_ready} and on ({by}) {gpu_node})", "not Ready"),
                (f"count({cordoned} and on ({by}) {gpu_node})", "cordoned"),
            ],
            width=12,
        ),
    ]  # fmt: skip


def _classic_rows(cluster: str) -> list[Widget]:
    """Container Insights' cluster-wide pod and node counts (one sample a pod or node a
    minute: a minute's Sum counts them)."""
    c = [(DIM_CLUSTER, cluster)]

    def ci(metric: str, stat: str, id: str) -> list[Any]:
        return metric_row(NAMESPACE_CONTAINER_INSIGHTS, metric, c, stat=stat, id=id, visible=True)

    return [
        metric_widget(
            "Pods pending (all pods: Classic has no GPU request beside the status)",
            [ci("pod_status_pending", "Sum", "p")],
            period=60,
            width=12,
        ),
        metric_widget(
            "Nodes: all, Ready, failed",
            [
                ci("cluster_node_count", "Maximum", "n"),
                ci("node_status_condition_ready", "Sum", "r"),
                ci("cluster_failed_node_count", "Maximum", "f"),
            ],
            period=60,
            width=12,
        ),
    ]


def cluster_dashboard(
    cluster: str,
    region: str,
    mode: ContainerInsightsMode,
    lines: Sequence[AlarmLine] = (),
    *,
    etcd_limit_gib: float | None = None,
    gpu_pending_minutes: int | None = None,
    labels: DcgmLabels = CLOUDWATCH,
) -> dict[str, Any]:
    """The control plane's requests, errors, latencies, etcd size and scheduler queue (the
    alarms' thresholds drawn: ``lines``, the etcd limit ``etcd_limit_gib``), then the GPU pods
    and nodes the mode can read."""
    eks: dict[str, Any] = {"lines": lines, "cluster": cluster}
    latency = "apiserver_request_duration_seconds_{}_P99"
    mode_rows = (
        _otel_rows(cluster, labels, gpu_pending_minutes)
        if mode is ContainerInsightsMode.OTEL
        else _classic_rows(cluster)
    )
    return body(
        [
            [
                text(
                    f"# Cluster {cluster}\nThe EKS control plane (AWS/EKS, a minute at a "
                    "time, Kubernetes 1.28 and later) with its alarms' thresholds, then the "
                    "pods waiting for GPUs and the GPU nodes that cannot take them."
                )
            ],
            [
                _eks("API requests: 4XX a minute", ["apiserver_request_total_4XX"], "Sum", 60,
                     **eks),
                _eks("API requests: 5XX a minute", ["apiserver_request_total_5XX"], "Sum", 60,
                     **eks),
                _eks("API requests throttled (429) a minute", ["apiserver_request_total_429"],
                     "Sum", 60, **eks),
            ],
            [
                _eks("API p99 latency, one object (s)",
                     [latency.format(v) for v in SINGLE_OBJECT_VERBS], "Average", 300, **eks),
                _eks("API p99 latency, LIST (s)", [latency.format("LIST")], "Average", 300,
                     **eks),
                _etcd(cluster, lines, etcd_limit_gib),
            ],
            [
                _eks("Pods pending in the scheduler",
                     ["scheduler_pending_pods", "scheduler_pending_pods_UNSCHEDULABLE"], "Sum",
                     60, **eks, width=24),
            ],
            mode_rows,
        ],
        region,
    )  # fmt: skip
