"""Every dashboard: metrics that exist, widgets that fit the grid, bodies CloudWatch accepts."""

import json
import re
from typing import Any

import pytest

from cli.backtest.insights import parse
from dashboards import bodies
from dashboards.bodies import FINDINGS_METRIC, MAX_BODY_BYTES, all_dashboards, encode
from dashboards.widgets import GRID_COLUMNS, Widget, layout
from gpu_insights_agent.contract.metrics import GpuMetric, TrainingMetric, WasteMetric
from lambdas.shared.container_insights_mode import ContainerInsightsMode

#: AWS metrics the dashboards may name, each documented in its service's CloudWatch metrics
#: page (Amazon EBS, Amazon S3 request metrics).
DOCUMENTED_AWS = {
    "AWS/EBS": {
        "VolumeReadOps",
        "VolumeWriteOps",
        "VolumeReadBytes",
        "VolumeWriteBytes",
        "VolumeQueueLength",
        "VolumeIdleTime",
        "VolumeThroughputExceededCheck",
        "VolumeIOPSExceededCheck",
        "BurstBalance",
    },
    # Container Insights with enhanced observability, per GPU (ClusterName, NodeName,
    # InstanceId, InstanceType, GpuDevice): Container-Insights-metrics-enhanced-EKS.html; and
    # cluster-wide ({ClusterName}) pods and nodes: container-insights-metrics-EKS.html
    "ContainerInsights": {
        "node_gpu_utilization",
        "node_gpu_memory_used",
        "node_gpu_temperature",
        "node_gpu_power_draw",
        "pod_status_pending",
        "node_status_condition_ready",
        "cluster_node_count",
        "cluster_failed_node_count",
        # Per node (ClusterName, InstanceId, NodeName): "The total number of GPU(s) available
        # on the node", "The number of GPU(s) being used by the running pods on the node"
        # (Container-Insights-metrics-EKS.html): the GPU-hour funnel's paid and allocated.
        "node_gpu_limit",
        "node_gpu_usage_total",
    },
    # The EKS control plane ("Monitor cluster data with Amazon CloudWatch", Amazon EKS User
    # Guide, https://docs.aws.amazon.com/eks/latest/userguide/cloudwatch.html)
    "AWS/EKS": {
        "apiserver_request_total_4XX",
        "apiserver_request_total_5XX",
        "apiserver_request_total_429",
        *(
            f"apiserver_request_duration_seconds_{v}_P99"
            for v in ("GET", "LIST", "POST", "PUT", "PATCH", "DELETE")
        ),
        "apiserver_storage_size_bytes",
        "scheduler_pending_pods",
        "scheduler_pending_pods_UNSCHEDULABLE",
    },
    "AWS/S3": {
        "FirstByteLatency",
        "TotalRequestLatency",
        "AllRequests",
        "4xxErrors",
        "5xxErrors",
        "BytesDownloaded",
    },
}
CONTRACT = {
    "GpuInsights": {str(m) for m in GpuMetric},
    "GpuInsights/Training": {str(m) for m in TrainingMetric},
    "GpuInsights/Findings": {FINDINGS_METRIC},
    "GpuInsights/Waste": {str(m) for m in WasteMetric},
    **DOCUMENTED_AWS,
}
SEARCH = re.compile(r"\{([^,}]+)[^}]*\} MetricName=\\?\"([^\"\\]+)\\?\"")

#: Classic's bodies: every widget a Metrics Insights or metric query (OTel's PromQL widgets:
#: test_sources.py, test_structure.py).
DASHBOARDS = all_dashboards(
    "train",
    ["train-data"],
    ["arn:aws:cloudwatch:us-east-1:123456789012:alarm:gpu-insights-train-x"],
    "us-east-1",
    mode=ContainerInsightsMode.CLASSIC,
)


