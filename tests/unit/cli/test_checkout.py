"""The demo runs from a clone: it reads the clone's cdk.json and failure-log corpus; its cluster
model ships with the command (cli/demo/realistic/)."""

from pathlib import Path

import pytest

import cli.checkout
from cli.checkout import NotACheckoutError, use_checkout
from cli.main import main


def test_the_clone_has_what_the_demo_reads() -> None:
    use_checkout()  # raises where the clone lacks cdk.json or the corpus


def test_outside_a_clone_the_demo_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(NotACheckoutError, match=r"has no cdk\.json or tests/data/failure_logs"):
        use_checkout(tmp_path)
    monkeypatch.setattr(cli.checkout, "CHECKOUT", tmp_path)
    assert main(["demo", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("gpu-insights demo: the demo runs from a clone of the repository")
