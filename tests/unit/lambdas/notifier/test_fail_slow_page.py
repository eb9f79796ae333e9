"""What a fail-slow or goodput page adds: the culprit and its evidence, or none and why, or
that it could not be read; and which badput grew (lambdas/notifier/fail_slow_page.py)."""

import pytest

from gpu_insights_agent.contract.metrics import TrainingMetric
from lambdas.notifier.fail_slow_page import (
    badput_shares,
    category_seconds,
    grown_badput,
    with_badput,
    with_culprit,
)
from lambdas.notifier.notification import Incident, render_text
from lambdas.shared.fail_slow import Culprit, Verdict

PAGE = Incident(
    key="k",
    severity="warning",
    kind="job-step-time-rise",
    title="Training job slowed (fail-slow): job llm",
    what="w",
    cluster="train",
    node="n1, n2",
    gpu="g",
    action="a",
    job="llm",
)


def test_a_culprit_and_its_evidence_are_rows_of_the_page() -> None:
    verdict = Verdict(
        Culprit(
            node="ip-10-0-1-2",
            gpu="2",
            evidence=("NVML clock event reason: thermal slowdown", "SM clock 1500 MHz"),
        )
    )
    told = with_culprit(PAGE, verdict)
    assert ("Culprit", "node ip-10-0-1-2, GPU 2") in told.rows()
    assert (
        "Evidence",
        "NVML clock event reason: thermal slowdown; SM clock 1500 MHz",
    ) in told.rows()
    assert "Culprit:    node ip-10-0-1-2, GPU 2\n" in render_text(told)
    rank = with_culprit(PAGE, Verdict(Culprit(node="n", rank="9", pod="llm-worker-9")))
    assert ("Culprit", "rank 9, pod llm-worker-9, node n") in rank.rows()


def test_no_culprit_and_an_unread_one_are_said() -> None:
    none = with_culprit(PAGE, Verdict(None, whole_job="every rank waits longer for its data"))
    assert ("Culprit", "none: every rank waits longer for its data") in none.rows()
    unread = with_culprit(PAGE, None)
    assert ("Culprit", "not read (PromQL refused the job's series)") in unread.rows()
    assert ("Badput that grew", "not read (PromQL refused the job's series)") in with_badput(
        PAGE, None
    ).rows()


def test_the_badput_that_grew_most_or_the_largest_where_none_grew() -> None:
    grew = grown_badput(
        {"data wait": 0.05, "checkpoint saves": 0.30, "no steps": 0.0},
        {"data wait": 0.04, "checkpoint saves": 0.05, "no steps": 0.0},
    )
    assert grew == (
        "checkpoint saves: 30% of the hour, 5% the hour before: save less often, or "
        "asynchronously, or to faster storage"
    )
    flat = grown_badput({"data wait": 0.25, "no steps": 0.1}, {"data wait": 0.25, "no steps": 0.1})
    assert flat.startswith("none grew; the largest is data wait (25% of the hour)")
    assert grown_badput({}, {}) == "not known (no badput series in the hour)"
    # A hung job's ranks send nothing: no category it reads explains the hour, which it says.
    idle = {"data wait": 0.01, "checkpoint saves": 0.0, "evaluation": 0.0, "no steps": 0.0}
    assert grown_badput(idle, idle) == (
        "none read explains it (checkpoint saves, data wait, evaluation, no steps: each under "
        "5% of the hour): look at progress redone after a restart, or ranks that stopped "
        "sending (a hang pages job-hung)"
    )


def test_badput_shares_are_of_the_ranks_time_split() -> None:
    """Each category's seconds over every second the ranks accounted (compute included); a
    stalled, starting or idle second is one with no step; no time accounted: nothing known."""
    seconds = {
        TrainingMetric.COMPUTE_TIME: 2_000.0,
        TrainingMetric.DATA_WAIT_TIME: 600.0,
        TrainingMetric.CHECKPOINT_SAVE_TIME: 400.0,
        TrainingMetric.EVALUATION_TIME: 200.0,
        TrainingMetric.STALLED_TIME: 300.0,
        TrainingMetric.IDLE_TIME: 100.0,
    }
    assert badput_shares(category_seconds(seconds)) == pytest.approx(
        {
            "data wait": 600 / 3600,
            "checkpoint saves": 400 / 3600,
            "evaluation": 200 / 3600,
            "no steps": 400 / 3600,
        }
    )
    assert badput_shares(category_seconds({})) == {}
    assert badput_shares(category_seconds({TrainingMetric.COMPUTE_TIME: 60.0}))["no steps"] == 0.0
