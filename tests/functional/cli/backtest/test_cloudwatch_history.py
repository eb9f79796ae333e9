"""The backtest's CloudWatch path against moto: the series it lists, the calls it makes."""

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cdk.alarms.catalog import AlarmSettings, low_power_alarm
from cli.backtest.cloudwatch_history import fetch_samples
from cli.backtest.engine import backtest
from cli.backtest.evaluator import AlarmState
from gpu_insights_agent.contract.metrics import alarm_shard
from lambdas.shared.metric_fetcher import MAX_QUERIES_PER_CALL as MAX_QUERIES

T0 = 1_764_000_000.0 - 1_764_000_000.0 % 3600


@pytest.fixture
def cloudwatch() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client(
            "cloudwatch", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )


def _put(cloudwatch: Any, node: str, gpu: str, share: float, minutes: int) -> None:
    dims = [
        {"Name": "ClusterName", "Value": "train"},
        {"Name": "NodeName", "Value": node},
        {"Name": "GpuIndex", "Value": gpu},
        {"Name": "Shard", "Value": alarm_shard(node, int(gpu), 1)},  # as the exporter writes
    ]
    data = [
        {
            "MetricName": "gpu_allocated_power_utilization",
            "Dimensions": dims,
            "Timestamp": datetime.fromtimestamp(T0 + i * 60, UTC),
            "Value": share,
        }
        for i in range(minutes)
    ]
    for first in range(0, len(data), 500):
        cloudwatch.put_metric_data(Namespace="GpuInsights", MetricData=data[first : first + 500])


def test_low_power_backtest_from_cloudwatch(cloudwatch: Any) -> None:
    _put(cloudwatch, "n1", "0", 90.0, 90)
    _put(cloudwatch, "n1", "1", 11.0, 90)
    calls: list[str] = []
    cloudwatch.meta.events.register(
        "before-call.monitoring.*", lambda model, **_: calls.append(model.name)
    )
    specs = [low_power_alarm(AlarmSettings(cluster_name="train"))]
    samples = fetch_samples(cloudwatch, specs, start=T0, end=T0 + 5400)
    # Two series from ListMetrics, one GetMetricData call, 18 five-minute maxima each.
    assert calls.count("GetMetricData") == 1
    assert len(samples) == 2 * 18
    (result,) = backtest(specs, samples, start=T0, end=T0 + 5400)
    alarm = next(t for t in result.transitions if t.new is AlarmState.ALARM)
    assert alarm.time == T0 + 3600


def test_batches_are_full_500_query_calls(cloudwatch: Any) -> None:
    for gpu in range(MAX_QUERIES + 20):  # 520 series: ceil(520 / 500) = 2 calls
        cloudwatch.put_metric_data(
            Namespace="GpuInsights",
            MetricData=[
                {
                    "MetricName": "gpu_allocated_power_utilization",
                    "Dimensions": [
                        {"Name": "ClusterName", "Value": "train"},
                        {"Name": "NodeName", "Value": f"n{gpu // 8}"},
                        {"Name": "GpuIndex", "Value": str(gpu % 8)},
                        {"Name": "Shard", "Value": "0"},
                    ],
                    "Timestamp": datetime.fromtimestamp(T0, UTC),
                    "Value": 50.0,
                }
            ],
        )
    calls: list[str] = []
    cloudwatch.meta.events.register(
        "before-call.monitoring.GetMetricData", lambda model, **_: calls.append(model.name)
    )
    specs = [low_power_alarm(AlarmSettings(cluster_name="train"))]
    samples = fetch_samples(cloudwatch, specs, start=T0, end=T0 + 600)
    assert len(calls) == 2
    assert len(samples) == MAX_QUERIES + 20
