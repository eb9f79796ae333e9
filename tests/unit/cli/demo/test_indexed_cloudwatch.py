"""The demo's indexed CloudWatch (cli/demo/indexed_cloudwatch.py) answers as moto does: the same
GetMetricData and ListMetrics responses, on data built to reach each of moto's rules (a name in
two namespaces, dimensions in either order, a repeated single dimension, no dimensions, units,
statistic sets, metric math over a hidden query, a Metrics Insights query, either scan order)."""

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from moto import mock_aws
from moto.cloudwatch import models

from cli.demo.indexed_cloudwatch import indexed_cloudwatch
from lambdas.shared.aws_clients import new_session

END = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
START = END - timedelta(hours=3)
NAMESPACES = ("GpuInsights", "ContainerInsights")
NAMES = ("gpu_power_utilization", "node_gpu_utilization")
DIMENSION_SETS: tuple[list[dict[str, str]], ...] = (
    [],
    [{"Name": "ClusterName", "Value": "c"}],
    [{"Name": "ClusterName", "Value": "d"}],
    [{"Name": "ClusterName", "Value": "c"}, {"Name": "NodeName", "Value": "n1"}],
    [{"Name": "NodeName", "Value": "n1"}, {"Name": "ClusterName", "Value": "c"}],
    [{"Name": "ClusterName", "Value": "c"}, {"Name": "NodeName", "Value": "n2"}],
    [
        {"Name": "ClusterName", "Value": "c"},
        {"Name": "NodeName", "Value": "n1"},
        {"Name": "GpuIndex", "Value": "3"},
    ],
)


@pytest.fixture
def cloudwatch() -> Iterator[Any]:
    with mock_aws():
        session = new_session(
            aws_access_key_id="t", aws_secret_access_key="t", region_name="us-east-1"
        )
        client = session.client("cloudwatch")
        draw = random.Random(31)
        for namespace in NAMESPACES:
            data = []
            for i in range(900):
                datum: dict[str, Any] = {
                    "MetricName": draw.choice(NAMES),
                    "Dimensions": draw.choice(DIMENSION_SETS),
                    "Timestamp": START + timedelta(seconds=draw.uniform(-600, 3 * 3600 + 600)),
                    "Unit": draw.choice(("Percent", "None")),
                }
                if i % 3:
                    datum["Value"] = draw.uniform(0, 100)
                else:
                    low = draw.uniform(0, 50)
                    datum["StatisticValues"] = {
                        "SampleCount": 60, "Sum": low * 60 + 7, "Minimum": low, "Maximum": low + 9,
                    }  # fmt: skip
                data.append(datum)
            for first in range(0, len(data), 150):
                client.put_metric_data(Namespace=namespace, MetricData=data[first : first + 150])
        yield client


def _stat(
    qid: str, name: str, dims: list[dict[str, str]], period: int, stat: str
) -> dict[str, Any]:
    metric = {"Namespace": NAMESPACES[len(dims) % 2], "MetricName": name, "Dimensions": dims}
    return {"Id": qid, "MetricStat": {"Metric": metric, "Period": period, "Stat": stat}}


def _queries() -> list[dict[str, Any]]:
    queries = [
        _stat(f"q{i}", name, dims, period, stat)
        for i, (name, dims, period, stat) in enumerate(
            (name, dims, period, stat)
            for name in NAMES
            for dims in DIMENSION_SETS
            for period, stat in ((60, "Average"), (300, "Sum"), (3600, "Maximum"))
        )
    ]
    queries[1]["ReturnData"] = False
    queries[2]["MetricStat"]["Unit"] = "Percent"
    queries[3]["Label"] = "labelled"
    return [
        *queries,
        # moto's metric math answers an expression that is a query's id, with its series.
        {"Id": "math", "Expression": "q1", "Label": "hidden"},
        {"Id": "insights", "Expression": 'SELECT AVG(x) FROM "GpuInsights"', "Period": 600},
    ]


def _answers(cloudwatch: Any, scan_by: str) -> tuple[Any, ...]:
    data = cloudwatch.get_metric_data(
        MetricDataQueries=_queries(), StartTime=START, EndTime=END, ScanBy=scan_by
    )["MetricDataResults"]
    listed = [
        list(page["Metrics"])
        for kwargs in (
            {},
            {"MetricName": NAMES[0]},
            {"Namespace": NAMESPACES[1]},
            {"Dimensions": [{"Name": "NodeName", "Value": "n1"}]},
            {"Dimensions": [{"Name": "ClusterName"}]},
        )
        for page in cloudwatch.get_paginator("list_metrics").paginate(**kwargs)
    ]
    return data, listed


@pytest.mark.parametrize("scan_by", ["TimestampAscending", "TimestampDescending"])
def test_the_indexed_answers_are_motos(cloudwatch: Any, scan_by: str) -> None:
    moto_get_metric_data = models.CloudWatchBackend.get_metric_data
    expected = _answers(cloudwatch, scan_by)
    with indexed_cloudwatch():
        assert models.CloudWatchBackend.get_metric_data is not moto_get_metric_data
        indexed = _answers(cloudwatch, scan_by)
    assert models.CloudWatchBackend.get_metric_data is moto_get_metric_data  # restored
    data, listed = indexed
    assert data == expected[0]
    assert listed == expected[1]
    # The data reaches each rule: queries with points, one without (no such unit and
    # dimensions), the hidden query left out, math and insights answered; ListMetrics pages
    # (moto lists each datapoint of a metric of several dimensions).
    assert sum(bool(r["Values"]) for r in data) > 30
    assert [r["Id"] for r in data].count("q1") == 0
    assert {"math", "insights"} <= {r["Id"] for r in data}
    assert next(r for r in data if r["Id"] == "math")["Values"]
    assert max(len(page) for page in listed) == 500
