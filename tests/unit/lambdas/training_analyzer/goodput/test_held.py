"""A job's day of goodput over what the GPU-hour attribution says its pods held
(lambdas/training_analyzer/goodput/held.py)."""

import pytest

from lambdas.training_analyzer.failure_placement import HeldJob
from lambdas.training_analyzer.goodput.held import held_goodput, held_goodputs
from lambdas.training_analyzer.goodput.jobs import HOUR, Badput, job_goodput
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
