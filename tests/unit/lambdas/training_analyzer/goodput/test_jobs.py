"""A job's goodput and badput, each category with real numbers, summing to what it held."""

import json
import math

import pytest

from lambdas.training_analyzer.analysis import JobSeries, RankStats
from lambdas.training_analyzer.goodput.jobs import (
    HOUR,
    Badput,
    JobGoodput,
    ideal_step_time,
    job_goodput,
    optimal_checkpoint_interval,
    slowest_rank_share,
)

H = [1_800_000_000.0 + i * HOUR for i in range(5)]
GPUS = 2


def restarted_job() -> JobSeries:
    """Two GPUs, five hours. Attempt 0 starts from step 0: 10 minutes' startup, 2 s of work a
    step, a 5-minute save at step 1,200, a 5-minute evaluation; it hangs at step 3,300 in the
    third hour for 40 minutes and is killed. Attempt 1 resumes from step 1,200 after a
    15-minute recovery and steps to 4,350. Every figure is both ranks' seconds."""
    two = float(GPUS)
    return JobSeries(
        job="llm",
        startup_time={H[0]: two * 600, H[3]: two * 900},
        compute_time={
            H[0]: two * 2400,
            H[1]: two * 3000,
            H[2]: two * 1200,
            H[3]: two * 2700,
            H[4]: two * 3600,
        },
        data_wait_time={H[0]: two * 300, H[1]: two * 300},
        checkpoint_save_time={H[0]: two * 300},
        checkpoint_saves={H[0]: two},
        evaluation_time={H[1]: two * 300},
        stalled_time={H[2]: two * 2400},
        steps={
            H[0]: two * 1200,
            H[1]: two * 1500,
            H[2]: two * 600,
            H[3]: two * 1350,
            H[4]: two * 1800,
        },
        step_number={H[0]: 1200, H[1]: 2700, H[2]: 3300, H[3]: 2550, H[4]: 4350},
        resumed_from={H[0]: 0, H[3]: 1200},
        resumes={H[0]: two, H[3]: two},
        failures={H[2]: 1},
    )


def test_each_category_of_a_restarted_job_in_gpu_hours_adds_up_to_what_it_held() -> None:
    g = job_goodput(restarted_job(), gpus=GPUS, pending_gpu_seconds=GPUS * 900)
    assert g is not None
    hours = g.split.gpu_hours()
    assert hours == pytest.approx(
        {
            "productive": (25_800 - 8_400) / HOUR,  # work less the 2,100 steps redone x 4 s
            "waiting_for_gpus": 1_800 / HOUR,
            "startup": 1_200 / HOUR,
            "data_loading": 1_200 / HOUR,
            "checkpoint_save": 600 / HOUR,
            "evaluation": 600 / HOUR,
            "hung": 4_800 / HOUR,
            "progress_lost": 8_400 / HOUR,
            "recovery": 1_800 / HOUR,
            "waiting_on_slowest_rank": 0.0,
            "held_no_steps": 0.0,
        }
    )
    assert sum(hours.values()) == pytest.approx(g.total_gpu_hours)
    assert g.total_gpu_hours == pytest.approx(10.5)  # 5 hours x 2 GPUs, 15 minutes pending
    assert g.goodput == pytest.approx(17_400 / 37_800)
    assert g.productive_gpu_hours == pytest.approx(17_400 / HOUR)
    assert g.steps_redone == pytest.approx(2_100)
    assert (g.failures, g.restarts) == (1, 1)
    assert g.split.largest() == (Badput.PROGRESS_LOST, 8_400.0)
    # Each attempt: the first ran three hours, the second two (its recovery and redone steps).
    first, second = g.attempts
    assert (first.resumed_from, second.resumed_from) == (0, 1200)
    assert first.split.total == pytest.approx(21_600)
    assert first.split.productive == pytest.approx(13_200)
    assert first.split.badput[Badput.HUNG] == pytest.approx(4_800)
    assert second.split.total == pytest.approx(14_400)
    assert second.split.badput[Badput.RECOVERY] == pytest.approx(1_800)
    assert second.split.productive == pytest.approx(12_600 - 8_400)
    # Young: one 300 s save in 5 running hours, one failure in 5 hours.
    assert g.mean_checkpoint_save_s == pytest.approx(300)
    assert g.mtbf_hours == pytest.approx(5)
    assert g.checkpoint_interval_s == pytest.approx(5 * HOUR)
    assert g.optimal_checkpoint_interval_s == pytest.approx(math.sqrt(2 * 300 * 5 * HOUR))


