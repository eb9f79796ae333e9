"""The fail-slow page's evidence beyond the throttle flags (lambdas/notifier/fail_slow_page.py)
on a real PromQL engine (Debian's Prometheus, tests/prometheus.py): the exporter's SM clock,
NVLink errors and HW Slowdown flag, and Node Exporter's CPU seconds, as OTel mode stores them.
Three jobs of 8 ranks on two nodes each, healthy for 20 minutes, then: one GPU's SM clock at
1,400 MHz against its peers' 1,980; one GPU's NVLink retrying 40 times a minute; one node's CPUs
97% busy while the others' are 40%."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.demo.promql import Sample
from gpu_insights_agent.contract.metrics import GpuMetric, TrainingMetric
from lambdas.notifier.fail_slow_page import NODE_CPU_SECONDS, culprit_of
from lambdas.shared.dcgm import CLOUDWATCH
from lambdas.shared.promql import PromQLClient
from tests.functional.lambdas.notifier.job_series import rank_labels
from tests.prometheus import legacy_labels, serve, write_openmetrics

pytestmark = pytest.mark.promql_engine

START = 1_764_000_000.0
L = CLOUDWATCH
LABELS = legacy_labels()
ONSET = 20
JOBS = {
    "llm-clock": ("ip-10-0-2-1.ec2.internal", "ip-10-0-2-2.ec2.internal"),
    "llm-nvlink": ("ip-10-0-3-1.ec2.internal", "ip-10-0-3-2.ec2.internal"),
    "llm-cpu": ("ip-10-0-4-1.ec2.internal", "ip-10-0-4-2.ec2.internal"),
}
CPUS = 4


def _samples(job: str, minutes: int = 40) -> Iterator[Sample]:
    nodes = JOBS[job]
    idle = dict.fromkeys(nodes, 0.0)
    for m in range(minutes):
        at = START + 60 * m
        fault = m >= ONSET
        for n, node in enumerate(nodes):
            busy = 0.97 if (job == "llm-cpu" and n == 1 and fault) else 0.40
            idle[node] += 60 * (1 - busy)
            for cpu in range(CPUS):
                labels = {L.cluster: "train", L.node: node, "cpu": str(cpu), "mode": "idle"}
                yield NODE_CPU_SECONDS, labels, at, idle[node]
            for g in range(4):
                gpu = {L.cluster: "train", L.node: node, L.gpu: str(g)}
                yield str(GpuMetric.HEALTHY), gpu, at, 1.0
                slow = job == "llm-clock" and (n, g) == (0, 1) and fault
                yield str(GpuMetric.SM_CLOCK), gpu, at, 1400.0 if slow else 1980.0 - 15 * (g % 2)
                if job == "llm-nvlink" and (n, g) == (1, 3) and fault:  # a fault gauge
                    yield str(GpuMetric.NVLINK_ERRORS), gpu, at, 40.0
                series = rank_labels(job, node, str(4 * n + g))
                yield str(TrainingMetric.DATA_WAIT_SHARE), series, at, 2.0


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromQLClient]:
    folder: Path = tmp_path_factory.mktemp("fail_slow_evidence")
    write_openmetrics(folder / "jobs.om", [s for job in JOBS for s in _samples(job)])
    with serve(folder / "jobs.om", folder / "data") as url:
        yield PromQLClient(endpoint=url, region="us-east-1", credentials=None)


def _culprit(prometheus: PromQLClient, job: str, minute: int) -> tuple[str, str, tuple[str, ...]]:
    verdict = culprit_of(prometheus, "train", "nlp", job, JOBS[job], START + 60 * minute, LABELS)
    c = verdict.culprit
    assert c is not None, verdict.whole_job
    return c.node, c.gpu, c.evidence


def test_a_gpu_whose_sm_clock_is_under_its_peers_is_named(prometheus: PromQLClient) -> None:
    node, gpu, evidence = _culprit(prometheus, "llm-clock", 30)
    assert (node, gpu) == (JOBS["llm-clock"][0], "1")
    assert evidence == ("SM clock 1400 MHz, 0.71 of the job's fastest GPU (1980 MHz)",)


def test_a_gpu_whose_nvlink_errors_rise_is_named(prometheus: PromQLClient) -> None:
    node, gpu, evidence = _culprit(prometheus, "llm-nvlink", 30)
    assert (node, gpu) == (JOBS["llm-nvlink"][1], "3")
    # 40 a minute in the five minutes to the alarm (six samples, both ends held), and in the
    # ten before them the onset's first five minutes, scaled to five: rising.
    assert evidence == ("rising: NVLink errors 240 (before 120)",)


def test_a_node_whose_cpu_is_saturated_is_named(prometheus: PromQLClient) -> None:
    node, gpu, evidence = _culprit(prometheus, "llm-cpu", 30)
    assert (node, gpu) == (JOBS["llm-cpu"][1], "")
    # The median of two nodes is their mean: (97 + 40) / 2, a little over by rate()'s
    # extrapolation to the window's ends.
    assert evidence == ("node CPU 97% (the job's median node 69%)",)


def test_before_the_onset_nothing_stands_out(prometheus: PromQLClient) -> None:
    for job, nodes in JOBS.items():
        at = START + 60 * 15
        assert culprit_of(prometheus, "train", "nlp", job, nodes, at, LABELS).culprit is None
