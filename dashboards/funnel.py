"""The GPU-hour funnel hour by hour on the fleet dashboard: paid, allocated and active GPUs in
each hour (an hour's mean GPUs are its GPU-hours), from the live series of either Container
Insights mode. Pure: widgets from the cluster's name and its mode.

- paid: each node's GPUs, summed: Classic's ``node_gpu_limit`` per node (Container-Insights-
  metrics-EKS.html: "The total number of GPU(s) available on the node"); OTel's Kube State
  Metrics ``kube_node_status_capacity{resource="nvidia_com_gpu"}`` per node;
- allocated: the GPUs pods hold: Classic's ``node_gpu_usage_total`` per node ("The number of
  GPU(s) being used by the running pods on the node"), summed; OTel's GPUs whose DCGM series
  carried a pod's labels in the hour (lambdas/shared/dcgm.py);
- active: the GPU-hour attribution's held and working GPU-hours of each day
  (``gpu_hours_held_working`` in ``GpuInsights/Waste``, which the training analyzer publishes
  daily in both modes) over the day's 24 hours: the same active stage as the weekly report's,
  a day's average (the class of an hour needs its job's steps, read once a day).

Productive needs each job's steps and each server's tokens over the day, so it is the weekly
report's (docs/goodput.md); the text widget says so. The Metrics Insights queries have no
GROUP BY: each returns one series, whatever the fleet's size.
"""

from typing import Final

from dashboards.metrics_insights import insights_sql
from dashboards.promql import selector
from dashboards.widgets import (
    Widget,
    expression_row,
    metric_widget,
    promql_widget,
    text,
)
from gpu_insights_agent.contract.metrics import (
    CI_NODE_GPU_LIMIT_METRIC,
    CI_NODE_GPU_LIMIT_SCHEMA,
    DIM_CLUSTER,
    NAMESPACE_CONTAINER_INSIGHTS,
    NAMESPACE_WASTE,
    WASTE_DIMENSIONS,
    GpuMetric,
    WasteMetric,
)
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.shared.dcgm import CLOUDWATCH, DCGM_UTIL, DcgmLabels
from lambdas.shared.kube_state import KSM_CAPACITY, KSM_GPU_RESOURCE, KSM_RESOURCE
from lambdas.shared.promql import quote_label
from lambdas.training_analyzer.gpu_hours.aws import CI_SAMPLES_PER_HOUR

#: Container Insights' GPUs used by a node's running pods (Classic), per node as
#: ``node_gpu_limit`` (Container-Insights-metrics-EKS.html).
CI_NODE_GPU_USAGE_METRIC: Final = "node_gpu_usage_total"
FUNNEL_PERIOD_S: Final = 3600
FUNNEL_PAID: Final = "GPU-hour funnel: paid GPUs each hour"
FUNNEL_ALLOCATED: Final = "GPU-hour funnel: allocated GPUs each hour"
FUNNEL_ACTIVE: Final = "GPU-hour funnel: active GPUs each hour"
ACTIVE_METRIC: Final = GpuMetric.ALLOCATED_POWER_UTILIZATION
FUNNEL_NOTE: Final = (
    "Each hour's GPUs are its GPU-hours. Productive (kept training steps, hours that served "
    "tokens) and each drop by name and price are in the weekly report's funnel."
)


def _per_hour(title: str, metric: str, stage: str, cluster: str) -> Widget:
    """One stage from a per-node Container Insights series: its samples summed over every
    node in each hour, over the samples one node sends an hour (``CI_SAMPLES_PER_HOUR``): the
    hour's mean GPUs, its GPU-hours. One Metrics Insights query a widget."""
    summed = insights_sql(
        NAMESPACE_CONTAINER_INSIGHTS, CI_NODE_GPU_LIMIT_SCHEMA, metric, "SUM",
        [(DIM_CLUSTER, cluster)],
    )  # fmt: skip
    rows = [
        expression_row(summed, id=f"{stage}_sum", visible=False),
        expression_row(
            f"{stage}_sum * 3600 / {CI_SAMPLES_PER_HOUR} / PERIOD({stage}_sum)",
            id=stage, label=f"{stage} GPUs",
        ),
    ]  # fmt: skip
    return metric_widget(title, rows, period=FUNNEL_PERIOD_S, width=6)


def _active(cluster: str) -> Widget:
    """Active GPUs, the day's average: the GPU-hour attribution's held and working hours of the
    day (``gpu_hours_held_working``, per namespace, summed) over its 24 hours: the same active
    stage as the weekly report's, in either mode."""
    working = insights_sql(
        NAMESPACE_WASTE, WASTE_DIMENSIONS, str(WasteMetric.HELD_WORKING), "SUM",
        [(DIM_CLUSTER, cluster)],
    )  # fmt: skip
    rows = [
        expression_row(working, id="working", visible=False),
        expression_row("working / 24", id="active", label="active GPUs, the day's average"),
    ]
    return metric_widget(FUNNEL_ACTIVE, rows, period=86_400, width=6)


def _classic(cluster: str) -> list[Widget]:
    return [
        _per_hour(FUNNEL_PAID, CI_NODE_GPU_LIMIT_METRIC, "paid", cluster),
        _per_hour(FUNNEL_ALLOCATED, CI_NODE_GPU_USAGE_METRIC, "allocated", cluster),
        _active(cluster),
    ]


def otel_queries(cluster: str, labels: DcgmLabels = CLOUDWATCH) -> dict[str, str]:
    """The paid and allocated stages' PromQL."""
    node = quote_label(labels.node)
    gpu = f"{node}, {quote_label(labels.gpu)}"
    capacity = selector(KSM_CAPACITY, [(labels.cluster, cluster), (KSM_RESOURCE, KSM_GPU_RESOURCE)])
    # Held: a pod's labels on the GPU's series (``pod!=""``, as the GPU-hour attribution reads).
    series = selector(DCGM_UTIL, [(labels.cluster, cluster)])
    held = series[:-1] + f', {quote_label(labels.pod)}!=""}}'
    return {
        "paid": f"sum(max by ({node}) (max_over_time({capacity}[1h])))",
        "allocated": f"count(count by ({gpu}) (count_over_time({held}[1h])))",
    }


def _otel(cluster: str, labels: DcgmLabels) -> list[Widget]:
    """Classic's widgets in their places, paid and allocated read with PromQL."""
    queries = otel_queries(cluster, labels)
    return [
        promql_widget(FUNNEL_PAID, queries["paid"], label="paid GPUs", width=6),
        promql_widget(FUNNEL_ALLOCATED, queries["allocated"], label="allocated GPUs", width=6),
        _active(cluster),
    ]


def funnel_widgets(
    cluster: str, mode: ContainerInsightsMode, *, labels: DcgmLabels = CLOUDWATCH
) -> list[Widget]:
    """The funnel's row: the stages' chart(s) and a note on productive."""
    classic = mode is ContainerInsightsMode.CLASSIC
    charts = _classic(cluster) if classic else _otel(cluster, labels)
    return [*charts, text(FUNNEL_NOTE, width=24 - sum(w.width for w in charts), height=6)]
