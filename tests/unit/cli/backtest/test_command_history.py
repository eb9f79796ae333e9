"""``--history`` (cli/backtest/command.py, cli/analyze.py) before any replay. Without
Prometheus on PATH, ``backtest --history`` and ``analyze training --history`` say so in one
line, how to get it, and exit with status 4 (cli/failures.py ``TOOL_MISSING_EXIT``), never a
traceback or an empty replay; a file of another cluster is refused by name."""

from pathlib import Path

import pytest

from cli.failures import TOOL_MISSING_EXIT
from cli.main import main

HISTORY = Path(__file__).parents[3] / "data" / "history" / "otel-node.jsonl"


@pytest.mark.parametrize(
    "command", [["backtest"], ["analyze", "training"]], ids=["backtest", "analyze"]
)
def test_without_prometheus_the_history_replay_says_so_in_one_line_and_exits_4(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("cli.demo.promql.shutil.which", lambda _name: None)
    argv = [*command, "--history", str(HISTORY), "-c", "cluster_name=example-gpu-cluster"]
    assert main(argv) == TOOL_MISSING_EXIT == 4
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.strip().splitlines()
    assert line.startswith(f"gpu-insights {command[0]}: --history ")
    assert "apt-get install prometheus" in line


def test_a_history_of_another_cluster_is_refused_by_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Its series and its XID log lines are all of example-gpu-cluster: none is replayed (nor
    its XID lines paged as "not this deployment's") for cluster ``other``."""
    argv = ["backtest", "--history", str(HISTORY), "-c", "cluster_name=other"]
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (
        f"gpu-insights backtest: --history {HISTORY}: no sample is of cluster 'other' (the "
        "cluster_name setting); it holds 'example-gpu-cluster'"
    )
