"""A training job's GPU figures read from the exporter's series in CloudWatch (moto): the GPUs
of its nodes in use only. A p5.48xlarge reports all eight GPUs (NVML lists every GPU of the
node); a job that holds two of them is judged on those two, never on the six no pod asked for,
idle at 5% of their limit."""

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from moto import mock_aws

from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_NODE,
    DIM_SHARD,
    NAMESPACE_GPU,
    GpuMetric,
    alarm_shard,
    gpu_schema,
)
from lambdas.shared.aws_clients import new_session
from lambdas.training_analyzer.analysis import GpuUsage
from lambdas.training_analyzer.run import _gpu_usage

CLUSTER = "c"
NODE = "ip-10-0-2-21.ec2.internal"
HOUR = datetime(2026, 11, 30, 10, tzinfo=UTC).timestamp()


@pytest.fixture
def cloudwatch() -> Iterator[Any]:
    with mock_aws():
        session = new_session(
            aws_access_key_id="t", aws_secret_access_key="t", region_name="us-east-1"
        )
        yield session.client("cloudwatch")


def _datum(metric: GpuMetric, gpu: int, value: float) -> dict[str, Any]:
    dims = {DIM_CLUSTER: CLUSTER, DIM_NODE: NODE, DIM_GPU_INDEX: str(gpu)}
    if DIM_SHARD in gpu_schema(metric):  # as the exporter writes the alarm metrics
        dims[DIM_SHARD] = alarm_shard(NODE, gpu, 1)
    return {
        "MetricName": str(metric),
        "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
        "Timestamp": datetime.fromtimestamp(HOUR + 1800, UTC),
        "Value": value,
    }


def test_a_jobs_gpu_figures_leave_out_its_nodes_gpus_no_pod_holds(cloudwatch: Any) -> None:
    data = []
    for gpu in range(8):
        held = gpu < 2
        power, sm = (88.0, 86.0) if held else (5.0, 0.0)
        data += [
            _datum(GpuMetric.POWER_UTILIZATION, gpu, power),
            _datum(GpuMetric.SM_ACTIVE, gpu, sm),
        ]
        if held:  # the exporter's allocated reading: a process holds the GPU
            data.append(_datum(GpuMetric.ALLOCATED_POWER_UTILIZATION, gpu, power))
    cloudwatch.put_metric_data(Namespace=NAMESPACE_GPU, MetricData=data)
    usage = _gpu_usage(
        cloudwatch, CLUSTER, {"resnet": {NODE}}, {"resnet": [HOUR]}, HOUR, HOUR + 3600
    )
    # All eight GPUs' mean would be 25.75% and 21.5%: the job would read as underutilized.
    assert usage == {"resnet": GpuUsage(power_utilization=88.0, sm_active=86.0)}


def test_a_node_hour_two_jobs_stepped_in_is_neither_jobs(cloudwatch: Any) -> None:
    """bert (22% of the limit) and llama (85%) each hold two of the node's GPUs; the series
    name no job, so in the hour both stepped neither job is judged on the node's GPUs (the
    mean of all four, 53.5%, would call llama underutilized); in the hour bert alone stepped,
    bert's figure is the node's."""
    data = []
    for gpu, power in ((0, 22.0), (1, 22.0), (2, 85.0), (3, 85.0)):
        for metric in (
            GpuMetric.POWER_UTILIZATION,
            GpuMetric.SM_ACTIVE,
            GpuMetric.ALLOCATED_POWER_UTILIZATION,
        ):
            data.append(_datum(metric, gpu, power))
    later = {**_datum(GpuMetric.POWER_UTILIZATION, 0, 22.0)}
    later["Timestamp"] = datetime.fromtimestamp(HOUR + 3600 + 1800, UTC)
    allocated = {**_datum(GpuMetric.ALLOCATED_POWER_UTILIZATION, 0, 22.0)}
    allocated["Timestamp"] = later["Timestamp"]
    cloudwatch.put_metric_data(Namespace=NAMESPACE_GPU, MetricData=[*data, later, allocated])
    usage = _gpu_usage(
        cloudwatch,
        CLUSTER,
        {"bert": {NODE}, "llama": {NODE}},
        {"bert": [HOUR, HOUR + 3600], "llama": [HOUR]},
        HOUR,
        HOUR + 7200,
    )
    assert usage["bert"].power_utilization == 22.0
    assert usage["llama"] == GpuUsage(power_utilization=None, sm_active=None)
