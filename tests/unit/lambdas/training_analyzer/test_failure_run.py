"""The pure parts of a run's failure reads: what a failed run held, and its node's name."""

from typing import Any

import pytest

from lambdas.training_analyzer.failure_logs import FailedPod
from lambdas.training_analyzer.failure_run import (
    FailedRun,
    explain_job,
    failed_run_gpu_hours,
    run_nodes,
)
from tests.unit.lambdas.training_analyzer.test_failure_logs import logs

__all__ = ["logs"]  # the moto fixture

H = 3600.0


def test_each_failed_run_holds_its_stepping_hours_since_the_previous_failure() -> None:
    stepping = [0 * H, 1 * H, 2 * H, 5 * H, 6 * H, 9 * H]
    # Failed in hour 2 (hours 0-2 stepped) and in hour 6 (5-6); hour 9 ran on after.
    assert failed_run_gpu_hours(stepping, [6 * H, 2 * H], gpus=8) == {2 * H: 24, 6 * H: 16}


def test_a_failure_in_an_hour_without_steps_holds_none_of_its_own() -> None:
    assert failed_run_gpu_hours([0.0, H], [H, 4 * H], gpus=2) == {H: 4, 4 * H: 0}


def test_a_host_logs_short_name_is_the_pods_node() -> None:
    pods = [FailedPod("w-0", "ip-10-0-1-23.ec2.internal"), FailedPod("w-1", "ip-10-0-1-24.x")]
    assert run_nodes(["ip-10-0-1-23"], pods) == ("ip-10-0-1-23.ec2.internal",)
    # A node no pod ran on is kept as named; no named node: the pods'.
    assert run_nodes(["ip-10-0-9-9"], pods) == ("ip-10-0-9-9",)
    assert run_nodes([], pods) == ("ip-10-0-1-23.ec2.internal", "ip-10-0-1-24.x")


def test_a_failed_run_round_trips_through_its_json() -> None:
    run = FailedRun("j", 7200.0, "disk_full", "OSError: [Errno <n>]", ("n1", "n2"), 3.0)
    assert FailedRun.from_json(run.to_json()) == run
    after = FailedRun("j", 7200.0, "disk_full", "OSError", ("n1",), 3.0, since=3600.0)
    assert FailedRun.from_json(after.to_json()) == after
    # A file written before runs said where they began: each read as the window's first.
    older = {k: v for k, v in after.to_json().items() if k != "since"}
    assert FailedRun.from_json(older).since is None
    with pytest.raises(KeyError):
        FailedRun.from_json({"job": "j"})


def test_each_run_read_begins_at_the_jobs_failure_before_it_read_or_not(logs: Any) -> None:
    """A crash loop failed in five hours; its latest three are read, each saying the failed
    hour before it (the first of them the loop's second failure, which is not read)."""
    hours = [k * H for k in range(5)]
    costs = dict.fromkeys(hours, 8.0)
    pods = [FailedPod("loop-0", "ip-10-0-1-23.ec2.internal")]
    _, runs = explain_job(logs, "train", "loop", pods, hours, costs)
    assert [(r.at, r.since) for r in runs] == [(2 * H, 1 * H), (3 * H, 2 * H), (4 * H, 3 * H)]
