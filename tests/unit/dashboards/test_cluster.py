"""The cluster dashboard: the control plane's metrics with the alarms' lines (built from the
real alarm catalog), and the pods and nodes each mode can read."""

from typing import Any

from cdk.alarms.annotations import control_plane_lines
from cdk.alarms.cluster import ClusterAlarmSettings, control_plane_alarms
from cli.backtest.dashboards import body_rule_errors
from cli.backtest.promql_widgets import series_bound
from dashboards.cluster import GPU_NODES_DOWN, GPU_PODS_PENDING, cluster_dashboard
from dashboards.widgets import CHART_WIDGET, chart_queries
from lambdas.shared.container_insights_mode import ContainerInsightsMode

OTEL, CLASSIC = ContainerInsightsMode.OTEL, ContainerInsightsMode.CLASSIC
LINES = control_plane_lines(control_plane_alarms("train", ClusterAlarmSettings()))


def _widgets(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {w["properties"]["title"]: w for w in body["widgets"] if "title" in w["properties"]}


def _lines(widget: dict[str, Any]) -> list[tuple[float, str]]:
    drawn = widget["properties"].get("annotations", {}).get("horizontal", [])
    return [(round(a["value"], 3), a["label"]) for a in drawn]


def test_every_control_plane_alarm_is_drawn_on_the_widget_of_its_metric() -> None:
    widgets = _widgets(cluster_dashboard("train", "us-east-1", CLASSIC, LINES, etcd_limit_gib=8))
    assert _lines(widgets["API requests: 5XX a minute"]) == [(10, "control-plane-5xx alarm: >= 10")]
    assert _lines(widgets["API requests throttled (429) a minute"]) == [
        (1, "control-plane-throttling alarm: >= 1")
    ]
    assert _lines(widgets["API requests: 4XX a minute"]) == []  # no alarm reads it
    # Five verbs' alarms at 1 s share one line; LIST's is 30 s.
    assert _lines(widgets["API p99 latency, one object (s)"]) == [
        (1, "control-plane-get-latency alarm: > 1")
    ]
    assert _lines(widgets["API p99 latency, LIST (s)"]) == [
        (30, "control-plane-list-latency alarm: > 30")
    ]
    # 80% of 8 GiB, in the widget's GiB, beside the limit.
    assert _lines(widgets["etcd database size (GiB)"]) == [
        (6.4, "control-plane-etcd-size alarm: >= 6.4 GiB"),
        (8, "etcd limit 8 GiB"),
    ]
    assert _lines(widgets["Pods pending in the scheduler"]) == [
        (0, "control-plane-unschedulable-pods alarm: > 0")
    ]
    # Every alarm's metric is on the dashboard, read with the alarm's statistic and period.
    drawn = {label for w in widgets.values() for _, label in _lines(w)}
    kinds = {spec.alarm_kind for spec in control_plane_alarms("train", ClusterAlarmSettings())}
    verbs = {k for k in kinds if k.endswith("-latency") and k != "control-plane-list-latency"}
    assert {label.split(" alarm")[0] for label in drawn if "alarm" in label} == (
        kinds - verbs | {"control-plane-get-latency"}
    )


def test_a_larger_etcd_limit_moves_both_lines() -> None:
    lines = control_plane_lines(
        control_plane_alarms("train", ClusterAlarmSettings(etcd_limit_gib=16))
    )
    widgets = _widgets(cluster_dashboard("train", "us-east-1", OTEL, lines, etcd_limit_gib=16))
    assert [v for v, _ in _lines(widgets["etcd database size (GiB)"])] == [12.8, 16]


def test_otel_mode_counts_gpu_pods_and_nodes_from_kube_state_metrics() -> None:
    body = cluster_dashboard("train", "us-east-1", OTEL, LINES, gpu_pending_minutes=15)
    assert body_rule_errors(body) == []
    charts = {
        w["properties"]["title"]: chart_queries(w)
        for w in body["widgets"]
        if w["type"] == CHART_WIDGET
    }
    pods = charts[f"{GPU_PODS_PENDING}; alarm: one unschedulable 15 min"]
    nodes = charts[GPU_NODES_DOWN]
    assert [q["label"] for q in pods] == ["pending", "unschedulable"]
    assert [q["label"] for q in nodes] == ["not Ready", "cordoned"]
    for q in pods + nodes:
        assert series_bound(q["query"]) == 1  # a count
        assert 'resource="nvidia_com_gpu"' in q["query"]  # GPU pods and nodes only
    assert 'phase="Pending"' in pods[0]["query"]
    assert "kube_pod_status_unschedulable" in pods[1]["query"]
    assert 'condition="Ready", status="true"}[2m])) == 0)' in nodes[0]["query"]
    assert "kube_node_spec_unschedulable" in nodes[1]["query"]


def test_classic_mode_reads_container_insights_cluster_counts_and_no_promql() -> None:
    body = cluster_dashboard("train", "us-east-1", CLASSIC, LINES)
    assert body_rule_errors(body) == []
    assert all(w["type"] != CHART_WIDGET for w in body["widgets"])
    widgets = _widgets(body)
    nodes = widgets["Nodes: all, Ready, failed"]["properties"]["metrics"]
    assert [(row[0], row[1], row[2:4]) for row in nodes] == [
        ("ContainerInsights", "cluster_node_count", ["ClusterName", "train"]),
        ("ContainerInsights", "node_status_condition_ready", ["ClusterName", "train"]),
        ("ContainerInsights", "cluster_failed_node_count", ["ClusterName", "train"]),
    ]
    pending = widgets["Pods pending (all pods: Classic has no GPU request beside the status)"]
    assert pending["properties"]["metrics"][0][1] == "pod_status_pending"
