"""The cluster's alarms (cdk/alarms/cluster.py): the control plane's on AWS/EKS in both modes,
and OTel mode's pending GPU pods on Kube State Metrics. The query's behaviour on a real engine:
tests/functional/cli/backtest/test_promql_cluster_alarms.py."""

from pathlib import Path

import pytest

from cdk.alarms.catalog import AlarmSettings, deployed_alarms, gpu_alarms, promql_alarms
from cdk.alarms.cluster import (
    CLUSTER_ALARM_KINDS,
    GPU_PENDING,
    ClusterAlarmSettings,
    ClusterAlarmSettingsError,
    control_plane_table,
    gpu_pending_query,
)
from cdk.alarms.model import Comparison, MetricStat, MissingData, Severity
from cdk.alarms.nodes import NODE_ALARM_KINDS
from cdk.alarms.promql import PromQLQuery
from cdk.settings import Settings, SettingsError
from lambdas.notifier.limits import MAX_FACT_CHARS

DOCS = Path(__file__).resolve().parents[4] / "docs" / "alarms.md"
CLASSIC = AlarmSettings(cluster_name="train", jobs=None, cluster=ClusterAlarmSettings())
OTEL = AlarmSettings(cluster_name="train", jobs=None, promql=True, cluster=ClusterAlarmSettings())


def _by_key(settings: AlarmSettings) -> dict:  # type: ignore[type-arg]
    return {a.key: a for a in deployed_alarms(settings)}


def test_the_control_plane_alarms_read_aws_eks_with_the_slos_thresholds() -> None:
    """EKS's vended metrics, dimension ClusterName, the statistic its table gives each
    (cloudwatch.html); latency against Kubernetes' SLOs: 1 s single-object, 30 s LIST
    (sig-scalability/slos/api_call_latency.md); etcd at 80% of 8 GiB (clusters.html)."""
    alarms = _by_key(CLASSIC)
    latency = "apiserver_request_duration_seconds_{}_P99"
    expected = {
        "control-plane-5xx": ("apiserver_request_total_5XX", "Sum", 10, 60, 10),
        "control-plane-throttling": ("apiserver_request_total_429", "Sum", 1, 60, 15),
        "control-plane-get-latency": (latency.format("GET"), "Average", 1, 300, 3),
        "control-plane-list-latency": (latency.format("LIST"), "Average", 30, 300, 3),
        "control-plane-post-latency": (latency.format("POST"), "Average", 1, 300, 3),
        "control-plane-put-latency": (latency.format("PUT"), "Average", 1, 300, 3),
        "control-plane-patch-latency": (latency.format("PATCH"), "Average", 1, 300, 3),
        "control-plane-delete-latency": (latency.format("DELETE"), "Average", 1, 300, 3),
        "control-plane-etcd-size": ("apiserver_storage_size_bytes", "Maximum", 6_871_947_674, 300, 1),  # noqa: E501
        "control-plane-unschedulable-pods": ("scheduler_pending_pods_UNSCHEDULABLE", "Sum", 0, 60, 15),  # noqa: E501
    }  # fmt: skip
    for key, (metric, stat, threshold, period, periods) in expected.items():
        spec = alarms[key]
        assert spec.metric == MetricStat("AWS/EKS", metric, (("ClusterName", "train"),), stat)
        assert (spec.threshold, spec.period_s) == (threshold, period), key
        assert spec.evaluation_periods == spec.datapoints_to_alarm == periods, key
        assert spec.severity is Severity.WARNING
        assert spec.missing_data is MissingData.NOT_BREACHING
        assert not spec.multi_series  # one series: its own state change is the page
    assert set(CLUSTER_ALARM_KINDS) == {*expected, GPU_PENDING, *NODE_ALARM_KINDS}
    assert alarms["control-plane-unschedulable-pods"].comparison is Comparison.GREATER
    # Every page says what to look at, not only what crossed.
    assert "kubectl describe pod" in alarms["control-plane-unschedulable-pods"].description
    assert "apiserver_storage_objects" in alarms["control-plane-etcd-size"].description


def test_every_page_holds_its_whole_description() -> None:
    """A page's action is the alarm's description, cut past the notifier's field limit."""
    for spec in deployed_alarms(OTEL):
        if spec.kind in CLUSTER_ALARM_KINDS:
            assert len(spec.description) <= MAX_FACT_CHARS, spec.key


