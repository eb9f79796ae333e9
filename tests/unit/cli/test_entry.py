"""The console script of a core install (the emitter alone) says what it needs in one line."""

import subprocess
import sys
from pathlib import Path

import pytest

from cli import entry

ROOT = Path(__file__).resolve().parents[3]


def test_without_the_analyzers_extra_the_command_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "cli.main", None)  # as if boto3 and the rest were absent
    assert entry.main(["--help"]) == 2
    assert capsys.readouterr().err.startswith(entry.NEEDS)


def test_the_entry_point_runs_the_command_line_where_it_can() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from cli.entry import main; raise SystemExit(main(['agent-config']))",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert '"nvidia_gpu"' in done.stdout
