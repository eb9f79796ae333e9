"""The fail-slow and goodput pages' reads (lambdas/notifier/fail_slow_page.py) on a real PromQL
engine (Debian's Prometheus, tests/prometheus.py), over the exporter's and the emitter's series
as OTel mode stores them: a job of 8 ranks on 2 nodes whose GPU 2 of the second node is held by
NVML's thermal slowdown from minute 20, then one whose ranks all wait for data."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.demo.promql import Sample
from gpu_insights_agent.contract.metrics import GpuMetric, TrainingMetric
from lambdas.notifier.fail_slow_page import culprit_of, grown_badput, read_badput
from lambdas.shared.dcgm import CLOUDWATCH
from lambdas.shared.promql import PromQLClient
from tests.functional.lambdas.notifier.job_series import rank_labels
from tests.prometheus import legacy_labels, serve, write_openmetrics

pytestmark = pytest.mark.promql_engine

START = 1_764_000_000.0
NODES = ("ip-10-0-1-1.ec2.internal", "ip-10-0-1-2.ec2.internal")
L = CLOUDWATCH
LABELS = legacy_labels()


def _samples(job: str, minutes: int, hot_from: int, waiting_from: int) -> Iterator[Sample]:
    for m in range(minutes):
        at = START + 60 * m
        for n, node in enumerate(NODES):
            for g in range(4):
                gpu = {L.cluster: "train", L.node: node, L.gpu: str(g)}
                # The exporter cycles every 10 s; a minute's samples are enough here.
                yield str(GpuMetric.HEALTHY), gpu, at, 1.0
                if (n, g) == (1, 2) and m >= hot_from:  # a fault gauge: sent while non-zero
                    yield str(GpuMetric.THROTTLED_THERMAL), gpu, at, 1.0
                series = rank_labels(job, node, str(4 * n + g))
                waiting = m >= waiting_from
                yield str(TrainingMetric.DATA_WAIT_SHARE), series, at, 40.0 if waiting else 2.0
                # The window's time split: 40% (or 2%) of its 60 s waiting, the rest compute.
                wait_s = 24.0 if waiting else 1.2
                yield str(TrainingMetric.DATA_WAIT_TIME), series, at, wait_s
                yield str(TrainingMetric.COMPUTE_TIME), series, at, 60.0 - wait_s
                yield str(TrainingMetric.GOODPUT), series, at, 0.55 if waiting else 0.95
                yield str(TrainingMetric.STEP_TIME), series, at, 1.2


def _saving(job: str, minutes: int) -> Iterator[Sample]:
    """Two ranks' windows every 5 minutes (``flush_s=300``), each saving 420 s from minutes 60
    and 100 (a window's 300 s, then 120 s of the next), as the --history fixture's
    llama-slow-checkpoint does; the rest of their time compute."""
    saves = {60: 300.0, 65: 120.0, 100: 300.0, 105: 120.0}
    for m in range(0, minutes, 5):
        at = START + 60 * m
        for rank in ("0", "1"):
            series = rank_labels(job, NODES[0], rank)
            yield str(TrainingMetric.GOODPUT), series, at, 0.8
            yield str(TrainingMetric.STEP_TIME), series, at, 2.0
            save = saves.get(m, 0.0)
            if save:
                yield str(TrainingMetric.CHECKPOINT_SAVE_TIME), series, at, save
            if save < 300:
                yield str(TrainingMetric.COMPUTE_TIME), series, at, 300.0 - save


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromQLClient]:
    folder: Path = tmp_path_factory.mktemp("fail_slow")
    samples = [
        *_samples("llm-hot", 40, hot_from=20, waiting_from=10_000),
        *_samples("llm-waits", 150, hot_from=10_000, waiting_from=75),
        *_saving("llm-saves", 120),
    ]
    write_openmetrics(folder / "jobs.om", samples)
    with serve(folder / "jobs.om", folder / "data") as url:
        yield PromQLClient(endpoint=url, region="us-east-1", credentials=None)


def test_the_fail_slow_page_names_the_throttled_gpu_of_its_job(prometheus: PromQLClient) -> None:
    at = START + 30 * 60
    verdict = culprit_of(prometheus, "train", "nlp", "llm-hot", NODES, at, LABELS)
    c = verdict.culprit
    assert c is not None
    assert (c.node, c.gpu) == (NODES[1], "2")
    assert c.evidence == ("NVML clock event reason: thermal slowdown",)
    # At minute 15 the GPU was not yet throttled: nothing stands out.
    early = culprit_of(prometheus, "train", "nlp", "llm-hot", NODES, at - 900, LABELS)
    assert early.culprit is None


def test_the_goodput_page_says_the_data_wait_grew(prometheus: PromQLClient) -> None:
    """From minute 75 every rank waits 40% of its step: the hour to minute 149 against the
    hour to minute 89, whose last 15 minutes of 61 samples waited too."""
    now, before = read_badput(prometheus, "train", "nlp", "llm-waits", START + 149 * 60, LABELS)
    assert now["data wait"] == pytest.approx(0.40)
    assert before["data wait"] == pytest.approx((46 * 0.02 + 15 * 0.40) / 61)
    assert (now["no steps"], now["checkpoint saves"], now["evaluation"]) == (0.0, 0.0, 0.0)
    assert grown_badput(now, before) == (
        "data wait: 40% of the hour, 11% the hour before: the input pipeline does not keep "
        "up: more loader workers, prefetching, or faster storage (S3 throughput, FSx for Lustre)"
    )


def test_the_goodput_page_shares_saves_over_the_ranks_hour_whatever_the_sampling(
    prometheus: PromQLClient,
) -> None:
    """Saves are a share of the ranks' time split, not of their windows taken as a minute
    each: at minute 112 each rank saved 420 s twice in the hour (840 s of 3,600: 23%); read
    as minute windows, its 12 windows a rank would make it 117%."""
    # At minute 112 the hour holds the windows of minutes 55 to 110: 12 of 300 s a rank.
    now, before = read_badput(prometheus, "train", "nlp", "llm-saves", START + 112 * 60, LABELS)
    assert now["checkpoint saves"] == pytest.approx(840 / 3600)
    assert before["checkpoint saves"] == 0.0  # the hour to minute 52 saved nothing
    assert grown_badput(now, before).startswith(
        "checkpoint saves: 23% of the hour, 0% the hour before"
    )
