"""OTel mode's GPU node and crash-looping GPU pod alarms (cdk/alarms/nodes.py): their settings,
defaults and validation, and what they deploy. Their queries on a real engine:
tests/functional/cli/backtest/test_promql_node_alarms.py."""

import pytest

from cdk.alarms.catalog import AlarmSettings, promql_alarms
from cdk.alarms.cluster import ClusterAlarmSettings
from cdk.alarms.model import Severity
from cdk.alarms.nodes import (
    GPU_NODE_CORDONED,
    GPU_NODE_HARDWARE,
    GPU_NODE_NOT_READY,
    GPU_POD_CRASH_LOOP,
    NODE_ALARM_KINDS,
    NodeAlarmSettings,
    NodeAlarmSettingsError,
    hardware_query,
    not_ready_query,
)
from cdk.alarms.promql import PromQLQuery
from cdk.settings import Settings, SettingsError
from lambdas.notifier.limits import MAX_FACT_CHARS

OTEL = AlarmSettings(cluster_name="train", jobs=None, promql=True, cluster=ClusterAlarmSettings())
CLASSIC = AlarmSettings(cluster_name="train", jobs=None, cluster=ClusterAlarmSettings())


def test_otel_mode_deploys_the_four_with_their_pending_periods_and_fleet_counts() -> None:
    alarms = {a.key: a for a in promql_alarms(OTEL)}
    pending = {}
    for kind in NODE_ALARM_KINDS:
        query = alarms[kind].metric
        assert isinstance(query, PromQLQuery)
        assert (query.evaluation_interval_s, query.recovery_period_s) == (60, 300)
        pending[kind] = query.pending_period_s
        assert f"{kind}-at-cap" in alarms
        assert len(alarms[kind].description) <= MAX_FACT_CHARS  # the page holds it whole
    # NotReady 5 minutes (Kubernetes evicts at 300 s), cordoned an hour, the agent's GPU
    # condition 1 minute, a crash loop 10 (two back-offs at the kubelet's 5-minute cap).
    assert pending == {
        GPU_NODE_NOT_READY: 300,
        GPU_NODE_CORDONED: 3600,
        GPU_NODE_HARDWARE: 60,
        GPU_POD_CRASH_LOOP: 600,
    }
    assert alarms[GPU_NODE_NOT_READY].severity is Severity.CRITICAL
    assert alarms[GPU_NODE_HARDWARE].severity is Severity.CRITICAL
    assert alarms[GPU_NODE_CORDONED].severity is Severity.WARNING
    assert not {a.kind for a in promql_alarms(CLASSIC)} & set(NODE_ALARM_KINDS)


def test_the_not_ready_query_keeps_gpu_nodes_whose_ready_is_not_true() -> None:
    by = '"@resource.k8s.cluster.name", "@resource.k8s.node.name"'
    assert not_ready_query("train", 5).query == (
        f'count_values by ({by}) ("node_gpus", (max by ({by}) (last_over_time('
        '{__name__="kube_node_status_capacity", "@resource.k8s.cluster.name"="train", '
        'resource="nvidia_com_gpu"}[2m])) > 0) and on '
        f"({by}) (max by ({by}) (last_over_time("
        '{__name__="kube_node_status_condition", "@resource.k8s.cluster.name"="train", '
        'condition="Ready", status!="true"}[2m])) == 1))'
    )
    assert 'condition="AcceleratedHardwareReady", status="false"' in hardware_query("t", 1).query
    # A cluster name is quoted as a PromQL string (lambdas/shared/promql.quote_string).
    assert '"@resource.k8s.cluster.name"="a\\"b"' in not_ready_query('a"b', 5).query


@pytest.mark.parametrize(
    ("key", "field"),
    [
        ("gpu_node_not_ready_minutes", "not_ready_minutes"),
        ("gpu_node_cordoned_minutes", "cordoned_minutes"),
        ("gpu_node_hardware_minutes", "hardware_minutes"),
        ("gpu_pod_crash_loop_minutes", "crash_loop_minutes"),
    ],
)
@pytest.mark.parametrize("minutes", [0, 1441])
def test_a_bad_setting_is_named(key: str, field: str, minutes: int) -> None:
    problem = f"{key}={minutes} must be 1 to 1440"
    with pytest.raises(NodeAlarmSettingsError, match=problem):
        NodeAlarmSettings(**{field: minutes})
    with pytest.raises(SettingsError, match=f"setting {problem}"):
        Settings(cluster_name="train", **{key: minutes})  # type: ignore[arg-type]


def test_the_app_settings_reach_the_alarms() -> None:
    settings = Settings(
        cluster_name="train", gpu_node_cordoned_minutes=120, gpu_pod_crash_loop_minutes=30
    ).alarm_settings()
    assert settings.cluster is not None
    assert settings.cluster.nodes == NodeAlarmSettings(cordoned_minutes=120, crash_loop_minutes=30)
    alarms = {a.key: a for a in promql_alarms(settings)}
    assert "for 120 minutes" in alarms[GPU_NODE_CORDONED].description
    off = Settings(cluster_name="train", control_plane_alarms=False).alarm_settings()
    assert not {a.kind for a in promql_alarms(off)} & set(NODE_ALARM_KINDS)
