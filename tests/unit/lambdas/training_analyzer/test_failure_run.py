"""The pure parts of a run's failure reads: what a failed run held, and its node's name."""

import pytest

from lambdas.training_analyzer.failure_logs import FailedPod
from lambdas.training_analyzer.failure_run import FailedRun, failed_run_gpu_hours, run_nodes

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
    with pytest.raises(KeyError):
        FailedRun.from_json({"job": "j"})
