"""The demo's planted failures: each job's end in the metrics the training analyzer reads, its
logs where Container Insights puts them, and its cause named from them by the analyzer's own
reader and classifier."""

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cli.demo.exporter import (
    INTERVAL_S,
    NODE,
    REPLAY_PODS,
    pod_uid,
    replay_exporter,
    replay_window,
)
from cli.demo.failures import PLANTED, diagnose, diagnosis_lines, planted, seed_failures
from cli.demo.storage import DEMO_CLUSTER
from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_JOB,
    DIM_XID_CODE,
    NAMESPACE_TRAINING,
    PROP_POD_UIDS,
    PROP_PODS,
    PROP_PODS_LAST_SEEN_MS,
    TrainingMetric,
    training_log_group,
)
from lambdas.training_analyzer.aws import list_jobs


@pytest.fixture
def clients() -> Iterator[dict[str, Any]]:
    with mock_aws():
        logs = boto3.client("logs", region_name="us-east-1")
        logs.create_log_group(logGroupName=training_log_group(DEMO_CLUSTER))
        yield {"logs": logs, "cloudwatch": boto3.client("cloudwatch", region_name="us-east-1")}


def _failed(cloudwatch: Any, job: str) -> float:
    start, end = replay_window()
    points = cloudwatch.get_metric_statistics(
        Namespace=NAMESPACE_TRAINING,
        MetricName=str(TrainingMetric.JOB_FAILED),
        Dimensions=[
            {"Name": DIM_CLUSTER, "Value": DEMO_CLUSTER},
            {"Name": DIM_JOB, "Value": job},
        ],
        StartTime=datetime.fromtimestamp(start - 3600, UTC),
        EndTime=datetime.fromtimestamp(end + 3600, UTC),
        Period=3 * 3600 + 7200,
        Statistics=["Sum"],
    )["Datapoints"]
    return float(sum(p["Sum"] for p in points))


def test_each_planted_failure_is_failed_in_the_metrics_and_classified_with_its_cause(
    clients: dict[str, Any],
) -> None:
    assert seed_failures(clients, DEMO_CLUSTER) > 0
    # The analyzer lists each as a job, and each failed once (rank 0's job_failed).
    assert {f.job for f in PLANTED} <= set(list_jobs(clients["cloudwatch"], DEMO_CLUSTER))
    assert {f.job: _failed(clients["cloudwatch"], f.job) for f in PLANTED} == {
        f.job: 1.0 for f in PLANTED
    }
    diagnosed = diagnose(clients["logs"], DEMO_CLUSTER)
    assert [(d["resource"], d["evidence"]["cause"]) for d in diagnosed] == [
        (f"job/{f.job}", f.cause) for f in PLANTED
    ]
    assert [f.cause for f in PLANTED] == [
        "cuda_out_of_memory",
        "nccl_timeout",
        "kernel_oom_killer",
        "gpu_xid",
    ]
    by_job = {d["resource"]: d for d in diagnosed}
    # Each cites the corpus's line that decided it, read back from the log group.
    cuda = by_job["job/sdxl-cuda-oom"]["evidence"]["lines"][0]["text"]
    assert cuda.startswith("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.78")
    nccl = by_job["job/mixtral-nccl-timeout"]["evidence"]["lines"][0]["text"]
    assert "Watchdog caught collective operation timeout" in nccl
    oom = by_job["job/tokenize-oom-killed"]["evidence"]["lines"][0]["text"]
    assert oom.startswith("Out of memory: Killed process 15784 (python3)")
    # The XID is the replayed node's failing GPU's (cli/demo/exporter.py): its bus, its codes,
    # its node; the kernel OOM killer and the XID take a node out: critical.
    xid = by_job["job/whisper-finetune"]
    assert xid["evidence"]["detail"]["xid"] == "48"
    assert xid["evidence"]["detail"]["pci_bus_id"] == "0000:13:00"
    assert xid["evidence"]["nodes"] == [NODE]
    assert xid["evidence"]["lines"][-1]["text"] == (
        "NVRM: Xid (PCI:0000:13:00): 79, GPU has fallen off the bus"
    )
    assert [d["severity"] for d in diagnosed] == ["warning", "warning", "critical", "critical"]
    # Read here, not by an analyzer run (none ran): the line says so.
    assert diagnosis_lines(by_job["job/sdxl-cuda-oom"])[0].split() == [
        "sdxl-cuda-oom",
        "cuda_out_of_memory",
        "CUDA",
        "out",
        "of",
        "memory",
        *["(read", "by", "the", "demo:", "no", "analyzer", "run", "read", "it)"],
    ]


XIDS = ("48", "79")


def test_the_planted_xid_is_the_one_the_exporter_replays(
    clients: dict[str, Any], tmp_path: Any
) -> None:
    """The XID lines are at the instants the exporter's replay reports XID 48 and 79 on the
    same GPU, and the job that died is the one whose pod held it."""
    replay = replay_exporter(clients["cloudwatch"], cluster_name=DEMO_CLUSTER, out_dir=tmp_path)
    assert [(g, c) for g, c, _, _ in replay.xids if g == "3"] == [("3", "48"), ("3", "79")]
    (whisper,) = [j for j in planted() if j.failure.job == "whisper-finetune"]
    assert whisper.pods[whisper.failing_rank].name.endswith("worker-2")  # GPU 3's pod
    seed_failures(clients, DEMO_CLUSTER)
    events = clients["logs"].filter_log_events(
        logGroupName=f"/aws/containerinsights/{DEMO_CLUSTER}/host",
        logStreamNames=[f"{NODE}.host.dmesg"],
    )["events"]
    emf = [json.loads(line) for line in (tmp_path / "exporter-emf.jsonl").read_text().splitlines()]
    xids = [d["_aws"]["Timestamp"] for d in emf if d.get(DIM_XID_CODE) and d[DIM_GPU_INDEX] == "3"]
    assert [e["timestamp"] for e in events] == xids
    assert xids[-1] == whisper.failed_at * 1000
    # The replayed node's exporter names the pods on the GPU as a node with pod attribution
    # does (the kubelet's pod log directories, mounted read-only): GPU 3 is worker-2's.
    pods = {(d[PROP_POD_UIDS][0], d[PROP_PODS][0]) for d in emf if d.get(DIM_XID_CODE) in XIDS}
    assert pods == {(pod_uid(REPLAY_PODS[3]), "speech/whisper-finetune-worker-2")}
    # XID 79: the GPU has fallen off the bus and cannot say who runs on it, so the exporter
    # names the pods of its last cycle that read them, and when (one cycle before).
    (lost,) = [d for d in emf if d.get(DIM_XID_CODE) == "79"]
    assert lost[PROP_PODS_LAST_SEEN_MS] == lost["_aws"]["Timestamp"] - INTERVAL_S * 1000
