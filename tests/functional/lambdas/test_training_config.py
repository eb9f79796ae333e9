"""The low_power_percent setting reaches the GPU-hour attribution: the training analyzer's
real handler, with the environment its construct is given for that setting
(cdk/function_configs.py), classes the same GPU-hours by it, against moto."""

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cdk.function_configs import training_config
from cdk.settings import Settings
from cli.demo.storage import environment
from gpu_insights_agent.contract.metrics import training_log_group
from lambdas.shared.aws_clients import client
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.training_analyzer import handler as training_handler

CLUSTER = "train"
BUCKET = "reports"
#: 01:00 UTC today: the run attributes yesterday, whole (handler.attributed_day).
RUN_AT = time.time() // 86_400 * 86_400 + 3600
DAY = RUN_AT - 3600 - 86_400
#: Two hours of yesterday in which one GPU drew 27% of its 700 W limit (189 W).
HOURS = (DAY + 10 * 3600, DAY + 11 * 3600)
LIMIT_W = 700.0
POWER_PERCENT = 27.0
#: A JupyterHub-style notebook: a StatefulSet's pod, which Container Insights names by the
#: pod's own name ("if owner.Kind == ci.StatefulSet { podName = pod.Name }",
#: amazon-contributing/opentelemetry-collector-contrib
#: receiver/awscontainerinsightreceiver/internal/stores/podstore.go addPodOwnersAndPodName);
#: FullPodName is the pod's name too.
POD = "nb-alice-0"
NAMESPACE = "research"
NONE = {"not_held": 0.0, "held_working": 0.0, "held_not_working": 0.0, "lost_or_faulted": 0.0}


def _put(
    cw: Any, namespace: str, metric: str, dims: dict[str, str], step: int, value: float
) -> None:
    """One datapoint every ``step`` seconds over ``HOURS``."""
    stamps = [t for first in HOURS for t in range(int(first), int(first) + 3600, step)]
    for at in range(0, len(stamps), 1000):
        cw.put_metric_data(
            Namespace=namespace,
            MetricData=[
                {
                    "MetricName": metric,
                    "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
                    "Timestamp": datetime.fromtimestamp(t, UTC),
                    "Value": value,
                }
                for t in stamps[at : at + 1000]
            ],
        )


@pytest.fixture
def clients() -> Iterator[dict[str, Any]]:
    """One p5 node's GPU 0 held all of both hours by the notebook, at 27% of its limit: as
    the exporter publishes it (per GPU, the alarmed series with their shard) and as
    Container Insights publishes it (node and pod GPU series, one sample a minute)."""
    with mock_aws():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        made = {s: client(s, session=session) for s in ("cloudwatch", "events", "logs", "s3")}
        made["s3"].create_bucket(Bucket=BUCKET)
        made["logs"].create_log_group(logGroupName=training_log_group(CLUSTER))
        cw = made["cloudwatch"]
        gpu = {"ClusterName": CLUSTER, "NodeName": "ip-10-0-1-7.ec2.internal", "GpuIndex": "0"}
        _put(cw, "GpuInsights", "gpu_power_utilization", gpu, 300, POWER_PERCENT)
        alarmed = {**gpu, "Shard": "0"}
        _put(cw, "GpuInsights", "gpu_allocated_power_utilization", alarmed, 300, POWER_PERCENT)
        _put(cw, "GpuInsights", "gpu_healthy", alarmed, 300, 1.0)
        watts = LIMIT_W * POWER_PERCENT / 100
        node = {
            "ClusterName": CLUSTER,
            "NodeName": gpu["NodeName"],
            "InstanceId": "i-0a1b2c3d4e5f60718",
            "InstanceType": "p5.48xlarge",
            "GpuDevice": "nvidia0",
        }
        _put(cw, "ContainerInsights", "node_gpu_power_draw", node, 60, watts)
        pod = {
            "ClusterName": CLUSTER,
            "Namespace": NAMESPACE,
            "PodName": POD,
            "FullPodName": POD,
            "GpuDevice": "nvidia0",
        }
        _put(cw, "ContainerInsights", "pod_gpu_utilization", pod, 60, 3.0)
        _put(cw, "ContainerInsights", "pod_gpu_power_draw", pod, 60, watts)
        training_handler._clients.update(made)
        yield made


def _run(clients: dict[str, Any], low_power_percent: float) -> tuple[dict[str, Any], list[str]]:
    # The GPUs' series are seeded as Classic Container Insights publishes them.
    settings = Settings(
        cluster_name=CLUSTER,
        low_power_percent=low_power_percent,
        container_insights_mode=ContainerInsightsMode.CLASSIC,
    )
    env = training_config(settings, report_bucket=BUCKET).environment()
    with environment(env):
        summary = training_handler.handler(
            {"time": datetime.fromtimestamp(RUN_AT, UTC).isoformat()}, None
        )
    body = clients["s3"].get_object(Bucket=BUCKET, Key=summary["key"])["Body"].read()
    kinds = [json.loads(line)["kind"] for line in body.decode().splitlines()]
    return summary, kinds


def test_a_gpu_at_27_percent_is_held_without_work_under_the_default_30(
    clients: dict[str, Any],
) -> None:
    summary, kinds = _run(clients, 30.0)
    assert summary["gpu_hours_by_class"] == {**NONE, "held_not_working": pytest.approx(2.0)}
    assert "gpu_held_not_working" in kinds


def test_with_low_power_percent_25_the_same_gpu_hours_are_working(
    clients: dict[str, Any],
) -> None:
    """-c low_power_percent=25 moves the alarm; it moves the waste figures with it."""
    summary, kinds = _run(clients, 25.0)
    assert summary["gpu_hours_by_class"] == {**NONE, "held_working": pytest.approx(2.0)}
    assert "gpu_held_not_working" not in kinds
