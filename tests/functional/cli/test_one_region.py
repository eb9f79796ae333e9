"""With the Region only in the environment, as docs/deploy.md allows, every command resolves
the Region and the mode as ``cdk synth`` does (cdk/deploy_region.py) and says so in its first
line: manifest, preflight, status and cost-estimate agree with synth on the mode and the
alarms, in and outside the Regions where AWS offers OTel Container Insights. Once `manifest`
printed the OTLP sink and `cost-estimate` priced OTel's PromQL alarms in eu-central-1 while
synth deployed Classic."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from cdk.app import placed_settings
from cdk.deploy_region import deployment_line
from cli.main import main

CLUSTER = ["-c", "cluster_name=ml-prod"]


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[pytest.MonkeyPatch]:
    """A user's shell: credentials, no profile file, no cdk.json; moto for AWS."""
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "t")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "t")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.chdir(tmp_path)
    with mock_aws():
        yield monkeypatch


def _stubbed(service: str, operation: str, code: str, message: str, region: str) -> Any:
    """A real client whose ``operation`` answers ``code`` each time (the APIs moto lacks here:
    its CloudFormation needs packages the project does not install; EKS add-ons)."""
    client: Any = boto3.client(service, region_name=region)  # type: ignore[call-overload]
    stubber = Stubber(client)
    for _ in range(3):
        stubber.add_client_error(operation, code, message, 400)
    stubber.activate()
    return client


def _first_lines(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, region: str
) -> dict[str, str]:
    """Each command's first line: on stdout, or on stderr where stdout is for a program."""
    from lambdas.shared import aws_clients

    # DescribeStacks of a stack that is not there answers ValidationError "Stack with id ...
    # does not exist" (CloudFormation API Reference, DescribeStacks); DescribeAddon of an
    # add-on not installed, ResourceNotFoundException (EKS API Reference, DescribeAddon).
    stubbed = {
        "cloudformation": _stubbed(
            "cloudformation", "describe_stacks", "ValidationError", "does not exist", region
        ),
        "eks": _stubbed("eks", "describe_addon", "ResourceNotFoundException", "none", region),
    }
    made = aws_clients.client
    monkeypatch.setattr(
        aws_clients,
        "client",
        lambda service, **kw: stubbed.pop(service, None) or made(service, **kw),
    )
    lines = {}
    assert main(["manifest", "--image", "repo/exporter:1", *CLUSTER]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["kind"] == "List"
    lines["manifest"] = out.err.splitlines()[0]
    for command in (["status", *CLUSTER], ["preflight", *CLUSTER]):
        assert main(command) == 1  # no such cluster in moto's account: a check fails
        lines[command[0]] = capsys.readouterr().out.splitlines()[0]
    # 50 nodes x 8 GPUs: the 400 GPUs the alarms are sized for by default (fleet_gpus).
    assert main(["cost-estimate", "--nodes", "50", "--gpus-per-node", "8"]) == 0
    lines["cost-estimate"] = capsys.readouterr().out.splitlines()[0]
    return lines


@pytest.mark.parametrize(
    ("region", "mode", "alarms"),
    [
        ("eu-central-1", "classic", "76 Metrics Insights alarms and 0 PromQL alarms"),
        ("us-west-2", "otel", "0 Metrics Insights alarms and 46 PromQL alarms"),
    ],
)
def test_every_command_agrees_with_synth_with_the_region_in_the_environment(
    shell: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    region: str,
    mode: str,
    alarms: str,
) -> None:
    shell.setenv("AWS_DEFAULT_REGION", region)
    lines = _first_lines(capsys, shell, region)
    for command, line in lines.items():
        assert line.startswith(f"Region {region} (AWS_DEFAULT_REGION); "), (command, line)
        assert f"Container Insights mode {mode} (unset" in line, (command, line)
        assert line.endswith(f"; {alarms}"), (command, line)
    # Synth: the CDK CLI hands the app the Region it resolved from the same variable.
    context = {"cluster_name": "ml-prod"}
    for environ in ({"CDK_DEFAULT_REGION": region}, {"AWS_DEFAULT_REGION": region}):
        settings, where = placed_settings(context, environ)
        synth = deployment_line(settings, where, context)
        assert synth.split("; ", 1)[1] == lines["manifest"].split("; ", 1)[1]
        assert where.region == region


def test_aws_region_is_honoured_ahead_of_aws_default_region(
    shell: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """botocore reads only AWS_DEFAULT_REGION; the CDK CLI reads AWS_REGION first. The
    command's clients go to AWS_REGION's Region: analyze reads the cluster's volume there."""
    shell.setenv("AWS_REGION", "us-west-2")
    shell.setenv("AWS_DEFAULT_REGION", "eu-central-1")
    boto3.client("ec2", region_name="us-west-2").create_volume(
        AvailabilityZone="us-west-2a",
        Size=100,
        VolumeType="gp3",
        TagSpecifications=[
            {
                "ResourceType": "volume",
                "Tags": [{"Key": "kubernetes.io/cluster/ml-prod", "Value": "owned"}],
            }
        ],
    )
    status = main(["analyze", "storage", *CLUSTER, "--json"])
    out = capsys.readouterr()
    assert out.err.splitlines()[0].startswith("Region us-west-2 (AWS_REGION); ")
    assert status == 0, out.err  # the volume was read: its cluster has something to analyze
    # Without AWS_REGION, AWS_DEFAULT_REGION's Region, where the cluster has no volume: exit 3.
    shell.delenv("AWS_REGION")
    assert main(["analyze", "storage", *CLUSTER]) == 3
    out = capsys.readouterr()
    assert out.out == ""
    assert "in eu-central-1" in out.err
