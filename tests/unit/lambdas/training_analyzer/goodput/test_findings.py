"""The daily goodput finding: the job's goodput, its largest badput, its advice, and for lost
progress the checkpoint interval Young's formula gives from the job's own numbers."""

import pytest

from lambdas.training_analyzer.analysis import JobSeries
from lambdas.training_analyzer.goodput.findings import GoodputThresholds, goodput_finding
from lambdas.training_analyzer.goodput.jobs import job_goodput
from tests.unit.lambdas.training_analyzer.goodput.test_jobs import GPUS, H, restarted_job


def test_a_restarted_job_names_its_lost_progress_and_youngs_interval() -> None:
    g = job_goodput(restarted_job(), gpus=GPUS, pending_gpu_seconds=GPUS * 900)
    assert g is not None
    finding = goodput_finding(g)
    assert finding is not None
    assert finding.kind == "training_low_goodput"
    assert finding.severity == "critical"  # 46%, under half
    assert finding.summary == (
        "llm's goodput was 46% of the 10.5 GPU-hours it held or waited for over 2 attempts; "
        "the largest badput was progress lost (steps redone after a restart), 2.3 GPU-hours "
        "(22%)."
    )
    # sqrt(2 x 300 s x 5 h) = 3,286 s: every 55 minutes, not every 300.
    assert finding.recommendation.endswith(
        "With its 300 s saves and one failure every 5.0 hours, checkpoint every 55 minutes "
        "(now every 300 minutes): Young's optimum, √(2 x save time x mean time between "
        "failures)."
    )
    assert finding.evidence["gpu_hours"]["progress_lost"] == pytest.approx(2.333, abs=1e-3)
    assert finding.evidence["optimal_checkpoint_interval_seconds"] == pytest.approx(3286.3)
    assert [a["resumed_from_step"] for a in finding.evidence["attempts"]] == [0, 1200]


def test_a_job_at_its_target_or_too_small_has_none() -> None:
    healthy = JobSeries(job="ok", compute_time={H[0]: 7_000}, data_wait_time={H[0]: 200},
                        steps={H[0]: 3_500})  # fmt: skip
    g = job_goodput(healthy, gpus=2)
    assert g is not None
    assert g.goodput == pytest.approx(7_000 / 7_200)
    assert goodput_finding(g) is None
    assert goodput_finding(g, GoodputThresholds(target=0.99)) is not None
    small = job_goodput(JobSeries(job="t", startup_time={H[0]: 600}), gpus=1)
    assert small is not None
    assert goodput_finding(small) is None  # 0.17 GPU-hours: under the 1 it needs
