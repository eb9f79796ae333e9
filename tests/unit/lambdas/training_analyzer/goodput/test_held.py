"""A job's day of goodput over what the GPU-hour attribution says its pods held
(lambdas/training_analyzer/goodput/held.py)."""

from dataclasses import replace

import pytest

from lambdas.shared.findings import Finding, Kind, Severity
from lambdas.training_analyzer.analysis import JobSeries
from lambdas.training_analyzer.failure_placement import HeldJob
from lambdas.training_analyzer.failure_run import UnplacedFailure
from lambdas.training_analyzer.goodput.findings import goodput_finding
from lambdas.training_analyzer.goodput.held import (
    attributed_goodput,
    held_evidence,
    held_goodput,
    held_goodputs,
)
from lambdas.training_analyzer.goodput.jobs import HOUR, Badput, JobGoodput, Split, job_goodput
from lambdas.training_analyzer.run import TrainingRun
from tests.unit.lambdas.training_analyzer.goodput.test_jobs import GPUS, H, restarted_job


def test_a_jobs_goodput_is_over_the_gpu_hours_its_pods_held() -> None:
    """The emitter split 10 of the 2 ranks' GPU-hours; the attribution counts 12 (its pods'
    five clock hours whole, and a third GPU the emitter's ranks never ran on for two): its
    total is 12 GPU-hours, each category keeps its share, its GPUs are 3, its 0.5 GPU-hours
    of waiting for GPUs (pods pending, holding none) are left as they were."""
    g = job_goodput(restarted_job(), gpus=GPUS, pending_gpu_seconds=1800)
    assert g is not None
    held = HeldJob((), {H[0]: 3.0, H[1]: 3.0, H[2]: 2.0, H[3]: 2.0, H[4]: 2.0})
    mine = held_goodput(g, held)
    waiting = mine.split.badput[Badput.WAITING_FOR_GPUS]
    assert waiting == 1800
    assert (mine.split.total - waiting) / HOUR == pytest.approx(12.0)
    assert mine.gpus == 3
    seen = g.split.total - 1800
    assert mine.productive_gpu_hours == pytest.approx(g.split.productive * 12 / seen)
    data = mine.split.badput[Badput.DATA_LOADING] / HOUR
    assert data == pytest.approx(g.split.badput[Badput.DATA_LOADING] * 12 / seen)
    # Each attempt's goodput is its own share, as it was.
    assert [a.split.goodput for a in mine.attempts] == pytest.approx(
        [a.split.goodput for a in g.attempts]
    )
    assert sum(a.split.total for a in mine.attempts) / HOUR == pytest.approx(12.0)
    # A job the attribution has no pod of keeps its own figures.
    assert held_goodputs({"llm": g}, {}) == {"llm": g}
    # An hour a pod held 0.995 of a GPU (a clock hour's edge) is one GPU, not two.
    assert held_goodput(g, HeldJob((), {H[0]: 1.995})).gpus == GPUS


def _whisper() -> TrainingRun:
    """The demo's whisper-finetune: its rank 0 builds the emitter and reports its end only
    (1.6 hours of startup, no step); its goodput finding says it held its GPUs with no steps,
    and its failure's cause, still to be read from its pods' logs, links that finding."""
    g = job_goodput(JobSeries(job="whisper", startup_time={H[0]: 3600.0, H[1]: 2160.0}), gpus=1)
    assert g is not None
    finding = goodput_finding(g)
    assert finding is not None
    run = TrainingRun(goodput={"whisper": g}, day_goodput={"whisper": g}, findings=[finding])
    links = ("training_job_failures job/whisper", f"{finding.kind} job/whisper")
    run.unplaced_failures = [UnplacedFailure("whisper", (H[1],), links)]
    return run


def test_a_job_whose_gpus_worked_with_no_step_seen_has_no_goodput() -> None:
    """Its five pods held 9.6 GPU-hours, 7.0 held and working (86% SM active): its steps ran
    outside the emitter's loop, so its goodput is unknown, not 0% "held with no steps"."""
    run = _whisper()
    attributed_goodput(run, {"whisper": HeldJob((), {H[0]: 5.0, H[1]: 4.6}, working=7.0)})
    assert (run.goodput, run.day_goodput, run.findings) == ({}, {}, [])
    assert run.unplaced_failures[0].links == ("training_job_failures job/whisper",)