def test_a_rank_blocked_on_a_slower_one_and_pod_time_no_emitter_saw() -> None:
    series = JobSeries(
        job="vit",
        startup_time={H[0]: 600},
        compute_time={H[0]: 2_500, H[1]: 2_500},
        data_wait_time={H[0]: 500},
        steps={H[0]: 1_000, H[1]: 1_000},
        idle_time={H[1]: 100},
        step_number={H[0]: 500, H[1]: 1_000},
    )
    # Rank 1 waits in its collectives 1 s a step for rank 0's batches: a fifth of the work.
    ranks = [
        RankStats(rank="0", steps=1_000, mean_step_time=3.0, compute_seconds=2_000),
        RankStats(rank="1", steps=1_000, mean_step_time=3.0, compute_seconds=3_000),
    ]
    assert slowest_rank_share(ranks) == pytest.approx(0.2)
    # The pods held 7,200 GPU-seconds each hour; the emitter saw 3,600 and 2,600.
    held = {H[0]: 7_200.0, H[1]: 7_200.0}
    g = job_goodput(series, gpus=2, ranks=ranks, held_gpu_seconds=held)
    assert g is not None
    b = g.split.badput
    assert b[Badput.WAITING_ON_SLOWEST_RANK] == pytest.approx(1_000)
    assert g.split.productive == pytest.approx(4_000)
    assert b[Badput.STARTUP] == pytest.approx(600 + 3_600)  # before its first step's hour ended
    assert b[Badput.HELD_NO_STEPS] == pytest.approx(100 + 4_600)
    assert b[Badput.DATA_LOADING] == pytest.approx(500)
    assert g.split.total == pytest.approx(14_400)


def test_a_job_that_never_stepped_held_its_gpus_with_no_steps() -> None:
    g = job_goodput(JobSeries(job="stuck", startup_time={H[0]: 7_200}), gpus=2)
    assert g is not None
    assert g.goodput == 0.0
    assert g.split.badput[Badput.HELD_NO_STEPS] == pytest.approx(7_200)
    assert job_goodput(JobSeries(job="old-emitter", steps={H[0]: 10}), gpus=1) is None


def test_google_ideal_step_time_and_young() -> None:
    # Median 2, MAD 0 (three of five at 2): the 9 s outlier is out, the 2.0s average 2.
    assert ideal_step_time([2.0, 2.0, 2.0, 2.1, 9.0]) == pytest.approx(2.0)
    assert ideal_step_time([]) is None
    # A 60 s save and a failure a day: about 54 minutes.
    assert optimal_checkpoint_interval(60, 86_400) == pytest.approx(3219.9, abs=0.1)


def test_a_jobs_goodput_reads_back_from_its_json() -> None:
    g = job_goodput(restarted_job(), gpus=GPUS, pending_gpu_seconds=GPUS * 900)
    assert g is not None
    again = JobGoodput.from_json(json.loads(json.dumps(g.to_json())))
    assert again.split.total == pytest.approx(g.split.total)
    assert again.goodput == pytest.approx(g.goodput)
    assert again.attempts[1].split.badput[Badput.RECOVERY] == pytest.approx(1_800)
    assert again.optimal_checkpoint_interval_s == g.optimal_checkpoint_interval_s


