"""The goodput replay's smoke run: a small job through the real emitter and the analyzer's
goodput, every category within the 2 points of the truth the benchmark holds it to."""

import pytest

from benchmarks.goodput_replay import GOAL_POINTS, Scenario, run
from lambdas.training_analyzer.goodput.jobs import Badput


def test_a_small_replay_is_within_two_points_of_its_truth_in_every_category() -> None:
    r = run(Scenario(ranks=2, hours=4.0, hang_at_s=6000.0, hang_s=900.0))
    assert max(r.errors.values()) < GOAL_POINTS
    assert abs(r.goodput_measured - r.goodput_truth) < GOAL_POINTS / 100
    # Every category the scenario planted was measured, none of them zero.
    planted = [str(b) for b in Badput]
    assert all(r.truth[b] > 0 for b in planted)
    assert all(r.measured[b] > 0 for b in planted)
    assert sum(r.measured.values()) == pytest.approx(sum(r.truth.values()), rel=0.01)
    assert (r.result.restarts, r.result.failures) == (1, 1)
