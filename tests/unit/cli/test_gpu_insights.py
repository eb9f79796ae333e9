"""The console script runs the command line of the clone it was installed from, and says in one
line what it needs where there is none."""

import subprocess
import sys
from pathlib import Path

import pytest

from cli import gpu_insights

ROOT = Path(__file__).resolve().parents[3]


def test_without_the_analyzers_the_command_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "cli.main", None)  # as if boto3 and the rest were absent
    assert gpu_insights.main(["--help"]) == 2
    assert capsys.readouterr().err.startswith(gpu_insights.NEEDS)


def test_outside_a_clone_the_command_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A plain ``pip install .`` copies the module into site-packages, away from the clone."""
    monkeypatch.setattr(gpu_insights, "CHECKOUT", tmp_path)
    assert gpu_insights.main(["--help"]) == 2
    assert capsys.readouterr().err.strip() == f"{gpu_insights.NEEDS} ({tmp_path} is not one)"


def test_the_entry_point_runs_the_command_line_from_anywhere(tmp_path: Path) -> None:
    """Started outside the clone (``cwd`` elsewhere), as an operator's shell would."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.path.insert(0, sys.argv[1]); from gpu_insights import main;"
            " raise SystemExit(main(['agent-config']))",
            str(ROOT / "cli"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert '"nvidia_gpu"' in done.stdout
