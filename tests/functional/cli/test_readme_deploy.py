"""The README's deploy steps, followed on moto as a user would: step 2's ``context`` in
cdk.json, then step 3's ``preflight`` and step 7's ``status`` command lines exactly as the
README shows them (synth and ``manifest``: tests/infra/cdk/test_readme_deploy.py).

The account and the healthy deployment are test_status's and test_preflight's (the cluster
and its node groups as cli/demo/preflight.py seeds them; the add-on reads and the stacks,
which moto lacks, answered by botocore Stubbers)."""

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Final

import pytest

from cdk.settings import OTLP_ENDPOINT_MIN_ADDON_VERSION, settings_from_context
from cli.demo.preflight import KUBERNETES_VERSION, seed_cluster
from cli.demo.promql import answering
from cli.main import _parser, main
from cli.preflight.checks import Verdict
from cli.settings_args import context_from_args
from gpu_insights_agent.contract.metrics import ExporterSink
from tests.docs_text import README, argv, deploy_steps
from tests.functional.cli import test_preflight as preflight
from tests.functional.cli import test_status as deployed
from tests.prometheus import serve, write_openmetrics

account = deployed.account
STEPS = deploy_steps()


def _versions(version: str, *, default: bool) -> dict[str, Any]:
    """A DescribeAddonVersions page for the observability add-on on the seeded cluster's
    Kubernetes version (cli/demo/preflight.py), in the shape AWS answers it
    (tests/functional/cli/test_preflight.py ``VERSIONS_1_31``): one version, EKS's default or
    not."""
    compatibility = {
        "clusterVersion": KUBERNETES_VERSION,
        "platformVersions": ["*"],
        "defaultVersion": default,
    }
    entry = {
        "addonVersion": version,
        "architecture": ["amd64", "arm64"],
        "compatibilities": [compatibility],
    }
    addon = {
        "addonName": "amazon-cloudwatch-observability",
        "type": "observability",
        "addonVersions": [entry],
    }
    return {"addons": [addon]}


#: The ready cluster of step 3: EKS's default add-on for its Kubernetes version serves the OTLP
#: endpoint ("available in version 8.0.0 and later", eks-observability-addon-otlp-endpoint.html).
DEFAULT_SERVES_OTLP: Final = _versions("v8.0.0-eksbuild.1", default=True)


def _command(name: str) -> list[str]:
    (command,) = [c for c in STEPS.commands if c.startswith(f"gpu-insights {name}")]
    return argv(command)


@pytest.fixture
def cdk_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Step 2: the README's context in the cdk.json of the directory the user works in."""
    path = tmp_path / "cdk.json"
    path.write_text(json.dumps({"app": "python3 -m cdk.app", "context": STEPS.context}))
    monkeypatch.chdir(tmp_path)
    return path


def test_the_readme_names_the_cluster_the_moto_account_holds() -> None:
    assert STEPS.context["cluster_name"] == deployed.CLUSTER
    assert STEPS.context["region"] == deployed.REGION
    assert STEPS.context["account"] == deployed.ACCOUNT


def test_step_3_preflight_passes_on_a_ready_cluster(
    account: dict[str, Any], cdk_json: Path
) -> None:
    """The README's preflight command line, parsed by the command line's own parser, reads the
    settings from cdk.json and -c as the command does; its checks run on a cluster with an
    AL2023 and a Bottlerocket GPU node group (the Bottlerocket one warns, as docs/deploy.md
    says) and fail nothing."""
    session = account["session"]
    seed_cluster(session.client("eks"), session.client("iam"), deployed.CLUSTER)
    args = _parser().parse_args(_command("preflight"))
    settings = settings_from_context(context_from_args(args))
    assert settings.alarm_emails == ("oncall@example.com",)
    # OTel mode's default sink, OTLP, and no addon_version: preflight asks EKS which add-on
    # version the stack would get.
    assert settings.exporter_sink is ExporterSink.OTLP
    assert settings.addon_version is None
    checks = preflight._preflight(
        session,
        settings,
        {"eks-pod-identity-agent": ("v1.3.8-eksbuild.2", "ACTIVE")},
        versions=[DEFAULT_SERVES_OTLP],
    )
    verdicts = {c.name: c.verdict for c in checks}
    assert verdicts["cluster"] is Verdict.OK
    assert [(c.name, c.detail) for c in checks if c.verdict is Verdict.FAIL] == []
    (addon,) = [c for c in checks if c.name == "observability-addon"]
    assert "v8.0.0-eksbuild.1" in addon.detail


