"""Goodput's waiting for GPUs read from each mode's pod phase (lambdas/training_analyzer/goodput/
pending.py): Kube State Metrics' Pending phase and GPU requests on a real PromQL engine (OTel,
the series as the demo's realistic cluster model writes them: cli/demo/kube_state.py), and
Container Insights' ``pod_status_pending`` against moto (Classic). A PyTorchJob's master asks
for 8 GPUs and waits 20 minutes of an hour before it runs: 8 x 1,200 = 9,600 GPU-seconds."""

from collections.abc import Iterator
from datetime import UTC, datetime

import boto3
import pytest
from moto import mock_aws

from cli.demo.exporter import pod_uid
from cli.demo.kube_state import KSM_STEP_S, pending_samples
from cli.demo.promql import Sample, serving
from cli.demo.realistic import container_insights as ci
from cli.demo.realistic import pods as k8s
from cli.demo.storage import END
from cli.demo.training import CLUSTER as EMITTER_CLUSTER
from cli.demo.training import RANK_PODS, otlp_samples
from lambdas.shared.aws_clients import client
from lambdas.shared.dcgm import CLOUDWATCH as L
from lambdas.shared.events import analysis_window
from lambdas.shared.kube_state import KSM_PHASE_PENDING, KSM_POD_PHASE
from lambdas.training_analyzer.goodput.jobs import Badput
from lambdas.training_analyzer.goodput.pending import (
    PodPending,
    classic_pending,
    job_pending,
    otel_pending,
)
from lambdas.training_analyzer.run import analyze_training
from tests.prometheus import binaries

START = 1_764_000_000 - 1_764_000_000 % 3600
CLUSTER = "train"
MASTER, WORKER = k8s.pytorchjob_pods("nlp", "bert-large-pretrain", 1)
(TOKENIZER,) = k8s.pytorchjob_pods("nlp", "tokenizer", 0)
WAITED = 8 * 1200.0
#: The demo's one-day lookback (its jobs' series: cli/demo/training.py).
_, STOP = analysis_window(END, 1)


def _running(pod: k8s.Pod, start: float, end: float, cluster: str = CLUSTER) -> Iterator[Sample]:
    """A pod's Pending series at 0 from ``start`` to ``end`` (it runs)."""
    labels = {L.cluster: cluster, L.namespace: pod.namespace, L.pod: pod.name, "uid": pod_uid(pod)}
    at = start
    while at < end:
        yield KSM_POD_PHASE, labels | {"phase": KSM_PHASE_PENDING}, at, 0.0
        at += KSM_STEP_S


@pytest.mark.promql_engine
def test_otel_reads_each_pending_gpu_pods_gpu_seconds_from_kube_state_metrics() -> None:
    binaries()
    samples = [
        # The master pending 20 minutes, then running; the worker running all hour.
        *pending_samples(CLUSTER, MASTER, 8, START, START + 1200),
        *_running(MASTER, START + 1200, START + 3600),
        *_running(WORKER, START, START + 3600),
        # A pod that asks for no GPU, pending all hour: no GPU waited.
        *pending_samples(CLUSTER, TOKENIZER, 0, START, START + 3600),
    ]
    with serving(samples, "us-east-1") as promql:
        read = otel_pending(promql, CLUSTER, start=START, end=START + 3600)
    (pod,) = read
    assert (pod.pod, pod.hour) == (MASTER.name, float(START))
    assert pod.gpu_seconds == pytest.approx(WAITED)


def test_classic_reads_pod_status_pending_and_counts_the_pods_ranks_as_its_gpus() -> None:
    with mock_aws():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        cw = client("cloudwatch", session=session)
        data = []
        for pod, pending_minutes in ((MASTER, 20), (WORKER, 0)):
            dims = {
                k: v
                for k, v in ci.pod_gpu_dimensions(CLUSTER, pod, "nvidia0").items()
                if k != "GpuDevice"
            }
            data += [
                {
                    "MetricName": "pod_status_pending",
                    "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
                    "Timestamp": datetime.fromtimestamp(START + 60 * i, UTC),
                    "Value": float(i < pending_minutes),
                }
                for i in range(60)
            ]
        cw.put_metric_data(Namespace="ContainerInsights", MetricData=data)
        # The cluster-wide series is no pod's: left out.
        cw.put_metric_data(
            Namespace="ContainerInsights",
            MetricData=[{"MetricName": "pod_status_pending", "Value": 3.0,
                         "Dimensions": [{"Name": "ClusterName", "Value": CLUSTER}],
                         "Timestamp": datetime.fromtimestamp(START, UTC)}],
        )  # fmt: skip
        read = classic_pending(
            cw, CLUSTER, {MASTER.name: 8.0, WORKER.name: 8.0}, start=START, end=START + 3600
        )
    assert read == [PodPending(MASTER.name, float(START), WAITED)]


def test_a_pods_pending_time_is_its_jobs_by_the_name_its_emitter_reported() -> None:
    read = [
        PodPending(MASTER.name, float(START), WAITED),
        PodPending(WORKER.name, float(START + 3600), 600.0),
        PodPending("deleted-while-pending", float(START), 3600.0),
    ]
    pods = {MASTER.name: "bert-large-pretrain", WORKER.name: "bert-large-pretrain"}
    assert job_pending(read, pods) == {
        "bert-large-pretrain": {float(START): WAITED, float(START + 3600): 600.0}
    }


@pytest.mark.promql_engine
def test_a_jobs_pods_pending_time_is_its_goodputs_waiting_for_gpus() -> None:
    """The training analyzer's run in OTel mode (its readers on a real engine): bert-data-
    bound's first pod, 1 GPU, pending 20 minutes of the window's first hour, is 1,200
    GPU-seconds of its goodput's waiting for GPUs, over the window and the attributed day."""
    binaries()
    pod = RANK_PODS["bert-data-bound"][0]
    first = STOP - 86_400
    samples = [
        *otlp_samples((first, STOP)),
        *pending_samples(EMITTER_CLUSTER, pod, 1, first, first + 1200),
        *_running(pod, first + 1200, first + 3600, EMITTER_CLUSTER),
    ]
    with mock_aws(), serving(samples, "us-east-1") as promql:
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        run = analyze_training(
            cloudwatch=client("cloudwatch", session=session), logs=client("logs", session=session),
            cluster=EMITTER_CLUSTER, start=first, end=STOP, gpu_hour_usd=6.88,
            emitter_promql=promql, ksm_promql=promql,
        )  # fmt: skip
    assert run.skipped == []
    for goodput in (run.goodput, run.day_goodput):
        badput = goodput["bert-data-bound"].split.badput
        assert badput[Badput.WAITING_FOR_GPUS] == pytest.approx(1200.0)
        assert goodput["resnet-healthy"].split.badput[Badput.WAITING_FOR_GPUS] == 0.0
