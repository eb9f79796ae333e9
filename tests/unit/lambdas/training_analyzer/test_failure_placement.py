"""A failed job whose emitter named no pod (it died before its first step): its pods, nodes and
held GPU-hours come from the GPU-hour attribution, and its logs are read from them (moto)."""

from datetime import UTC, datetime
from typing import Any

import boto3

from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_JOB,
    NAMESPACE_TRAINING,
    TrainingMetric,
)
from lambdas.shared.findings import AnalysisRun, Kind
from lambdas.training_analyzer.failure_logs import FailedPod
from lambdas.training_analyzer.failure_placement import (
    explain_unplaced,
    held_jobs,
    held_run_gpu_hours,
)
from lambdas.training_analyzer.failure_run import FailureReads, UnplacedFailure
from lambdas.training_analyzer.gpu_hours.attribution import (
    UNPLACED_NODE,
    GpuHour,
    GpuKey,
    Hold,
    attribute,
)
from tests.unit.lambdas.training_analyzer.test_failure_logs import (
    FAILED_AT,
    NODE,
    SAMPLES,
    host_record,
    logs,
    put,
)

__all__ = ["logs"]  # the moto fixture

H = 3600
HOUR = int(FAILED_AT // H * H)


def _attribution() -> Any:
    """whisper-finetune's four pods held four GPUs of NODE for two hours; the master held
    its GPU 0.6 of the next hour, when the job failed; a pod not placed on any node."""
    pods = ["whisper-finetune-master-0", *(f"whisper-finetune-worker-{r}" for r in range(3))]
    gpu_hours, holds = [], []
    for hour in (HOUR - 2 * H, HOUR - H, HOUR):
        for index, pod in enumerate(pods):
            gpu = GpuKey(NODE, str(index))
            gpu_hours.append(GpuHour(gpu=gpu, hour=hour, power_utilization=60.0, in_use=True))
            share = 1.0 if hour < HOUR else (0.6 if index == 0 else 0.0)
            holds.append(Hold(gpu=gpu, hour=hour, namespace="speech", pod=pod, share=share))
    holds.append(
        Hold(gpu=GpuKey(UNPLACED_NODE, "0"), hour=HOUR, namespace="x", pod="lost-0", share=1.0)
    )
    return attribute(gpu_hours, holds)


def test_a_jobs_pods_nodes_and_held_hours_come_from_the_attribution() -> None:
    held = held_jobs(_attribution())
    whisper = held["whisper-finetune"]
    assert whisper.pods == (
        FailedPod("whisper-finetune-master-0", NODE),
        *(FailedPod(f"whisper-finetune-worker-{r}", NODE) for r in range(3)),
    )
    assert whisper.held_by_hour == {HOUR - 2 * H: 4.0, HOUR - H: 4.0, HOUR: 0.6}
    # A pod placed on no node names no node to read.
    assert "lost" not in held


def test_each_failed_run_holds_what_its_pods_held_since_the_previous_failure() -> None:
    held = {0.0: 4.0, 3600.0: 4.0, 7200.0: 2.0, 10800.0: 4.0}
    assert held_run_gpu_hours(held, [7200.0, 3600.0]) == {3600.0: 8.0, 7200.0: 2.0}


def test_an_unplaced_failed_job_is_read_from_the_pods_the_attribution_placed(logs: Any) -> None:
    """XID 48 then XID 79 on the node's dmesg: the job's cause is the GPU, its run held the
    8.6 GPU-hours its pods held, and no analysis_error blames the analyzer's permissions."""
    xid_48 = SAMPLES["xid-48-host-log-group"].lines[0]
    xid_79 = SAMPLES["xid-79-nvsentinel"].lines[0]
    put(logs, "host", f"{NODE}.host.dmesg",
        (FAILED_AT - 120, xid_48), (FAILED_AT - 30, host_record(xid_79)))  # fmt: skip
    run = AnalysisRun(analyzer="training")
    unplaced = [
        UnplacedFailure("whisper-finetune", (float(HOUR),), ("training_job_failures job/w",)),
        UnplacedFailure("never-held", (float(HOUR),), ()),
    ]
    runs = explain_unplaced(
        logs, "train", unplaced, held_jobs(_attribution()), run, day="2026-11-29"
    )

    (failed,) = runs
    assert (failed.job, failed.cause, failed.gpu_hours) == ("whisper-finetune", "gpu_xid", 8.6)
    assert failed.nodes == (NODE,)
    cause, error = run.findings
    assert cause.kind is Kind.TRAINING_FAILURE_CAUSE
    assert cause.resource == "job/whisper-finetune"
    # Both are fatal XIDs; the first names the cause, and both are cited.
    assert cause.evidence["detail"]["xid"] == "48"
    assert len(cause.evidence["lines"]) == 2
    assert cause.evidence["also_seen"] == []
    assert len(cause.evidence["pods"]) == 4
    assert cause.evidence["failures"][0]["gpu_hours"] == 8.6
    assert cause.evidence["pods_from"] == "GPU-hour attribution of 2026-11-29"
    assert cause.related == ("training_job_failures job/w",)
    assert error.kind is Kind.ANALYSIS_ERROR
    assert error.resource == "job/never-held"
    assert "GPU-hour attribution of 2026-11-29 placed none of its pods" in error.summary


def test_a_failed_job_without_emitter_pods_waits_for_the_attribution(logs: Any) -> None:
    """Not an analysis_error ("its emitter reported no pod and node"): kept to be read."""
    cloudwatch = boto3.client(
        "cloudwatch", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
    )
    cloudwatch.put_metric_data(
        Namespace=NAMESPACE_TRAINING,
        MetricData=[
            {
                "MetricName": str(TrainingMetric.JOB_FAILED),
                "Dimensions": [
                    {"Name": DIM_CLUSTER, "Value": "train"},
                    {"Name": DIM_JOB, "Value": "w"},
                ],
                "Timestamp": datetime.fromtimestamp(HOUR + 1800, UTC),
                "Value": 1.0,
            }
        ],
    )
    run = AnalysisRun(analyzer="training")
    reads = FailureReads(
        cloudwatch=cloudwatch, logs=logs, cluster="train", failures={"w": 1.0},
        start=HOUR - 6 * H, end=HOUR + H, max_jobs=50, run=run,
    )  # fmt: skip
    assert reads.explain("w", [], [], 0, ("link",), run) == []
    assert run.findings == []
    assert reads.unplaced == [UnplacedFailure("w", (float(HOUR),), ("link",))]
    assert UnplacedFailure.from_json(reads.unplaced[0].to_json()) == reads.unplaced[0]
