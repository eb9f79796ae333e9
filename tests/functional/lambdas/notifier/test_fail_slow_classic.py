"""A Classic fail-slow page's culprit (lambdas/notifier/fail_slow_classic.py) read against moto:
the exporter's series as the EMF sink publishes them (per GPU, the alarmed ones with their
``Shard``, fault gauges only in their non-zero minutes), Container Insights' node CPU with the
dimensions the realistic cluster model gives it, and the job's data wait; ranked by the logic
the OTel page uses (lambdas/shared/fail_slow.py). A Classic goodput page's badput from the
emitter's windows. A refused read is an error naming it."""

from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from cli.demo.indexed_cloudwatch import indexed_cloudwatch
from cli.demo.realistic import container_insights as ci
from gpu_insights_agent.contract.metrics import (
    NAMESPACE_GPU,
    NAMESPACE_TRAINING,
    GpuMetric,
    TrainingMetric,
    alarm_shard,
    gpu_schema,
)
from lambdas.notifier.fail_slow_classic import (
    CulpritReadError,
    classic_culprit,
    read_classic_badput,
)
from lambdas.notifier.fail_slow_page import grown_badput
from lambdas.notifier.jobs import Placement, Rank
from lambdas.shared.aws_clients import client

AT = 1_764_000_000 - 1_764_000_000 % 3600 + 3600
NODES = ("ip-10-0-5-1.ec2.internal", "ip-10-0-5-2.ec2.internal")
MINUTES = 30  # healthy to minute 20, the fault from then on; the alarm at minute 30