def _named_metrics(body: dict[str, Any]) -> set[tuple[str, str]]:
    found = set()
    for widget in body["widgets"]:
        for row in widget["properties"].get("metrics", []):
            if isinstance(row[0], str):  # [namespace, metric, dimension pairs..., options]
                found.add((row[0], row[1]))
            for item in row:
                if isinstance(item, dict) and "expression" in item:
                    expression = item["expression"]
                    if expression.startswith("SELECT"):
                        query = parse(expression)
                        found.add((query.namespace, query.metric))
                    found |= set(SEARCH.findall(expression))
    for variable in body.get("variables", []):
        found |= set(SEARCH.findall(variable["search"]))
    return found


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_every_metric_is_in_the_contract_or_documented_by_aws(name: str) -> None:
    named = _named_metrics(DASHBOARDS[name])
    assert named, "a dashboard without metrics"
    for namespace, metric in named:
        assert metric in CONTRACT.get(namespace, set()), (namespace, metric)


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_widgets_fit_the_grid_and_do_not_overlap(name: str) -> None:
    cells: set[tuple[int, int]] = set()
    for w in DASHBOARDS[name]["widgets"]:
        assert w["x"] >= 0
        assert w["x"] + w["width"] <= GRID_COLUMNS
        mine = {
            (x, y)
            for x in range(w["x"], w["x"] + w["width"])
            for y in range(w["y"], w["y"] + w["height"])
        }
        assert not mine & cells, f"{w['properties'].get('title')} overlaps"
        cells |= mine


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_bodies_are_json_under_the_size_limit(name: str) -> None:
    text = encode(DASHBOARDS[name])
    assert len(text.encode()) < MAX_BODY_BYTES
    assert json.loads(text)["widgets"]


def test_the_node_picker_is_a_pattern_variable_found_in_every_node_query() -> None:
    body = DASHBOARDS["gpu-insights-train-gpu-node"]
    (variable,) = body["variables"]
    assert (variable["type"], variable["inputType"]) == ("pattern", "select")
    queries = [
        item["expression"]
        for w in body["widgets"]
        for row in w["properties"].get("metrics", [])
        for item in row
        if isinstance(item, dict)
    ]
    assert len(queries) == 9
    for sql in queries:  # a pattern variable rewrites its pattern inside each query
        assert f"NodeName = '{variable['pattern']}'" in sql


def test_a_row_wider_than_the_grid_is_refused() -> None:
    with pytest.raises(ValueError, match="wider than 24"):
        layout([[Widget("text", 16, 2, {}), Widget("text", 9, 2, {})]])


def test_an_oversized_body_is_refused() -> None:
    with pytest.raises(ValueError, match="over CloudWatch's limit"):
        encode({"widgets": [{"type": "text", "properties": {"markdown": "x" * MAX_BODY_BYTES}}]})


@pytest.mark.parametrize(("interval", "period"), [(10, 60), (60, 60), (90, 120), (600, 600)])
def test_count_widgets_hold_at_least_one_sample_per_gpu_whatever_the_interval(
    interval: int, period: int
) -> None:
    """n * interval / PERIOD(n) counts GPUs only when the period holds one exporter interval."""
    body = bodies.gpu_fleet("train", "us-east-1", exporter_interval_s=interval)
    counts = [
        w["properties"]
        for w in body["widgets"]
        if w["type"] == "metric"
        and w["properties"].get("view") == "singleValue"
        and any("PERIOD(n)" in str(row) for row in w["properties"]["metrics"])
    ]
    assert len(counts) == 3  # reporting, in use, lost
    assert {c["period"] for c in counts} == {period}


def test_the_ebs_widgets_rank_the_clusters_volumes_alone_within_the_dashboard_limits() -> None:
    """EBS metrics name no cluster: the EBS widgets draw the volumes the storage analyzer
    wrote (a hidden row each, then one SORT of them), never a query over the Region's. A
    widget holds at most 500 rows and a dashboard 2,500 metrics
    (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/CloudWatch-Dashboard-Body-Structure.html,
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_limits.html)."""
    synthesized = json.dumps(bodies.storage("train", (), "us-east-1"))
    assert "AWS/EBS" not in synthesized  # before the analyzer's first run: nothing, not the Region
    volumes = [f"vol-{i:017x}" for i in range(700)]
    body = bodies.storage("train", ["b"], "us-east-1", volume_ids=volumes)
    ebs = [
        w["properties"]
        for w in body["widgets"]
        if w["type"] == "metric" and w["properties"]["title"].startswith("EBS")
    ]
    assert len(ebs) == 5
    metric_widgets = [w["properties"] for w in body["widgets"] if w["type"] == "metric"]
    assert sum(len(p["metrics"]) for p in metric_widgets) <= 2500
    for properties in ebs:
        *hidden, (sort,) = properties["metrics"]
        assert len(hidden) == 480
        assert len(properties["metrics"]) <= 500
        assert all(row[0] == "AWS/EBS" and row[-1]["visible"] is False for row in hidden)
        assert sort["expression"].startswith("SORT(METRICS(), ")
        assert sort["expression"].endswith(", DESC, 10)")
    assert "480 of the cluster's 700 volumes" in json.dumps(body)
