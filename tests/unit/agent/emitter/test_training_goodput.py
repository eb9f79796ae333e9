"""The emitter's split of each window's seconds by what the rank did (docs/goodput.md): they
add up to the window, a save or an evaluation inside a step is not the step's work, a step
past due is stalled, and the step number goes on from where the attempt resumed."""

from __future__ import annotations

import statistics

import pytest

from gpu_insights_agent.contract.metrics import TIME_METRICS
from gpu_insights_agent.emitter.training import (
    TrainingMetrics,
    TrainingMetricsError,
    attempt_id,
)
from tests.unit.agent.emitter.test_training import Keep, loader
from tests.unit.agent.exporter.nvml_trace import Clock


def _totals(sink: Keep) -> dict[str, float]:
    totals: dict[str, float] = {}
    for document in sink.windows:
        for metric in TIME_METRICS:
            totals[str(metric)] = totals.get(str(metric), 0.0) + document.get(str(metric), 0.0)
    return totals


@pytest.mark.parametrize("encoding", ["emf", "otlp"])
def test_a_windows_seconds_split_by_what_the_rank_did_and_add_up(encoding: str) -> None:
    clock, sink = Clock(1000.0), Keep(encoding)
    metrics = TrainingMetrics(
        job_name="llm", cluster_name="train", sink=sink, clock=clock, wall_clock=clock,
        flush_s=60.0, heartbeat=False,
    )  # fmt: skip
    with metrics.checkpoint_restore():
        clock.now += 6.0  # restore: startup
    clock.now += 4.0  # model build: startup
    metrics.resume_from_step(100)
    for step, _ in enumerate(metrics.steps(loader(clock, 40, wait=0.5))):
        clock.now += 1.5  # the step's work
        if step == 9:
            with metrics.checkpoint_save():
                clock.now += 20.0  # a save inside the step: not its work, not a stall
        if step == 19:
            with metrics.evaluating():
                clock.now += 30.0
        if step == 39:
            clock.now += 100.0  # a hang, past due 3 x the recent windows' median step
    clock.now += 5.0  # after the loop, before close
    metrics.close(succeeded=False)
    totals = _totals(sink)
    # The windows before the hang: 15 steps in 50 s (the save in one), 15 in 60 s (the
    # evaluation): due, as step_overdue_seconds reads it, 3 x their median after the work began.
    due = 3 * statistics.median([50 / 15, 60 / 15])
    assert totals == pytest.approx(
        {
            "startup_seconds": 10.0,
            "data_wait_total_seconds": 40 * 0.5,
            # 40 steps of 1.5 s, and the hung step's work until due beyond its own 1.5 s
            "compute_seconds": 40 * 1.5 + (due - 1.5),
            "checkpoint_save_total_seconds": 20.0,
            "evaluation_seconds": 30.0,
            "stalled_seconds": 100.0 - (due - 1.5),
            "idle_seconds": 5.0,
        }
    )
    assert sum(totals.values()) == pytest.approx(clock.now - 1000.0)
    numbers = [d["step_number"] for d in sink.windows if "step_number" in d]
    assert numbers[-1] == 140  # 100 + 40 steps
    resumed = [d["resumed_from_step"] for d in sink.windows if "resumed_from_step" in d]
    assert resumed == [100]  # once, in the attempt's first window with a step


def test_the_attempt_is_the_launchers_count_or_an_id_drawn_at_start() -> None:
    assert attempt_id({"TORCHELASTIC_RESTART_COUNT": "2"}) == "torchelastic-2"
    assert attempt_id({"JOBSET_RESTART_ATTEMPT": "1"}) == "jobset-1"
    drawn = attempt_id({"TORCHELASTIC_RESTART_COUNT": "not a number"})
    assert len(drawn) == 12
    assert drawn != attempt_id({})
    sink = Keep()
    metrics = TrainingMetrics(job_name="j", cluster_name="c", sink=sink, heartbeat=False)
    metrics.close(succeeded=True)
    assert {d["Attempt"] for d in sink.documents} == {metrics.attempt}


def test_a_step_to_resume_from_must_be_a_count() -> None:
    metrics = TrainingMetrics(job_name="j", cluster_name="c", sink=Keep(), heartbeat=False)
    with pytest.raises(TrainingMetricsError, match="step must be an integer of 0 or more"):
        metrics.resume_from_step(-1)
    metrics.close(succeeded=True)