def test_a_new_run_after_one_that_succeeded_is_no_restart() -> None:
    """A job name run again from step 0 after a run that succeeded: its step number starts
    over, but nothing was redone and its startup is startup."""
    series = JobSeries(
        job="nightly",
        startup_time={H[0]: 300, H[2]: 300},
        compute_time={H[0]: 3_000, H[2]: 3_000},
        idle_time={H[0]: 300},
        steps={H[0]: 1_500, H[2]: 1_500},
        step_number={H[0]: 1_500, H[2]: 1_500},
        resumed_from={H[0]: 0, H[2]: 0},
        resumes={H[0]: 1, H[2]: 1},
        successes={H[0]: 1},
    )
    g = job_goodput(series, gpus=1)
    assert g is not None
    assert (g.restarts, g.steps_redone, g.failures) == (0, 0.0, 0)
    assert g.split.badput[Badput.STARTUP] == pytest.approx(600)
    assert g.split.badput[Badput.RECOVERY] == 0.0
    assert g.split.badput[Badput.PROGRESS_LOST] == 0.0
    assert g.goodput == pytest.approx(6_000 / 6_900)


def test_a_process_from_step_0_with_no_sign_of_failure_is_a_new_run() -> None:
    """No success recorded (an earlier run's outcome outside the window), no failure, no stall,
    and the attempt starts from 0: a new run, not a restart that lost the steps before it."""
    series = JobSeries(
        job="team",
        compute_time={H[0]: 3_600, H[1]: 3_600, H[2]: 3_600},
        steps={H[0]: 1_800, H[1]: 1_800, H[2]: 1_800},
        step_number={H[2]: 1_800},
        resumed_from={H[2]: 0},
        resumes={H[2]: 1},
    )
    g = job_goodput(series, gpus=1)
    assert g is not None
    assert (g.restarts, g.steps_redone, len(g.attempts)) == (0, 0.0, 2)
    assert g.goodput == 1.0


def _attempt(rank_share: float, hourly: dict[str, dict[float, float]]) -> JobSeries:
    """One attempt's series (or one rank's part of it): its seconds and counts times
    ``rank_share``, its step numbers as they are."""
    series = JobSeries(job="llm")
    for name, values in hourly.items():
        share = 1.0 if name in ("step_number", "resumed_from") else rank_share
        setattr(series, name, {h: v * share for h, v in values.items()})
    return series


def restarted_within_an_hour(labels: str) -> JobSeries:
    """Two GPUs, three hours; the restart in the middle of hour 1. Attempt 0: 10 minutes'
    startup, 2 s of work a step, a 5-minute save at step 1,200 and 5 minutes of data wait in
    hour 0; in hour 1 600 more steps (to 1,800), a 10-minute hang, killed at minute 30.
    Attempt 1 starts at minute 30, resumes from step 1,200 after a 10-minute recovery and
    steps to 1,800 by the hour's end, then to 3,600. Per rank's seconds below; the series
    carry either one label an attempt (``launcher``: torchrun's count) or one a rank
    (``drawn``: each process drew its own)."""
    two = float(GPUS)
    first: dict[str, dict[float, float]] = {
        "startup_time": {H[0]: 600},
        "compute_time": {H[0]: 2400, H[1]: 1200},
        "data_wait_time": {H[0]: 300},
        "checkpoint_save_time": {H[0]: 300},
        "checkpoint_saves": {H[0]: 1},
        "stalled_time": {H[1]: 600},
        "steps": {H[0]: 1200, H[1]: 600},
        "step_number": {H[0]: 1200, H[1]: 1800},
        "resumed_from": {H[0]: 0},
        "resumes": {H[0]: 1},
        "failures": {H[1]: 0.5},  # rank 0 records the outcome: 1 over the two
    }
    second: dict[str, dict[float, float]] = {
        "startup_time": {H[1]: 600},
        "compute_time": {H[1]: 1200, H[2]: 3600},
        "steps": {H[1]: 600, H[2]: 1800},
        "step_number": {H[1]: 1800, H[2]: 3600},
        "resumed_from": {H[1]: 1200},
        "resumes": {H[1]: 1},
    }
    if labels == "launcher":
        attempts = {
            "torchelastic-0": _attempt(two, first),
            "torchelastic-1": _attempt(two, second),
        }
    else:
        attempts = {
            f"{attempt}{rank}": _attempt(1.0, series)
            for attempt, series in (("a0", first), ("b1", second))
            for rank in range(GPUS)
        }
    return JobSeries(
        job="llm",
        startup_time={H[0]: two * 600, H[1]: two * 600},
        compute_time={H[0]: two * 2400, H[1]: two * 2400, H[2]: two * 3600},
        data_wait_time={H[0]: two * 300},
        checkpoint_save_time={H[0]: two * 300},
        checkpoint_saves={H[0]: two},
        stalled_time={H[1]: two * 600},
        steps={H[0]: two * 1200, H[1]: two * 1200, H[2]: two * 1800},
        step_number={H[0]: 1200, H[1]: 1800, H[2]: 3600},
        resumed_from={H[0]: 0, H[1]: 1200},
        resumes={H[0]: two, H[1]: two},
        failures={H[1]: 1},
        attempts=attempts,
    )


