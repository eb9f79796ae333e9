"""``benchmarks/analyze_cli.py`` at a small size: the command's run with each session, in this
process (the benchmark runs each in a fresh one)."""

import pytest

from benchmarks import analyze_cli


def test_the_command_runs_with_either_session_and_finds_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: AttributeError, the plain session patched onto ``cli.analyze.new_session``, which
    moved (the command's session comes from cli/settings_args.py ``session_for``)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_EC2_METADATA_DISABLED"):
        monkeypatch.setenv(name, "bench")  # measure sets them; restored after the test
    runs = {s: analyze_cli.measure(s, 20) for s in analyze_cli.SESSIONS}
    plain, handlers = (runs[s] for s in analyze_cli.SESSIONS)
    assert plain["findings"] == handlers["findings"] > 0
    assert plain["datapoints"] == handlers["datapoints"] > 0
