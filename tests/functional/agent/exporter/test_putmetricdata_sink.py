"""The PutMetricData sink against moto: the metrics land with their dimensions."""

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from gpu_insights_agent.emf.sinks import BufferedSender, PutMetricDataSink
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from tests.unit.agent.exporter.nvml_trace import Clock, trace_lines


@pytest.fixture
def cloudwatch() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client(
            "cloudwatch",
            region_name="us-east-1",
            aws_access_key_id="test",
            aws_secret_access_key="test",
        )


def test_exporter_cycle_lands_in_cloudwatch(cloudwatch: Any) -> None:
    clock = Clock(0)
    exporter = Exporter(
        NvmlSource(FakeNvml(trace_lines(), clock=clock)),
        BufferedSender(PutMetricDataSink(cloudwatch)),
        ExporterConfig(cluster_name="train", node_name="node-a"),
        clock=lambda: 1_764_000_000 + clock(),
    )
    exporter.start()
    exporter.collect_once()
    metrics = cloudwatch.list_metrics(Namespace="GpuInsights", MetricName="gpu_power_utilization")
    series = {
        tuple(sorted((d["Name"], d["Value"]) for d in m["Dimensions"])) for m in metrics["Metrics"]
    }
    assert (("ClusterName", "train"),) in series
    assert (("ClusterName", "train"), ("GpuIndex", "0"), ("NodeName", "node-a")) in series
    stats = cloudwatch.get_metric_statistics(
        Namespace="GpuInsights",
        MetricName="gpu_power_utilization",
        Dimensions=[
            {"Name": "ClusterName", "Value": "train"},
            {"Name": "NodeName", "Value": "node-a"},
            {"Name": "GpuIndex", "Value": "0"},
        ],
        StartTime=1_763_999_000,
        EndTime=1_764_001_000,
        Period=60,
        Statistics=["Maximum"],
    )
    assert stats["Datapoints"][0]["Maximum"] == pytest.approx(50.0)