def test_step_3_names_the_version_to_pin_where_eks_default_is_older(
    account: dict[str, Any], cdk_json: Path
) -> None:
    """What step 3 says of an older default: preflight fails the add-on check and its fix is
    the ``-c addon_version=`` the README names, with the newest version EKS offers."""
    session = account["session"]
    seed_cluster(session.client("eks"), session.client("iam"), deployed.CLUSTER)
    settings = settings_from_context(context_from_args(_parser().parse_args(_command("preflight"))))
    older = _versions("v4.4.0-eksbuild.1", default=True)
    newer = _versions("v8.0.0-eksbuild.1", default=False)
    checks = preflight._preflight(
        session,
        settings,
        {"eks-pod-identity-agent": ("v1.3.8-eksbuild.2", "ACTIVE")},
        versions=[older | {"nextToken": "2"}, newer],
    )
    (addon,) = [c for c in checks if c.name == "observability-addon"]
    assert addon.verdict is Verdict.FAIL
    assert addon.fix.startswith("-c addon_version=v8.0.0-eksbuild.1 ")
    deploy = README.read_text().split("\n## Deploy\n", 1)[1].split("\n## ", 1)[0]
    step_3 = deploy.split("\n3. ", 1)[1].split("\n4. ", 1)[0]
    assert "`-c addon_version=<version>`" in step_3
    assert "`-c exporter_sink=emf`" in step_3


@pytest.mark.promql_engine
def test_step_7_status_exits_0_on_a_working_deployment(
    account: dict[str, Any],
    cdk_json: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """After deploy, exporter and subscriptions: the README's status command line as the user
    runs it (its settings from the cdk.json of step 2, in the default OTel mode: the add-on
    configured so, every GPU node's DCGM series and the exporter's, over its default OTLP
    sink, in a real PromQL engine) prints a line a check and fails none."""
    import cli.status.command
    from lambdas.shared import aws_clients

    # Status runs half an hour after the GPU nodes started (past the exporter's grace period).
    run_at = account["run_at"]
    monkeypatch.setattr(cli.status.command, "time", SimpleNamespace(time=lambda: run_at))
    # OTel mode's default sink: the exporter sends OTLP, which only PromQL reads.
    exporter = [
        s for n in account["nodes"] for s in deployed._otlp_exporter(n, run_at - 1200, run_at)
    ]
    dcgm = tmp_path / "dcgm.om"
    write_openmetrics(
        dcgm, [*deployed._dcgm(account["nodes"], run_at - 1200, run_at, ("", -1)), *exporter]
    )
    settings = settings_from_context(context_from_args(_parser().parse_args(_command("status"))))
    deployed._alarms(account, {}, settings)
    sns = account["session"].client("sns")
    for purpose, key in (
        ("critical", "alarm_emails"),
        ("warning", "warning_emails"),
        ("reports", "report_emails"),
    ):
        for email in STEPS.context[key]:
            sns.subscribe(TopicArn=account["topics"][purpose], Protocol="email", Endpoint=email)
    deployed._analyzed(account, days_ago=1)
    stubbed = {
        "cloudformation": deployed._stacks(account),
        # The add-on the stack installed: one that serves the OTLP endpoint (step 3).
        "eks": deployed._otel_addon(account, OTLP_ENDPOINT_MIN_ADDON_VERSION),
    }
    made = aws_clients.client
    monkeypatch.setattr(
        # Each Stubber answers the first client of its service (the add-on's reads); the node
        # repair reads get moto's, which has no such cluster, so status names no node group.
        aws_clients,
        "client",
        lambda service, **kw: stubbed.pop(service, None) or made(service, **kw),
    )
    with serve(dcgm, tmp_path / "data") as url, answering(deployed.REGION, url):
        status = main(_command("status"))
    out = capsys.readouterr()
    assert status == 0, out.out + out.err
    first, *lines = out.out.splitlines()
    # The Region of step 2's cdk.json and the mode it gives, before the checks.
    assert first.startswith("Region us-west-2 (the region setting); Container Insights mode otel")
    checks = dict(line.split()[1::-1] for line in lines[:-2])
    assert checks == {
        "stacks": "OK",
        "observability-addon": "OK",
        "container-insights-gpu": "OK",
        "exporter-nodes": "OK",
        "silence-coverage": "OK",
        "alarms": "OK",
        "topic:critical": "OK",
        "topic:warning": "OK",
        "topic:report": "OK",
        "analyzer:storage": "OK",
        "analyzer:training": "OK",
        "weekly-report": "OK",
        # No serving model's signal missing (cli/status/serving.py: one PromQL query).
        "serving-series": "OK",
        # The newest weekly report lists no lemon node (cli/status/checks.py).
        "lemon-nodes": "OK",
    }
    assert out.out.splitlines()[-1] == "14 ok, 0 warn, 0 fail"