def _placement(fault: str = "") -> Placement:
    """The job's ranks as their newest documents name them (lambdas/notifier/jobs.py), each
    with its window's data wait: rank 5 waiting far longer for ``rank-stall``."""
    return Placement(
        tuple(
            Rank(
                rank=str(r),
                pod=f"llm-worker-{r}",
                node=NODES[r // 4],
                data_wait_share=40.0 if (fault == "rank-stall" and r == 5) else 3.0,
            )
            for r in range(8)
        )
    )


def _put(
    cw: Any, namespace: str, metric: str, dims: dict[str, str], values: Sequence[float | None]
) -> None:
    data = [
        {
            "MetricName": metric,
            "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
            "Timestamp": datetime.fromtimestamp(AT - 60 * (MINUTES - i), UTC),
            "Value": value,
        }
        for i, value in enumerate(values)
        if value is not None
    ]
    cw.put_metric_data(Namespace=namespace, MetricData=data)


def _gpu_dims(metric: GpuMetric, node: str, gpu: int) -> dict[str, str]:
    dims = {"ClusterName": "c", "NodeName": node, "GpuIndex": str(gpu)}
    if "Shard" in gpu_schema(metric):
        dims["Shard"] = alarm_shard(node, gpu, 2)
    return dims


def _job(cw: Any, fault: str) -> None:
    """Two nodes of four GPUs, one rank a GPU, and ``fault`` from minute 20."""
    after = [m >= 20 for m in range(MINUTES)]
    for n, node in enumerate(NODES):
        for g in range(4):
            ones = [1.0] * MINUTES
            _put(
                cw,
                NAMESPACE_GPU,
                str(GpuMetric.HEALTHY),
                _gpu_dims(GpuMetric.HEALTHY, node, g),
                ones,
            )
            if fault == "power-brake" and n == 1:  # a fault gauge: its non-zero minutes only
                metric = GpuMetric.THROTTLED_POWER
                _put(
                    cw,
                    NAMESPACE_GPU,
                    str(metric),
                    _gpu_dims(metric, node, g),
                    [1.0 if a else None for a in after],
                )
            if fault == "pcie" and (n, g) == (0, 2):
                metric = GpuMetric.PCIE_REPLAYS
                _put(
                    cw,
                    NAMESPACE_GPU,
                    str(metric),
                    _gpu_dims(metric, node, g),
                    [30.0 if a else None for a in after],
                )
        busy = [97.0 if (fault == "cpu" and n == 0 and a) else 40.0 for a in after]
        dims = ci.node_dimensions("c", node, f"i-0{n}")
        _put(cw, "ContainerInsights", "node_cpu_utilization", dims, busy)
    wait = [30.0 if (fault == "data-source" and a) else 3.0 for a in after]
    dims = {"ClusterName": "c", "JobName": "llm"}
    _put(cw, NAMESPACE_TRAINING, str(TrainingMetric.DATA_WAIT_SHARE), dims, wait)
    # Another cluster's GPU on a node of the same name is not this job's.
    other = {"ClusterName": "other", "NodeName": NODES[0], "GpuIndex": "0"}
    _put(cw, NAMESPACE_GPU, str(GpuMetric.PCIE_REPLAYS), other, [500.0] * MINUTES)


@pytest.fixture
def cloudwatch() -> Iterator[Any]:
    with mock_aws(), indexed_cloudwatch():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        yield client("cloudwatch", session=session)


def test_a_power_braked_node_is_named_by_its_gpus_fault_gauges(cloudwatch: Any) -> None:
    _job(cloudwatch, "power-brake")
    verdict = classic_culprit(cloudwatch, "c", "llm", _placement(), AT)
    assert verdict.culprit is not None
    assert (verdict.culprit.node, verdict.culprit.gpu) == (NODES[1], "")
    assert verdict.culprit.evidence == (
        "4 of the node's 4 GPUs: NVML clock event reason: hardware power brake",
    )


def test_a_gpu_whose_pcie_replays_rise_is_named(cloudwatch: Any) -> None:
    _job(cloudwatch, "pcie")
    verdict = classic_culprit(cloudwatch, "c", "llm", _placement(), AT)
    assert verdict.culprit is not None
    assert (verdict.culprit.node, verdict.culprit.gpu) == (NODES[0], "2")
    # Minutes 25 to 29 at 30 a minute; in the ten before, minutes 20 to 24, scaled to five.
    assert verdict.culprit.evidence == ("rising: PCIe replays 150 (before 75)",)


def test_a_node_whose_cpu_is_saturated_is_named(cloudwatch: Any) -> None:
    _job(cloudwatch, "cpu")
    verdict = classic_culprit(cloudwatch, "c", "llm", _placement(), AT)
    assert verdict.culprit is not None
    assert (verdict.culprit.node, verdict.culprit.gpu) == (NODES[0], "")
    assert verdict.culprit.evidence == ("node CPU 97% (the job's median node 68%)",)


def test_one_rank_waiting_for_data_is_named_from_its_own_document(cloudwatch: Any) -> None:
    _job(cloudwatch, "none")
    verdict = classic_culprit(cloudwatch, "c", "llm", _placement("rank-stall"), AT)
    assert verdict.culprit is not None
    c = verdict.culprit
    assert (c.rank, c.pod, c.node, c.gpu) == ("5", "llm-worker-5", NODES[1], "")
    assert c.evidence == ("rank 5's data wait 40% of the step (the job's median 3%)",)


def test_a_job_whose_data_wait_rose_everywhere_has_no_single_culprit(cloudwatch: Any) -> None:
    """Every rank's document waits 30% now; the job's series, 3% before the onset."""
    _job(cloudwatch, "data-source")
    placement = Placement(tuple(replace(r, data_wait_share=30.0) for r in _placement().ranks))
    verdict = classic_culprit(cloudwatch, "c", "llm", placement, AT)
    assert verdict.culprit is None
    assert verdict.whole_job.startswith(
        # The ten minutes before the five read: minutes 15 to 24, half of them waiting.
        "every rank waits longer for its data (the job's median data wait 30% of the step, "
        "16% before)"
    )


def test_a_healthy_job_has_no_single_culprit(cloudwatch: Any) -> None:
    _job(cloudwatch, "none")
    verdict = classic_culprit(cloudwatch, "c", "llm", _placement(), AT)
    assert verdict.culprit is None
    assert verdict.whole_job.startswith("no GPU, rank or node stands out")


@pytest.mark.parametrize(
    "read",
    [
        lambda cw: classic_culprit(cw, "c", "llm", _placement(), AT),
        lambda cw: read_classic_badput(cw, "c", "llm", AT),
    ],
    ids=["culprit", "badput"],
)
def test_a_refused_read_is_an_error_naming_it(read: Any) -> None:
    cw = boto3.client(
        "cloudwatch", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
    )
    with Stubber(cw) as stub:
        stub.add_client_error("get_metric_data", "AccessDenied", "not authorized", 403)
        with pytest.raises(CulpritReadError, match="AccessDenied"):
            read(cw)


def _windows(cw: Any, hour: int, data_wait: float, stepping: int, save_s: float = 0.0) -> None:
    """Eight ranks' minute windows in the ``hour``-th hour before the alarm, as the emitter's EMF
    publishes its time split (contract.metrics ``TIME_METRICS``): a save's seconds every ten
    minutes; in a window with steps (``stepping`` of every ten) the rest is compute and data
    wait (``data_wait`` percent of it), in the others stalled."""
    job = {"ClusterName": "c", "JobName": "llm"}

    def datum(metric: TrainingMetric, value: float, stamp: datetime) -> dict[str, Any]:
        dimensions = [{"Name": k, "Value": v} for k, v in job.items()]
        return {"MetricName": str(metric), "Dimensions": dimensions, "Timestamp": stamp,
                "Value": value}  # fmt: skip

    for minute in range(60):
        at = datetime.fromtimestamp(AT - 3600 * hour + 60 * minute + 30, UTC)
        saving = save_s if minute % 10 == 0 else 0.0
        rest = 60.0 - saving
        split = {TrainingMetric.CHECKPOINT_SAVE_TIME: saving}
        if minute % 10 < stepping:
            split[TrainingMetric.DATA_WAIT_TIME] = rest * data_wait / 100
            split[TrainingMetric.COMPUTE_TIME] = rest * (1 - data_wait / 100)
        else:
            split[TrainingMetric.STALLED_TIME] = rest
        data = [datum(m, v, at) for m, v in split.items() if v > 0 for _ in range(8)]
        cw.put_metric_data(Namespace=NAMESPACE_TRAINING, MetricData=data)


def test_a_classic_goodput_page_reads_which_badput_grew(cloudwatch: Any) -> None:
    """The hour before: steps in every window, 3% of them waiting for data. The alarm's hour:
    30% of the stepping time waiting (918 s of 3,600: 25.5%), 6 windows of 60 with no step
    (10%), a 30 s save every ten minutes (5%)."""
    _windows(cloudwatch, 2, data_wait=3.0, stepping=10)
    _windows(cloudwatch, 1, data_wait=30.0, stepping=9, save_s=30.0)
    now, before = read_classic_badput(cloudwatch, "c", "llm", AT)
    assert now == pytest.approx(
        {"data wait": 0.255, "no steps": 0.1, "checkpoint saves": 0.05, "evaluation": 0.0}
    )
    assert before == pytest.approx(
        {"data wait": 0.03, "no steps": 0.0, "checkpoint saves": 0.0, "evaluation": 0.0}
    )
    assert grown_badput(now, before).startswith("data wait: 26% of the hour, 3% the hour before")


def test_a_classic_goodput_page_with_no_windows_knows_nothing(cloudwatch: Any) -> None:
    assert read_classic_badput(cloudwatch, "c", "llm", AT) == ({}, {})
