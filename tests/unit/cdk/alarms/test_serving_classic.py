"""Classic mode's serving alarms: Metrics Insights on the counters and gauges the agent keeps
(cdk/node_config/serving_prometheus.py declares them), per replica of a model, from the same
settings as OTel mode's, and none where the agent does not scrape the servers."""

import re
from typing import Any

from cdk.alarms.catalog import AlarmSettings, deployed_alarms, gpu_alarms
from cdk.alarms.model import BreachCount, Comparison, InsightsQuery
from cdk.alarms.serving_classic import (
    CLASSIC_SERVING_ALARM_KINDS,
    classic_serving_alarms,
)
from cdk.alarms.serving_promql import ServingAlarmSettings
from cdk.constructs.gpu_alarms import NOT_GPU_HEALTH
from cdk.node_config.serving_prometheus import metric_declarations
from cdk.settings import Settings, settings_from_context
from gpu_insights_agent.contract.serving import Server

SETTINGS = ServingAlarmSettings(waiting_requests=20, waiting_minutes=10)


def _by_key(alarms: list[Any]) -> dict[str, Any]:
    return {a.key: a for a in alarms}


def test_a_vllm_replica_with_more_than_20_waiting_for_10_minutes_pages() -> None:
    spec = _by_key(classic_serving_alarms("serve", SETTINGS))["serving-requests-waiting-vllm"]
    assert isinstance(spec.metric, InsightsQuery)
    assert spec.metric.sql() == (
        'SELECT MIN("vllm:num_requests_waiting") FROM SCHEMA("ContainerInsights/Prometheus", '
        "ClusterName, Namespace, PodName, FullPodName, model_name) WHERE ClusterName = 'serve' "
        "GROUP BY ClusterName, Namespace, PodName, FullPodName, model_name ORDER BY MIN() DESC"
    )
    # More than 20 requests (a whole number) is at least 21, in every minute of 10.
    assert (spec.threshold, spec.comparison) == (21, Comparison.GREATER_OR_EQUAL)
    assert (spec.period_s, spec.evaluation_periods, spec.datapoints_to_alarm) == (60, 10, 10)
    assert spec.severity == "warning"


def test_each_server_with_a_queue_has_its_own_alarm_on_its_own_name() -> None:
    alarms = _by_key(classic_serving_alarms("serve", SETTINGS))
    assert {k: a.metric.metric for k, a in alarms.items()} == {
        "serving-requests-waiting-vllm": "vllm:num_requests_waiting",
        "serving-requests-waiting-nim-llm": "num_requests_waiting",
        "serving-requests-waiting-triton": "nv_inference_pending_request_count",
        "serving-requests-waiting-ray-serve": "ray_serve_deployment_queued_queries",
        "serving-kv-cache-full-vllm": "vllm:num_preemptions_total",
    }
    # Triton's model label is ``model``, Ray Serve's ``deployment``: each query groups by its own.
    assert alarms["serving-requests-waiting-triton"].metric.group_by[-1] == "model"
    assert alarms["serving-requests-waiting-ray-serve"].metric.group_by[-1] == "deployment"
    assert tuple(alarms) == CLASSIC_SERVING_ALARM_KINDS


def test_every_alarmed_name_is_one_the_agent_is_told_to_keep_with_those_dimensions() -> None:
    """An alarm on a metric the EMF declarations do not make would never have data."""
    declared = {
        (d["label_matcher"], selector, tuple(d["dimensions"][0]))
        for d in metric_declarations()
        for selector in d["metric_selectors"]
    }
    for spec in classic_serving_alarms("serve", SETTINGS):
        server = next(s for s in Server if spec.key.endswith(f"-{s}"))
        query = spec.metric
        assert isinstance(query, InsightsQuery)
        assert (
            f"^{re.escape(str(server))}$",
            f"^{re.escape(query.metric)}$",
            query.schema,
        ) in declared, spec.key


def test_preemptions_in_five_minutes_page_the_replica_whose_kv_cache_is_full() -> None:
    spec = _by_key(classic_serving_alarms("serve", SETTINGS))["serving-kv-cache-full-vllm"]
    assert spec.metric.function == "SUM"
    assert (spec.period_s, spec.evaluation_periods, spec.threshold) == (300, 1, 1)
    assert spec.comparison is Comparison.GREATER_OR_EQUAL
    assert "KV cache had no room" in spec.description


def test_classic_deploys_them_with_fleet_counts_otel_mode_does_not() -> None:
    classic = AlarmSettings(cluster_name="serve", classic_serving=SETTINGS)
    keys = {a.key: a for a in gpu_alarms(classic)}
    for kind in CLASSIC_SERVING_ALARM_KINDS:
        assert kind in keys
        cap = keys[f"{kind}-at-cap"]
        assert isinstance(cap.metric, BreachCount)
        assert cap.metric.threshold == keys[kind].threshold
    otel = AlarmSettings(cluster_name="serve", promql=True, classic_serving=SETTINGS)
    assert not any(a.key in CLASSIC_SERVING_ALARM_KINDS for a in deployed_alarms(otel))


def test_they_page_workloads_not_gpu_health() -> None:
    assert set(CLASSIC_SERVING_ALARM_KINDS) <= NOT_GPU_HEALTH


def _read(context: dict[str, Any]) -> Settings:
    return settings_from_context({"cluster_name": "serve", "region": "eu-west-1", **context})


def test_settings_turn_them_on_in_classic_by_default_and_off_with_either_switch() -> None:
    classic = _read({"container_insights_mode": "classic", "serving_waiting_requests": "20"})
    assert classic.serving_metrics is True
    assert classic.alarm_settings().classic_serving == ServingAlarmSettings(waiting_requests=20)
    for off in ({"serving_metrics": "false"}, {"serving_alarms": "false"}):
        settings = _read({"container_insights_mode": "classic", **off})
        assert settings.alarm_settings().classic_serving is None
    otel = _read({"container_insights_mode": "otel"})
    assert otel.alarm_settings().classic_serving is None