def test_they_are_in_both_modes_and_the_backtest_replays_them() -> None:
    for settings in (CLASSIC, OTEL):
        keys = {a.key for a in gpu_alarms(settings)}
        assert {k for k in CLUSTER_ALARM_KINDS if k not in (GPU_PENDING, *NODE_ALARM_KINDS)} <= keys
    # Off: AlarmSettings' default, as the job alarms' tests and the library's callers expect.
    assert not any(a.key.startswith("control-plane") for a in deployed_alarms(
        AlarmSettings(cluster_name="train", jobs=None)
    ))  # fmt: skip


def test_a_provisioned_tiers_etcd_limit_moves_the_threshold() -> None:
    settings = AlarmSettings(
        cluster_name="train", jobs=None, cluster=ClusterAlarmSettings(etcd_limit_gib=16)
    )
    etcd = _by_key(settings)["control-plane-etcd-size"]
    assert etcd.threshold == round(0.8 * 16 * 2**30) == 13_743_895_347
    assert "80% of its 16 GiB limit" in etcd.description


def test_the_pending_gpu_pod_alarm_is_otel_modes_only_with_its_fleet_count() -> None:
    assert GPU_PENDING not in {a.kind for a in promql_alarms(CLASSIC)}
    otel = {a.key: a for a in promql_alarms(OTEL)}
    pending = otel[GPU_PENDING]
    assert isinstance(pending.metric, PromQLQuery)
    assert pending.metric.pending_period_s == 15 * 60
    assert (pending.metric.evaluation_interval_s, pending.metric.recovery_period_s) == (60, 300)
    count = otel[f"{GPU_PENDING}-at-cap"].metric
    assert isinstance(count, PromQLQuery)
    assert count.query == f"count({pending.metric.query}) >= 90"


def test_the_pending_query_joins_gpu_requests_to_unschedulable_pods_by_pod() -> None:
    by = '"@resource.k8s.cluster.name", "@resource.k8s.namespace.name", "@resource.k8s.pod.name"'
    assert gpu_pending_query("train", 20).query == (
        f'count_values by ({by}) ("gpus_requested", '
        f'(sum by ({by}) (last_over_time({{__name__="kube_pod_container_resource_requests", '
        f'"@resource.k8s.cluster.name"="train", resource="nvidia_com_gpu"}}[2m])) > 0) '
        f"and on ({by}) (max by ({by}) (last_over_time({{__name__="
        f'"kube_pod_status_unschedulable", "@resource.k8s.cluster.name"="train"}}[2m])) == 1))'
    )
    # A cluster name is quoted as a PromQL string (lambdas/shared/promql.quote_string).
    assert '"@resource.k8s.cluster.name"="a\\"b"' in gpu_pending_query('a"b', 20).query


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"pending_minutes": 4}, "gpu_pending_alarm_minutes=4 must be 5 to 1440"),
        ({"pending_minutes": 1441}, "gpu_pending_alarm_minutes=1441 must be 5 to 1440"),
        ({"etcd_limit_gib": 0.5}, "etcd_limit_gib=0.5 must be 1 to 1024 GiB"),
    ],
)
def test_bad_settings_are_named(kwargs: dict, problem: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ClusterAlarmSettingsError, match=problem):
        ClusterAlarmSettings(**kwargs)
    with pytest.raises(SettingsError, match=problem.split(" must", maxsplit=1)[0]):
        Settings(
            cluster_name="train",
            **{
                {"pending_minutes": "gpu_pending_alarm_minutes"}.get(k, k): v
                for k, v in kwargs.items()
            },
        )


def test_the_app_settings_turn_them_on_and_off() -> None:
    on = Settings(cluster_name="train", gpu_pending_alarm_minutes=30).alarm_settings()
    assert on.cluster == ClusterAlarmSettings(pending_minutes=30)
    off = Settings(cluster_name="train", control_plane_alarms=False).alarm_settings()
    assert off.cluster is None


def test_the_docs_show_the_control_plane_table() -> None:
    assert control_plane_table() in DOCS.read_text()
    assert gpu_pending_query("train", 15).query in DOCS.read_text()
