"""CloudWatch alarms from the alarm definitions (alarms.catalog), and one composite per
cluster that sums up GPU fleet health.

The alarms have no actions: their state changes, and their contributors', reach people only
through the notifier (its EventBridge rule, cdk/constructs/notifier.py), which names the
GPU and pages once. An SNS alarm action would send CloudWatch's raw alarm JSON beside it."""

from collections.abc import Sequence
from typing import Any, Final

from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from cdk.alarms.cluster import CLUSTER_ALARM_KINDS
from cdk.alarms.jobs import JOB_ALARM_KINDS
from cdk.alarms.model import AlarmSpec, BreachCount, Difference, InsightsQuery, MetricStat
from cdk.alarms.promql import PromQLQuery
from cdk.alarms.serving_classic import CLASSIC_SERVING_ALARM_KINDS
from cdk.alarms.serving_promql import SERVING_ALARM_KINDS
from cdk.outputs import FLEET_HEALTH_ALARM_KEY
from gpu_insights_agent.contract.resource_names import alarm_name

#: Alarm kinds that page a workload or the cluster, not a GPU: out of the fleet health
#: composite.
NOT_GPU_HEALTH: Final = frozenset(
    (*JOB_ALARM_KINDS, *SERVING_ALARM_KINDS, *CLASSIC_SERVING_ALARM_KINDS, *CLUSTER_ALARM_KINDS)
)


def _metric_stat(stat: MetricStat, period_s: int) -> dict[str, Any]:
    return {
        "metric": {
            "namespace": stat.namespace,
            "metricName": stat.metric,
            "dimensions": [{"name": k, "value": v} for k, v in stat.dimensions],
        },
        "period": period_s,
        "stat": stat.stat,
    }


def alarm_metric_properties(spec: AlarmSpec) -> dict[str, Any]:
    """The CfnAlarm properties that say what the alarm watches."""
    metric = spec.metric
    if isinstance(metric, MetricStat):
        return {
            "namespace": metric.namespace,
            "metric_name": metric.metric,
            "dimensions": [{"name": k, "value": v} for k, v in metric.dimensions],
            "statistic": metric.stat,
            "period": spec.period_s,
        }
    if isinstance(metric, InsightsQuery):
        return {
            "metrics": [
                {
                    "id": "q1",
                    "expression": metric.sql(),
                    "period": spec.period_s,
                    "returnData": True,
                }
            ]
        }
    if isinstance(metric, BreachCount):
        # The kind's query, and the count of its breaching series as the one series the alarm
        # watches (an alarm's Metrics "must return a single time series", PutMetricAlarm).
        return {
            "metrics": [
                {
                    "id": "q1",
                    "expression": metric.query.sql(),
                    "period": spec.period_s,
                    "returnData": False,
                },
                {"id": "e1", "expression": metric.expression("q1"), "returnData": True},
            ]
        }
    assert isinstance(metric, Difference)
    return {
        "metrics": [
            {
                "id": "m1",
                "metricStat": _metric_stat(metric.minuend, spec.period_s),
                "returnData": False,
            },
            {
                "id": "m2",
                "metricStat": _metric_stat(metric.subtrahend, spec.period_s),
                "returnData": False,
            },
            {"id": "e1", "expression": metric.expression(), "returnData": True},
        ]
    }


def _description(spec: AlarmSpec, missing: str) -> str:
    return f"[{spec.severity}] {spec.alarm_kind}: {spec.description} {missing}"[:1024]


def _promql_alarm(
    scope: Construct, cluster_name: str, spec: AlarmSpec, query: PromQLQuery
) -> cloudwatch.CfnAlarm:
    """A PromQL alarm: ``EvaluationCriteria.PromQLCriteria`` and ``EvaluationInterval``, and
    no metric, threshold or comparison ("Create an alarm using a PromQL query", CLI example:
    ``--evaluation-criteria '{"PromQLCriteria":{"Query":...}}' --evaluation-interval 60``,
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Create_PromQL_Alarm.html)."""
    return cloudwatch.CfnAlarm(
        scope,
        spec.key,
        alarm_name=spec.alarm_name(cluster_name),
        alarm_description=_description(
            spec,
            f"A contributor the query stops returning is OK after {query.recovery_period_s} s "
            f"({spec.missing_data_reason}).",
        ),
        evaluation_criteria=cloudwatch.CfnAlarm.EvaluationCriteriaProperty(
            prom_ql_criteria=cloudwatch.CfnAlarm.AlarmPromQLCriteriaProperty(
                query=query.query,
                pending_period=query.pending_period_s,
                recovery_period=query.recovery_period_s,
            )
        ),
        evaluation_interval=query.evaluation_interval_s,
    )


class GpuAlarms(Construct):
    """Attributes: ``alarms`` (key -> CfnAlarm), ``composite``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_name: str,
        specs: Sequence[AlarmSpec],
    ) -> None:
        super().__init__(scope, construct_id)
        self.alarms: dict[str, cloudwatch.CfnAlarm] = {}
        for spec in specs:
            missing = f"Missing data: {spec.missing_data} ({spec.missing_data_reason})."
            if isinstance(spec.metric, PromQLQuery):
                self.alarms[spec.key] = _promql_alarm(self, cluster_name, spec, spec.metric)
                continue
            self.alarms[spec.key] = cloudwatch.CfnAlarm(
                self,
                spec.key,
                alarm_name=spec.alarm_name(cluster_name),
                # "[severity] kind:" first, so a reader maps any shard's alarm to its kind and
                # topic without a lookup; contributors name cluster, node and GPU.
                alarm_description=_description(spec, missing),
                comparison_operator=str(spec.comparison),
                threshold=spec.threshold,
                evaluation_periods=spec.evaluation_periods,
                datapoints_to_alarm=spec.datapoints_to_alarm,
                treat_missing_data=str(spec.missing_data),
                **alarm_metric_properties(spec),
            )
        # The GPUs' health: the training job alarms page their jobs, the serving alarms their
        # models and the cluster's alarms its control plane and pods; they stay out of it (their
        # fleet count alarms too).
        names = [
            self.alarms[spec.key].alarm_name
            for spec in specs
            if (spec.counts or spec.kind) not in NOT_GPU_HEALTH
        ]
        self.composite = cloudwatch.CfnCompositeAlarm(
            self,
            "FleetHealth",
            alarm_name=alarm_name(cluster_name, FLEET_HEALTH_ALARM_KEY),
            alarm_rule=" OR ".join(f'ALARM("{name}")' for name in names),
            alarm_description=(
                f"GPU fleet health of {cluster_name}: in ALARM while any GPU alarm is. It sends "
                "nothing itself (the notifier pages each GPU); put it on dashboards."
            ),
            actions_enabled=False,
        )
        for alarm in self.alarms.values():
            self.composite.node.add_dependency(alarm)  # every alarm: deploys in one order
