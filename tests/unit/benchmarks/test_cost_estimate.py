"""The cost-estimate benchmark's smoke run: the same command in a fresh process, at 40 nodes,
in each mode, priced in us-east-1 and said so in its first line."""

import pytest

from benchmarks import cost_estimate


@pytest.mark.parametrize("mode", cost_estimate.MODES)
def test_the_benchmark_runs_the_command_in_each_mode(mode: str) -> None:
    run = cost_estimate.run(mode, nodes=40)
    assert run.first_line.startswith(
        f"Region us-east-1 (the region setting); Container Insights mode {mode} (the "
        "container_insights_mode setting); "
    )
    assert run.seconds > 0
    assert run.cpu_seconds > 0
    assert cost_estimate.line(run).startswith(
        f"cost-estimate --nodes 40 --gpus-per-node 8 ({mode}): "
    )
