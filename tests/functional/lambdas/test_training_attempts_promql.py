"""Goodput per attempt from the emitter's OTLP series read with PromQL: a two-rank job whose
first attempt hangs and is killed in the middle of an hour and whose restart (torchrun's next
count) resumes from its last checkpoint in the same hour, its points made by the emitter's own
OTLP mapping (emitter/otlp.py ``training_points``, which labels each with the attempt) and
served by a real PromQL engine (tests/prometheus.py), beside an older emitter's job whose
series carry no attempt. The reader groups by attempt where the label exists; goodput then
gives each attempt its own seconds of the hour they shared."""

from collections.abc import Iterator
from typing import Any

import pytest

from cli.demo.promql import answering
from cli.demo.storage import END
from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_JOB,
    PROP_ATTEMPT,
    PROP_RANK,
    TrainingMetric,
)
from lambdas.shared.promql import PromQLClient, endpoint_for
from lambdas.training_analyzer.goodput.jobs import HOUR, Badput, job_goodput
from lambdas.training_analyzer.promql_jobs import job_series
from tests.prometheus import emitter_openmetrics, serve

pytestmark = pytest.mark.promql_engine

REGION = "us-east-1"
CLUSTER = "train"
START = END - 3 * HOUR
RANKS = 2
T = TrainingMetric

Window = tuple[int, int, dict[TrainingMetric, float]]


def _stepping(hour: int, window: int, step_number: int) -> Window:
    """A window of 300 steps of 2 s, to ``step_number``."""
    return hour, window, {T.COMPUTE_TIME: 600, T.STEPS: 300, T.STEP_NUMBER: step_number}


#: Each rank's ten-minute windows (hour, window 1-6, what it did), attempt by attempt: the
#: figures of tests/unit/lambdas/training_analyzer/goodput/test_jobs.py's restart within an
#: hour, 2 s of work a step.
FIRST: list[Window] = [
    (0, 1, {T.STARTUP_TIME: 600}),
    *(_stepping(0, w, 300 * (w - 1)) for w in (2, 3, 4, 5)),
    (0, 6, {T.DATA_WAIT_TIME: 300, T.CHECKPOINT_SAVE_TIME: 300, T.CHECKPOINT_SAVE: 300}),
    _stepping(1, 1, 1500),
    _stepping(1, 2, 1800),
    (1, 3, {T.STALLED_TIME: 600, T.JOB_FAILED: 1}),
]
SECOND: list[Window] = [
    (1, 4, {T.STARTUP_TIME: 600}),
    (1, 5, {**_stepping(1, 5, 1500)[2], T.RESUMED_FROM_STEP: 1200}),
    _stepping(1, 6, 1800),
    *(_stepping(2, w, 1800 + 300 * w) for w in range(1, 7)),
]


def _documents(job: str, attempt: str | None, windows: list[Window]) -> list[dict[str, Any]]:
    """Each rank's windows as the emitter's documents (the fields ``training_points`` reads);
    the first stepping window says where the attempt began (step 0 unless it says)."""
    documents = []
    for rank in range(RANKS):
        began = False
        for hour, window, given in windows:
            values = dict(given)
            if T.STEPS in values and not began:
                values.setdefault(T.RESUMED_FROM_STEP, 0)
                began = True
            if values.get(T.JOB_FAILED) and rank:
                del values[T.JOB_FAILED]  # rank 0 records the outcome
            document: dict[str, Any] = {
                DIM_CLUSTER: CLUSTER,
                DIM_JOB: job,
                PROP_RANK: rank,
                "_aws": {
                    "Timestamp": int((START + hour * HOUR + window * 600 - 5) * 1000),
                    "CloudWatchMetrics": [{"Metrics": [{"Name": str(m)} for m in values]}],
                },
                **{str(m): v for m, v in values.items()},
            }
            if attempt:
                document[PROP_ATTEMPT] = attempt
            documents.append(document)
    return documents


@pytest.fixture(scope="module")
def promql(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromQLClient]:
    documents = [
        *_documents("llm", "torchelastic-0", FIRST),
        *_documents("llm", "torchelastic-1", SECOND),
        *_documents("old", None, [*FIRST, *SECOND]),
    ]
    folder = tmp_path_factory.mktemp("attempts")
    emitter_openmetrics(folder / "jobs.om", documents, "ml")
    with serve(folder / "jobs.om", folder / "data") as url, answering(REGION, url):
        yield PromQLClient(endpoint=endpoint_for(REGION), region=REGION, credentials=None)


def test_the_reader_groups_by_attempt_and_goodput_splits_the_shared_hour(
    promql: PromQLClient,
) -> None:
    series = job_series(promql, CLUSTER, ["llm", "old"], start=START, end=END)
    llm, old = series["llm"], series["old"]
    hours = [START + i * HOUR for i in range(3)]
    # The job's series are its attempts' added up, the same as the older emitter's.
    for s in (llm, old):
        assert s.compute_time == {hours[0]: 4_800, hours[1]: 4_800, hours[2]: 7_200}
        assert s.step_number == {hours[0]: 1_200, hours[1]: 1_800, hours[2]: 3_600}
        assert s.resumed_from == {hours[0]: 0, hours[1]: 1_200}
    assert sorted(llm.attempts) == ["torchelastic-0", "torchelastic-1"]
    assert old.attempts == {}
    first, second = llm.attempts["torchelastic-0"], llm.attempts["torchelastic-1"]
    assert first.compute_time == {hours[0]: 4_800, hours[1]: 2_400}
    assert first.stalled_time == {hours[1]: 1_200}
    assert second.startup_time == {hours[1]: 1_200}
    assert second.resumed_from == {hours[1]: 1_200}

    g = job_goodput(llm, gpus=RANKS)
    assert g is not None
    a, b = g.attempts
    assert (a.labels, b.labels) == (("torchelastic-0",), ("torchelastic-1",))
    assert a.split.productive == pytest.approx(RANKS * 3_600)
    assert a.split.badput[Badput.HUNG] == pytest.approx(RANKS * 600)
    assert b.split.badput[Badput.RECOVERY] == pytest.approx(RANKS * 600)
    assert b.split.badput[Badput.PROGRESS_LOST] == pytest.approx(RANKS * 1_200)
    assert a.split.total + b.split.total == pytest.approx(g.split.total)
    assert g.total_gpu_hours == pytest.approx(6.0)
    assert g.goodput == pytest.approx(2 / 3)
    # Without the label, the restart's hour is the new attempt's: its work there included.
    h = job_goodput(old, gpus=RANKS)
    assert h is not None
    assert h.attempts[0].split.productive == pytest.approx(RANKS * 2_400)
    assert h.split.total == pytest.approx(g.split.total)