@pytest.mark.parametrize("labels", ["launcher", "drawn"])
def test_attempts_told_apart_by_their_label_split_the_hour_they_shared_exactly(
    labels: str,
) -> None:
    g = job_goodput(restarted_within_an_hour(labels), gpus=GPUS)
    assert g is not None
    first, second = g.attempts
    # The first held 90 minutes a GPU: 60 minutes of work, startup, save, data wait, the hang.
    assert first.split.total == pytest.approx(GPUS * 5_400)
    assert first.split.productive == pytest.approx(GPUS * 3_600)
    assert first.split.badput[Badput.STARTUP] == pytest.approx(GPUS * 600)
    assert first.split.badput[Badput.CHECKPOINT_SAVE] == pytest.approx(GPUS * 300)
    assert first.split.badput[Badput.DATA_LOADING] == pytest.approx(GPUS * 300)
    assert first.split.badput[Badput.HUNG] == pytest.approx(GPUS * 600)
    assert first.split.badput[Badput.PROGRESS_LOST] == 0.0
    # The second: 10 minutes' recovery to its first step, then it redid 1,200 to 1,800 (600
    # steps of 2 s on each GPU) before making progress.
    assert second.resumed_from == 1200
    assert second.split.total == pytest.approx(GPUS * 5_400)
    assert second.split.badput[Badput.RECOVERY] == pytest.approx(GPUS * 600)
    assert second.split.badput[Badput.PROGRESS_LOST] == pytest.approx(GPUS * 1_200)
    assert second.split.productive == pytest.approx(GPUS * 3_600)
    for attempt in g.attempts:  # each attempt's categories add up to what it held
        assert sum(attempt.split.gpu_hours().values()) == pytest.approx(
            attempt.split.total / HOUR, abs=1e-12
        )
    # The job is their sum: 3 hours of 2 GPUs, two thirds of it kept steps' work.
    assert g.split.total == pytest.approx(first.split.total + second.split.total)
    assert g.total_gpu_hours == pytest.approx(6.0)
    assert g.goodput == pytest.approx(2 / 3)
    assert g.steps_redone == pytest.approx(600)
    assert (g.failures, g.restarts) == (1, 1)
    expected = ("torchelastic-0",) if labels == "launcher" else ("a00", "a01")
    assert first.labels == expected
    assert JobGoodput.from_json(json.loads(json.dumps(g.to_json()))) == g


def test_series_without_the_label_or_partly_labelled_split_attempts_by_the_hour() -> None:
    """An older emitter's series carry no attempt: the restart's hour is the new attempt's
    (its work in that hour included), as the job's hourly series can only say."""
    labelled = restarted_within_an_hour("launcher")
    for attempts in ({}, {"torchelastic-1": labelled.attempts["torchelastic-1"]}):
        labelled.attempts = attempts
        g = job_goodput(labelled, gpus=GPUS)
        assert g is not None
        first, second = g.attempts
        assert first.labels == second.labels == ()
        assert first.split.productive == pytest.approx(GPUS * 2_400)
        assert g.split.total == pytest.approx(GPUS * 10_800)
        assert g.steps_redone == pytest.approx(600)
