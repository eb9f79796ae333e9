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
from lambdas.shared.findings import AnalysisRun, Finding, Kind, Severity
from lambdas.training_analyzer.failure_logs import FailedPod
from lambdas.training_analyzer.failure_placement import (
    HeldJob,
    explain_unplaced,
    held_failures,
    held_jobs,
    held_run_gpu_hours,
)
from lambdas.training_analyzer.failure_run import FailedRun, FailureReads, UnplacedFailure
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


def test_a_failed_run_of_the_attributed_day_is_priced_at_what_its_pods_held() -> None:
    """vit's two pods held 2 GPUs from 15:00 to 19:00 (its first run failed in the 18:00 hour
    and restarted in place) and from 19:00 to 22:00 (failed in the 21:00 hour); mixtral's held
    2 GPUs for 50 minutes of 15:00. Stepping hours x GPUs said 6, 6 and 2: what they held says
    8, 6 and 1.67. A failure before the day, and a job the attribution has not, keep theirs,
    and the cause finding's runs say what the failures say."""
    day = range(int(HOUR - 15 * H), int(HOUR + 9 * H))
    at = {h: float(HOUR + (h - 15) * H) for h in range(0, 22)}
    before = HOUR - 20 * H
    held = {
        "vit": HeldJob((), {at[h]: 2.0 for h in range(15, 22)}),
        "mixtral": HeldJob((), {at[15]: 2 * 50 / 60}),
        "old": HeldJob((), {before: 4.0}),
    }

    def failed(job: str, hour: float, gpu_hours: float, since: float | None) -> FailedRun:
        return FailedRun(job, hour, "unknown", "", ("node",), gpu_hours, since)

    failures = [
        failed("old", before, 4.0, None),
        failed("vit", at[18], 6.0, None),
        failed("vit", at[21], 6.0, at[18]),
        failed("mixtral", at[15], 2.0, None),
        failed("sdxl", at[15], 2.0, None),
    ]
    run = AnalysisRun("training")
    cause = failure_cause_finding_for("vit", [at[18], at[21]], [6.0, 6.0])
    run.findings.append(cause)
    priced = held_failures(run, failures, held, day, window_start=day.start)
    assert [f.gpu_hours for f in priced] == [4.0, 8.0, 6.0, 1.67, 2.0]
    assert [r["gpu_hours"] for r in run.findings[0].evidence["failures"]] == [8.0, 6.0]


def test_a_crash_loops_oldest_run_read_holds_what_it_held_since_the_failure_before() -> None:
    """A job on 8 GPUs failed every hour from 00:00 to 04:00; its latest three failures are
    read, each begun at the failure before it (read or not): 8 GPU-hours each, not the first
    read one's 24 (all it held since the day began)."""
    hours = [float(HOUR - 4 * H + k * H) for k in range(5)]
    held = {"loop": HeldJob((), dict.fromkeys(hours, 8.0))}
    failures = [
        FailedRun("loop", at, "unknown", "", ("node",), 8.0, since)
        for at, since in zip(hours[2:], hours[1:4], strict=True)
    ]
    day = range(int(HOUR - 10 * H), int(HOUR + 10 * H))
    priced = held_failures(AnalysisRun("training"), failures, held, day, day.start)
    assert [f.gpu_hours for f in priced] == [8.0, 8.0, 8.0]


def test_a_run_that_began_before_the_attributed_day_keeps_its_figure() -> None:
    """An 8-GPU job failed at 01:00 on the day before and at 01:00 on the attributed day: its
    second run held 24 hours (192 GPU-hours), of which the day's attribution holds 16. That
    copy keeps its stepping figure and is not marked held; one that began at the window's start
    at a 14-day lookback (no failure before it) is not either."""
    day = range(int(HOUR - H), int(HOUR - H) + 86_400)
    first, second = float(day.start - 23 * H), float(day.start + H)
    held = {"long": HeldJob((), {float(day.start + k * H): 8.0 for k in range(24)})}
    failures = [
        FailedRun("long", second, "unknown", "", ("n",), 192.0, since=first),
        FailedRun("other", second, "unknown", "", ("n",), 40.0),
    ]
    held["other"] = HeldJob((), {float(day.start): 8.0, second: 8.0})
    priced = held_failures(AnalysisRun("training"), failures, held, day, day.start - 13 * 86_400)
    assert [(f.gpu_hours, f.held) for f in priced] == [(192.0, False), (40.0, False)]
    # At a 1-day lookback the window is the day: the first failure's run is the day's.
    whole = held_failures(AnalysisRun("training"), failures[1:], held, day, day.start)
    assert [(f.gpu_hours, f.held) for f in whole] == [(16.0, True)]


def failure_cause_finding_for(job: str, hours: list[float], gpu_hours: list[float]) -> Finding:
    runs = [
        {"failed_hour": datetime.fromtimestamp(h, UTC).isoformat(), "gpu_hours": g}
        for h, g in zip(hours, gpu_hours, strict=True)
    ]
    return Finding(
        kind=Kind.TRAINING_FAILURE_CAUSE,
        resource=f"job/{job}",
        severity=Severity.WARNING,
        summary=f"{job} failed",
        evidence={"failures": runs},
        recommendation="",
    )


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
