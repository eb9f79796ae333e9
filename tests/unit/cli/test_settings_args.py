"""Settings on the command line: a cdk.json that is named but missing, or not an object, is
refused in one line with exit 2 by every command that reads it (backtest and preflight)."""

import argparse
import json
from pathlib import Path

import pytest

from cli.main import main
from cli.settings_args import NO_CREDENTIALS, context_from_args


@pytest.mark.parametrize("command", ["preflight", "backtest"])
@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "No such file"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('"text"', "expected a JSON object, got str"),
        ('{"context": [1]}', '"context" must be a JSON object'),
        ("{", "is not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "is not valid JSON"),
    ],
)
def test_a_bad_cdk_json_is_refused_in_one_line(
    command: str,
    content: str | None,
    said: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "cdk.json"
    if content is not None:
        path.write_text(content)
    extra = ["--history", str(tmp_path / "history.jsonl")] if command == "backtest" else []
    code = main([command, "-c", "cluster_name=train", "--cdk-json", str(path), *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert said in err
    assert str(path) in err
    assert "\n" not in err
    assert "Traceback" not in err


def test_without_a_cdk_json_here_the_settings_come_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = argparse.Namespace(cdk_json=None, context=["cluster_name=train", "lookback_days=7"])
    assert context_from_args(args) == {"cluster_name": "train", "lookback_days": "7"}
    (tmp_path / "cdk.json").write_text(json.dumps({"context": {"region": "eu-west-1"}}))
    assert context_from_args(args)["region"] == "eu-west-1"  # ./cdk.json is read when present


def test_preflight_without_credentials_or_with_an_unknown_profile_is_an_aws_failure(
    tmp_path: Path, no_aws: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 1 and one line that says what to set, as analyze and backtest --cloudwatch
    (README: exit codes); without a Region, us-east-1, as cdk deploy."""
    empty = tmp_path / "cdk.json"
    empty.write_text("{}")
    base = ["preflight", "-c", "cluster_name=train", "--cdk-json", str(empty)]
    assert main(base) == 1
    assert capsys.readouterr().err.strip().endswith(NO_CREDENTIALS)
    assert main([*base, "--profile", "nosuch"]) == 1
    assert "nosuch" in capsys.readouterr().err
