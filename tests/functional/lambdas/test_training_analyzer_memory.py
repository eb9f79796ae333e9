"""The training analyzer's real handler finds GPU memory at risk and GPU memory to spare, from
Container Insights' pod_gpu_memory_* series in moto, run as its role (the policy synthesized
for it, with moto's IAM authorization on: tests/functional/lambdas/iam.py)."""

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cli.demo.datums import statistic_set
from cli.demo.realistic import container_insights as ci
from cli.demo.storage import END, REPORT_BUCKET
from cli.demo.training import CLUSTER, run_training_analyzer, seed
from cli.demo.week import JOB_NODES, JOB_PODS, NOTEBOOK
from gpu_insights_agent.contract.metrics import (
    CI_NODE_GPU_POWER_METRIC,
    CI_POD_GPU_MEMORY_TOTAL_METRIC,
    CI_POD_GPU_MEMORY_USED_METRIC,
    NAMESPACE_CONTAINER_INSIGHTS,
)
from lambdas.shared.aws_clients import client
from lambdas.shared.events import attributed_day
from tests.functional.lambdas.iam import resolve, role_statements, run_as_role

HANDLER = "lambdas.training_analyzer.handler.handler"
PHYSICAL = {"ReportBucket": {"Ref": REPORT_BUCKET, "Arn": f"arn:aws:s3:::{REPORT_BUCKET}"}}
SERVICES = ("s3", "cloudwatch", "events", "logs")
GIB = 2**30
#: An H100 80GB's framebuffer as DCGM reports it (81,559 MiB), in bytes as Container Insights
#: publishes it.
H100 = 81_559 * 2**20


def _memory(start: float) -> list[dict[str, Any]]:
    """The day before the run: bert-data-bound's two pods at 70-71 GiB on their p5 (the emitter
    reported their node), the notebook at 6-9 GiB of its GPU (no node known)."""
    data = []
    for pod, device, used in (
        (JOB_PODS["bert-data-bound"][0], "nvidia0", [70.0] * 20 + [71.0] * 4),
        (JOB_PODS["bert-data-bound"][1], "nvidia1", [70.0] * 24),
        (NOTEBOOK, "nvidia0", [6.0] * 23 + [9.0]),
    ):
        dims = ci.pod_gpu_dimensions(CLUSTER, pod, device)
        for hour, gib in enumerate(used):
            at = start + hour * 3600
            data += [
                statistic_set(CI_POD_GPU_MEMORY_USED_METRIC, dims, at, [gib * GIB], "Bytes", 60),
                statistic_set(CI_POD_GPU_MEMORY_TOTAL_METRIC, dims, at, [H100], "Bytes", 60),
            ]
    node = JOB_NODES["bert-data-bound"]
    dims = ci.node_gpu_dimensions(CLUSTER, node, "i-00000000000000002", "p5.48xlarge", "nvidia0")
    data.append(statistic_set(CI_NODE_GPU_POWER_METRIC, dims, start, [150.0], repeat=60))
    return data


@pytest.fixture
def seeded() -> Iterator[dict[str, Any]]:
    with mock_aws():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        made: dict[str, Any] = {s: client(s, session=session) for s in SERVICES}
        made["s3"].create_bucket(Bucket=REPORT_BUCKET)
        seed(made)
        start, _, _ = attributed_day(END)  # the day the memory right-sizing reads
        data = _memory(start)
        for first in range(0, len(data), 1000):
            made["cloudwatch"].put_metric_data(
                Namespace=NAMESPACE_CONTAINER_INSIGHTS, MetricData=data[first : first + 1000]
            )
        yield made


def test_the_handler_finds_memory_at_risk_and_memory_to_spare(
    seeded: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    statements = resolve(role_statements(templates, HANDLER), PHYSICAL)
    principal = run_as_role(statements, monkeypatch, "training-analyzer")
    clients = {s: principal.role(s) for s in SERVICES}
    summary, findings = run_training_analyzer(clients, principal.admin("logs"))
    assert summary["skipped"] == 0
    memory = {f["kind"]: f for f in findings if "gpu_memory" in f["kind"]}
    assert sorted(memory) == ["training_gpu_memory_near_capacity", "training_gpu_memory_oversized"]
    near = memory["training_gpu_memory_near_capacity"]
    assert (near["resource"], near["severity"]) == ("job/bert-data-bound", "warning")
    assert near["evidence"]["gpus"] == 2
    assert near["evidence"]["p95_gib"] == 71.0
    assert near["evidence"]["gpu_model"] == "H100 80GB"  # from its node's p5.48xlarge
    small = memory["training_gpu_memory_oversized"]
    assert (small["resource"], small["severity"]) == ("job/jupyter-alice", "info")
    assert small["evidence"]["profile"] == "1g.10gb"
    # One GPU all day at $6.88 (the deployment's price): 730 GPU-hours a month, 6/7 freed.
    assert small["estimated_monthly_waste_usd"] == pytest.approx(730 * 6 / 7 * 6.88, abs=0.01)
    # Read over the GPU-hour attribution's day (the whole UTC day before the run), not the
    # rolling lookback ending at the run's hour: its 24 GPU-hours are the day's.
    assert small["evidence"]["gpu_hours"] == 24.0
