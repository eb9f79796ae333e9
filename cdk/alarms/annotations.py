"""The alarms' thresholds as lines on the dashboards: one ``AlarmLine`` per per-GPU alarm kind
(its shards share one threshold), for the widgets that show the metric it reads. The CDK app
and the demo pass them to the dashboard bodies, which import nothing from cdk/."""

from collections.abc import Sequence

from cdk.alarms.cluster import NAMESPACE_EKS
from cdk.alarms.model import AlarmSpec, Comparison, InsightsQuery, MetricStat
from cdk.alarms.serving_promql import KV_CACHE_FULL, ServingAlarmSettings
from dashboards.serving import ServingTargets
from dashboards.widgets import AlarmLine
from gpu_insights_agent.contract.metrics import GpuMetric

_EXPORTER_METRICS = frozenset(str(m) for m in GpuMetric)

#: The side of the line where the alarm breaches (cdk-monitoring-constructs'
#: ``getAlarmingRangeShade``: above for greater-than, below for less-than).
_FILL = {
    Comparison.GREATER: "above",
    Comparison.GREATER_OR_EQUAL: "above",
    Comparison.LESS: "below",
    Comparison.LESS_OR_EQUAL: "below",
}
_SYMBOL = {
    Comparison.GREATER: ">",
    Comparison.GREATER_OR_EQUAL: ">=",
    Comparison.LESS: "<",
    Comparison.LESS_OR_EQUAL: "<=",
}


def alarm_lines(specs: Sequence[AlarmSpec]) -> tuple[AlarmLine, ...]:
    """A line for each alarm kind that reads one exporter metric per GPU (a Metrics Insights
    query of the exporter's metric), labelled with the kind: what the alarm compares, in the
    metric's unit. Cluster-level alarms (XIDs, the silence check) and Container Insights'
    stand-in for the low-power alarm draw none: no widget shows their series."""
    lines: dict[str, AlarmLine] = {}
    for spec in specs:
        query = spec.metric
        if not isinstance(query, InsightsQuery) or query.metric not in _EXPORTER_METRICS:
            continue
        lines.setdefault(
            spec.alarm_kind,
            AlarmLine(
                metric=query.metric,
                function=query.function,
                period_s=spec.period_s,
                threshold=spec.threshold,
                label=f"{spec.alarm_kind} alarm: {query.function} "
                f"{_SYMBOL[spec.comparison]} {spec.threshold:g}",
                fill=_FILL[spec.comparison],
            ),
        )
    return tuple(lines.values())


def control_plane_lines(specs: Sequence[AlarmSpec]) -> tuple[AlarmLine, ...]:
    """A line for each control-plane alarm (an AWS/EKS metric read with a statistic over a
    period: cdk/alarms/cluster.py), for the cluster dashboard's widget that reads the same
    metric, statistic and period (``dashboards.cluster.drawn``)."""
    return tuple(
        AlarmLine(
            metric=spec.metric.metric,
            function=spec.metric.stat,
            period_s=spec.period_s,
            threshold=spec.threshold,
            label=f"{spec.alarm_kind} alarm: {_SYMBOL[spec.comparison]} {spec.threshold:g}",
            fill=_FILL[spec.comparison],
        )
        for spec in specs
        if isinstance(spec.metric, MetricStat) and spec.metric.namespace == NAMESPACE_EKS
    )


def serving_targets(settings: ServingAlarmSettings | None) -> ServingTargets:
    """The deployed serving alarms' thresholds for the serving dashboards' titles; none where
    no serving alarm is deployed (``settings`` None: Classic mode, or turned off)."""
    if settings is None:
        return ServingTargets()
    return ServingTargets(
        ttft_p99_s=settings.ttft_p99_seconds,
        ttft_p99_targets=settings.ttft_p99_targets,
        e2e_p99_s=settings.e2e_p99_seconds,
        e2e_p99_targets=settings.e2e_p99_targets,
        waiting_requests=settings.waiting_requests,
        waiting_minutes=settings.waiting_minutes,
        kv_cache_full=KV_CACHE_FULL,
        error_percent=settings.error_percent,
    )
