"""One settings path for every command: each fault here was found by trying the README as a new
user would, and each test failed before the commands read settings through
cli/settings_args.py as `cdk synth` does."""

import argparse
import json
from pathlib import Path

import pytest

from cli.main import COMMANDS, _parser, main
from cli.settings_args import NO_CREDENTIALS
from tests.unit.cli.test_bad_input import _one_line

pytestmark = pytest.mark.usefixtures("no_aws")

MANIFEST = ["manifest", "--image", "repo/exporter:1"]


def _daemon_set_args(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return _daemon_set_args_of(capsys.readouterr().out)


def _after(args: list[str], option: str) -> str:
    return args[args.index(option) + 1]


def test_manifest_follows_the_settings_the_alarms_are_sized_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """manifest once refused -c: a cdk.json with fleet_gpus=2000 gave a DaemonSet with one
    alarm shard while the deployed alarms had five. Shards are the EMF sink's (Metrics
    Insights alarms); OTel mode's default OTLP sink has one PromQL alarm per kind."""
    argv = [*MANIFEST, "-c", "cluster_name=train", "-c", "fleet_gpus=2000"]
    assert main([*argv, "-c", "exporter_interval_seconds=30", "-c", "exporter_sink=emf"]) == 0
    args = _daemon_set_args(capsys)
    assert (_after(args, "--alarm-shards"), _after(args, "--interval")) == ("5", "30")
    assert _after(args, "--cluster-name") == "train"
    assert main([*argv, "-c", "container_insights_mode=otel"]) == 0
    args = _daemon_set_args(capsys)
    assert (_after(args, "--alarm-shards"), _after(args, "--sink")) == ("1", "otlp")


def test_manifest_reads_cdk_json_like_synth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cdk_json = tmp_path / "cdk.json"
    context = {"cluster_name": "ml-prod", "fleet_gpus": 10_000, "exporter_interval_seconds": 30}
    cdk_json.write_text(
        json.dumps(
            {"context": {**context, "container_insights_mode": "otel", "exporter_sink": "emf"}}
        )
    )
    assert main([*MANIFEST, "--cdk-json", str(cdk_json)]) == 0
    args = _daemon_set_args(capsys)
    assert (_after(args, "--alarm-shards"), _after(args, "--interval")) == ("25", "30")
    # Over OTLP, OTel mode's default sink, no alarm is sharded (cdk/alarms/catalog.py
    # fleet_shards): one shard.
    cdk_json.write_text(json.dumps({"context": {**context, "container_insights_mode": "otel"}}))
    assert main([*MANIFEST, "--cdk-json", str(cdk_json)]) == 0
    args = _daemon_set_args(capsys)
    assert (_after(args, "--alarm-shards"), _after(args, "--sink")) == ("1", "otlp")
    assert _after(args, "--cluster-name") == "ml-prod"


def test_analyze_takes_its_cluster_from_the_settings(capsys: pytest.CaptureFixture[str]) -> None:
    """`analyze training -c cluster_name=ml-prod` once still demanded --cluster-name; now it
    gets as far as AWS (no credentials on this machine: exit 1 in one line of the project's)."""
    assert main(["analyze", "training", "-c", "cluster_name=ml-prod"]) == 1
    _one_line(capsys, NO_CREDENTIALS)


@pytest.mark.parametrize("target", ["storage", "training"])
def test_without_credentials_analyze_says_what_to_set(
    target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Once botocore's "You must specify a region." reached the user, then its "Unable to
    locate credentials"; without a Region the command reads us-east-1, as cdk deploy would
    deploy there (cdk/deploy_region.py)."""
    assert main(["analyze", target, "--cluster-name", "c"]) == 1
    err = _one_line(capsys, "--profile", "AWS_PROFILE", "AWS_ACCESS_KEY_ID")
    assert "You must specify a region" not in err
    assert "Unable to locate credentials" not in err


def test_a_command_without_a_cluster_says_so_as_synth_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each names the command's own --cluster-name first (synth's words have only -c)."""
    for argv in (
        ["analyze", "storage", "--region", "us-east-1"],
        ["preflight"],
        ["status"],
        ["backtest", "--cloudwatch"],
        MANIFEST,
    ):
        assert main(argv) == 2, argv
        _one_line(
            capsys,
            "setting cluster_name is missing",
            "with --cluster-name NAME, -c cluster_name=NAME",
            "cdk.json",
        )


@pytest.mark.parametrize(
    "argv",
    [
        ["analyze", "storage", "--cluster-name", "c", "--region", "us-weest-2"],
        ["preflight", "--cluster-name", "c", "--region", "us-weest-2"],
        ["status", "-c", "cluster_name=c", "-c", "region=us-weest-2"],
        ["backtest", "--cloudwatch", "-c", "cluster_name=c", "--region", "us-weest-2"],
    ],
)
def test_a_region_no_partition_has_is_bad_input_everywhere(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    _one_line(capsys, "us-weest-2", "did you mean us-west-2?")


def test_an_option_that_did_nothing_is_gone(capsys: pytest.CaptureFixture[str]) -> None:
    """cost-estimate reads no AWS: its --profile was accepted and ignored."""
    with pytest.raises(SystemExit) as exited:
        main(["cost-estimate", "--nodes", "1", "--gpus-per-node", "8", "--profile", "nosuch"])
    assert exited.value.code == 2
    assert "--profile" in capsys.readouterr().err


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}
    pending = [("", _parser())]
    while pending:
        prefix, parser = pending.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found[f"{prefix}{name}"] = sub
                    pending.append((f"{prefix}{name} ", sub))
    return found


def test_every_option_of_every_command_has_help() -> None:
    missing = [
        f"{name} {'/'.join(action.option_strings)}"
        for name, parser in _subparsers().items()
        for action in parser._actions
        if action.option_strings and not action.help
    ]
    assert missing == []


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_help_lists_its_exit_statuses(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert f"exit status of {command}:" in out
    assert f"  0  {COMMANDS[command].done}" in out
    assert "  2  bad input" in out
    # Exit 1 in the command's own words: explain-failure calls no AWS API; backtest names no
    # cause; the commands that end so only for AWS or a check say just that.
    said = {
        "analyze": "AWS could not be reached or refused (no credentials, an unknown profile, an "
        "API error), or the run read nothing",
        "backtest": "with --cloudwatch: AWS could not be reached",
        "explain-failure": "no cause was found in the log (the report is still printed); it "
        "calls no AWS API",
        "preflight": "a check failed (the report is still printed), or AWS could not be reached",
        "status": "a check failed (the report is still printed), or AWS could not be reached",
    }
    one = [" ".join(line.split()) for line in out.splitlines() if line.startswith("  1  ")]
    assert [line.startswith(f"1 {said[command]}") for line in one] == (
        [True] if command in said else []
    )
    if command == "explain-failure":
        assert "AWS" not in one[0].replace("calls no AWS API", "")
    if command == "backtest":
        assert "cause" not in one[0]
        assert "check" not in one[0]


@pytest.mark.parametrize(
    ("argv", "status"),
    [
        (["preflight", "-c", "cluster_name=c", "-c", "fleet_gpus=x", "--json"], 2),
        (["preflight", "-c", "cluster_name=c", "--json"], 1),
        (["analyze", "storage", "--cluster-name", "c", "--json"], 1),
        (["cost-estimate", "--nodes", "0", "--gpus-per-node", "8", "--json"], 2),
    ],
)
def test_json_means_json_on_every_path(
    argv: list[str], status: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """preflight --json once printed plain text when it failed."""
    assert main(argv) == status
    document = json.loads(capsys.readouterr().out)
    assert document["command"] == " ".join(argv[:2] if argv[0] == "analyze" else argv[:1])
    assert document["exit_status"] == status
    assert "\n" not in document["error"]


def test_a_failed_read_names_what_failed_once(
    no_aws: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failed read once said "training jobs of c: training jobs of c could not be analyzed:
    ..." (an endpoint that refuses: the discard port)."""
    no_aws.setenv("AWS_ACCESS_KEY_ID", "t")
    no_aws.setenv("AWS_SECRET_ACCESS_KEY", "t")
    no_aws.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    no_aws.setenv("AWS_MAX_ATTEMPTS", "1")
    assert main(["analyze", "training", "--cluster-name", "c", "--region", "us-east-1"]) == 1
    err = _one_line(capsys, "read nothing")
    assert err.count("training jobs of c") == 1


@pytest.mark.parametrize("target", ["storage", "training"])
def test_a_subcommands_help_lists_the_exit_statuses_too(
    target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`analyze storage --help` once listed none."""
    with pytest.raises(SystemExit):
        main(["analyze", target, "--help"])
    assert "  3  nothing of the cluster was found" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["cost-estimate", "--nodes", "1e400", "--gpus-per-node", "8", "--json"], "cost-estimate"),
        (["status", "--bogus", "--json"], "status"),
        (["analyze", "storage", "--days", "x", "--json"], "analyze storage"),
    ],
)
def test_a_usage_error_with_json_is_json(
    argv: list[str], command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert (document["command"], document["exit_status"]) == (command, 2)
    assert captured.err.startswith(f"gpu-insights {command}: ")


def test_cost_estimate_sizes_the_alarms_for_the_deployments_fleet(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """cost-estimate once sized the alarms for nodes x GPUs whatever fleet_gpus said (the EMF
    sink's shards; OTel mode's default OTLP sink has none)."""
    fleet = ["cost-estimate", "--nodes", "40", "--gpus-per-node", "8", "-c", "fleet_gpus=20000"]
    argv = [*fleet[:-2], "-c", "exporter_sink=emf", *fleet[-2:]]
    assert main(argv) == 0
    assert "20,000 GPUs -> 50 alarm shard(s)" in capsys.readouterr().out
    assert main([*fleet, "-c", "container_insights_mode=otel"]) == 0
    # 8 GPU, 6 job and 4 serving kinds and the pending GPU pods, each with its fleet count.
    # No Metrics Insights alarm there: no shard to speak of.
    assert (
        "20,000 GPUs -> 46 PromQL alarm(s), unsharded (one per kind whatever the fleet), and "
        "no Metrics Insights alarm"
    ) in capsys.readouterr().out
    assert main([*argv[:-1], "fleet_gpus=abc"]) == 2
    _one_line(capsys, "setting fleet_gpus='abc' is not valid")
    # Nodes x GPUs past the largest fleet: named by the options given, not a setting.
    assert main(["cost-estimate", "--nodes", "62501", "--gpus-per-node", "8"]) == 2
    _one_line(capsys, "--nodes 62501 x --gpus-per-node 8 is 500,008 GPUs: at most 500,000")
    assert main([*argv[:-1], "fleet_gpus=100"]) == 2
    _one_line(capsys, "fleet_gpus=100 is fewer than the 320 GPUs priced")


def test_the_profiles_region_decides_the_mode_as_at_synth(
    no_aws: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With the Region only in the profile (AWS_PROFILE's, in the config file), manifest
    resolves it as the CDK CLI does: Classic in eu-central-1, so the exporter sends EMF."""
    (tmp_path / "none").write_text("[profile ml]\nregion = eu-central-1\n")
    no_aws.setenv("AWS_PROFILE", "ml")
    assert main([*MANIFEST, "-c", "cluster_name=train"]) == 0
    out = capsys.readouterr()
    assert out.err.splitlines()[0].startswith(
        "Region eu-central-1 (profile 'ml''s region in the config file); Container Insights "
        "mode classic (unset: Classic"
    )
    assert "--emf-endpoint" in _daemon_set_args_of(out.out)
    # AWS_REGION goes before the profile's, as in the CDK CLI.
    no_aws.setenv("AWS_REGION", "us-west-2")
    assert main([*MANIFEST, "-c", "cluster_name=train"]) == 0
    out = capsys.readouterr()
    assert out.err.startswith("Region us-west-2 (AWS_REGION); Container Insights mode otel")
    assert "--otlp-endpoint" in _daemon_set_args_of(out.out)


def _daemon_set_args_of(printed: str) -> list[str]:
    (daemon_set,) = [i for i in json.loads(printed)["items"] if i["kind"] == "DaemonSet"]
    (container,) = daemon_set["spec"]["template"]["spec"]["containers"]
    return list(container["args"])