def test_a_job_whose_gpus_idled_with_no_step_held_them_with_no_steps() -> None:
    """The same job with its GPUs idle (1 of 9.6 GPU-hours working) keeps its finding, its
    day's goodput over the 9.6 GPU-hours its 5 GPUs held."""
    run = _whisper()
    attributed_goodput(run, {"whisper": HeldJob((), {H[0]: 5.0, H[1]: 4.6}, working=1.0)})
    assert [f.kind for f in run.findings] == [Kind.TRAINING_LOW_GOODPUT]
    day = run.day_goodput["whisper"]
    assert day.gpus == 5
    assert day.total_gpu_hours == pytest.approx(9.6)
    assert day.split.badput[Badput.HELD_NO_STEPS] / HOUR == pytest.approx(9.6)
    assert len(run.unplaced_failures[0].links) == 2


def test_at_a_one_day_lookback_the_goodput_finding_is_over_what_the_pods_held() -> None:
    """The emitter split 1.6 GPU-hours of whisper's rank 0; its five pods held 9.6. Over the
    attributed day alone (a 1-day lookback) its goodput finding says the 9.6, as the day's
    file does, and keeps what it linked; over a longer lookback it says the emitter's."""
    run = _whisper()
    related = ("training_job_failures job/whisper",)
    run.findings = [replace(run.findings[0], related=related)]
    held = {"whisper": HeldJob((), {H[0]: 5.0, H[1]: 4.6}, working=1.0)}
    attributed_goodput(run, held, one_day=True)
    (finding,) = run.findings
    assert finding.evidence["total_gpu_hours"] == pytest.approx(9.6)
    assert "of the 9.6 GPU-hours it held" in finding.summary
    assert finding.related == related
    longer = _whisper()
    attributed_goodput(longer, held)
    assert longer.findings[0].evidence["total_gpu_hours"] == pytest.approx(1.6)


def test_a_jobs_training_findings_say_what_its_pods_held() -> None:
    """whisper-finetune never stepped (its failures finding's gpu_hours, GPUs x stepping
    hours, is 0) while its 5 pods held 9.6 GPU-hours: each of its training findings says so;
    another job's, and a finding of another analyzer, are left as they were."""

    def finding(kind: Kind, resource: str) -> Finding:
        return Finding(
            kind=kind,
            resource=resource,
            severity=Severity.WARNING,
            summary="s",
            evidence={"gpu_hours": 0.0},
            recommendation="r",
        )

    run = TrainingRun(
        findings=[
            finding(Kind.TRAINING_JOB_FAILURES, "job/whisper"),
            finding(Kind.TRAINING_FAILURE_CAUSE, "job/whisper"),
            finding(Kind.TRAINING_JOB_FAILURES, "job/bert"),
            finding(Kind.GPU_HELD_NOT_WORKING, "job/whisper"),
        ]
    )
    held_evidence(run, {"whisper": HeldJob((), {H[0]: 5.0, H[1]: 4.6})})
    assert [f.evidence.get("held_gpu_hours") for f in run.findings] == [9.6, 9.6, None, None]
    assert run.findings[0].evidence["gpu_hours"] == 0.0


def test_a_job_under_its_target_once_weighed_over_what_it_held_gets_its_finding() -> None:
    """The emitter split 10 GPU-hours: 90.5% productive, 4.5% data loading, 5% waiting for
    GPUs (90.5%: no finding). Its pods held 5: its productive and data loading scale to them,
    its waiting stays, so 86.6%: under the 90% target, a finding of its own."""
    split = Split(
        productive=0.905 * 10 * HOUR,
        badput={Badput.DATA_LOADING: 0.045 * 10 * HOUR, Badput.WAITING_FOR_GPUS: 0.05 * 10 * HOUR},
    )
    g = JobGoodput(
        job="j", gpus=1, split=split, attempts=(), failures=0, restarts=0, steps_redone=0.0,
        mtbf_hours=None, mean_checkpoint_save_s=None, checkpoint_interval_s=None,
        optimal_checkpoint_interval_s=None, ideal_step_s=None, step_time_deviation=None,
    )  # fmt: skip
    assert goodput_finding(g) is None
    run = TrainingRun(goodput={"j": g}, day_goodput={"j": g})
    held = {"j": HeldJob((), {float(h * HOUR): 1.0 for h in range(5)}, working=5.0)}
    attributed_goodput(run, held, one_day=True)
    (finding,) = run.findings
    assert finding.kind == Kind.TRAINING_LOW_GOODPUT
    assert finding.evidence["goodput"] == pytest.approx(9.05 * 5 / 9.5 / 5.5, abs=1e-4)
