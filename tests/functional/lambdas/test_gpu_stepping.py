"""The GPU-hour attribution reads when each job stepped (the training emitter's ``steps``,
written through the real emitter into moto's CloudWatch) and counts those hours as work: a
data-bound job's GPU-hours are its training findings' to price, not "held without work"."""

from datetime import UTC, datetime
from typing import Any

import boto3
from moto import mock_aws

from gpu_insights_agent.emf.sinks import PutMetricDataSink
from gpu_insights_agent.emitter.training import TrainingMetrics
from lambdas.shared.aws_clients import client
from lambdas.training_analyzer.gpu_hours.run import analyze_gpu_hours

START = 1_764_000_000 - 1_764_000_000 % 86_400  # a UTC midnight
POD = "bert-data-bound-worker-0"


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _hour(cw: Any, namespace: str, metric: str, dims: dict[str, str], hour: int, v: float) -> None:
    """An hour of one-minute samples as one statistic set, as CloudWatch stores it."""
    cw.put_metric_data(
        Namespace=namespace,
        MetricData=[
            {
                "MetricName": metric,
                "Dimensions": [{"Name": k, "Value": val} for k, val in dims.items()],
                "Timestamp": datetime.fromtimestamp(START + hour * 3600 + 1800, UTC),
                "StatisticValues": {"SampleCount": 60, "Sum": 60 * v, "Minimum": v, "Maximum": v},
            }
        ],
    )


def _steps_in_first_hour(cw: Any) -> None:
    """The job's rank 0 steps for the first hour: 0.8 s waiting for each batch, 1.2 s on it."""
    clock = Clock(START)
    metrics = TrainingMetrics(
        job_name="bert-data-bound",
        cluster_name="c",
        pod_name=POD,
        flush_s=300,
        sink=PutMetricDataSink(cw),
        clock=clock,
        wall_clock=clock,
    )

    def batches() -> Any:
        while clock.now < START + 3600 - 2:
            clock.now += 0.8
            yield [0] * 64

    for _ in metrics.steps(batches()):
        clock.now += 1.2
    metrics.close(succeeded=True)


def test_the_hour_a_job_stepped_is_work_and_the_hour_it_did_not_is_held_without_work() -> None:
    with mock_aws():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        cw = client("cloudwatch", session=session)
        gpu = {"ClusterName": "c", "NodeName": "n1", "GpuIndex": "0"}
        ci_node = {
            "ClusterName": "c",
            "GpuDevice": "nvidia0",
            "InstanceId": "i-0123",
            "InstanceType": "p5.48xlarge",
            "NodeName": "n1",
        }
        pod = {
            "ClusterName": "c",
            "FullPodName": POD,
            "GpuDevice": "nvidia0",
            "Namespace": "nlp",
            "PodName": POD,
        }
        for hour in (0, 1):  # both hours at 22% of a 700 W limit, held by the job's pod
            _hour(cw, "GpuInsights", "gpu_power_utilization", gpu, hour, 22.0)
            _hour(cw, "GpuInsights", "gpu_healthy", {**gpu, "Shard": "0"}, hour, 1.0)
            _hour(cw, "GpuInsights", "gpu_allocated_power_utilization", {**gpu, "Shard": "0"},
                  hour, 22.0)  # fmt: skip
            _hour(cw, "ContainerInsights", "node_gpu_power_draw", ci_node, hour, 154.0)
            _hour(cw, "ContainerInsights", "pod_gpu_utilization", pod, hour, 8.0)
            _hour(cw, "ContainerInsights", "pod_gpu_power_draw", pod, hour, 154.0)
        _steps_in_first_hour(cw)
        run = analyze_gpu_hours(
            cloudwatch=cw,
            cluster="c",
            start=START,
            end=START + 2 * 3600,
            gpu_hour_usd=6.88,
            exact_jobs={POD: "bert-data-bound"},
            pod_nodes={POD: "n1"},
        )
    (row,) = run.table["jobs"]
    assert (row["job"], row["held_gpu_hours"], row["stepping_gpu_hours"]) == (
        "bert-data-bound",
        2.0,
        1.0,
    )
    assert (row["working_gpu_hours"], row["not_working_gpu_hours"]) == (1.0, 1.0)
    assert run.table["stepping_under_threshold_gpu_hours"] == 1.0
    (finding,) = run.findings
    assert finding.evidence["not_working_gpu_hours"] == 1.0
    assert finding.evidence["idle_hours"] == [datetime.fromtimestamp(START + 3600, UTC).isoformat()]
    assert finding.evidence["waste_in_window_usd"] == 6.88
