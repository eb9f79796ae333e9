"""The README's deploy steps, followed on moto as a user would: step 2's ``context`` in
cdk.json, then step 3's ``preflight`` and step 7's ``status`` command lines exactly as the
README shows them (synth and ``manifest``: tests/infra/cdk/test_readme_deploy.py).

The account and the healthy deployment are test_status's and test_preflight's (the cluster
and its node groups as cli/demo/preflight.py seeds them; the add-on reads and the stacks,
which moto lacks, answered by botocore Stubbers)."""

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cdk.settings import settings_from_context
from cli.demo.preflight import seed_cluster
from cli.demo.promql import answering
from cli.main import _parser, main
from cli.preflight.checks import Verdict
from cli.settings_args import context_from_args
from tests.docs_text import argv, deploy_steps
from tests.functional.cli import test_preflight as preflight
from tests.functional.cli import test_status as deployed
from tests.prometheus import serve, write_openmetrics

account = deployed.account
STEPS = deploy_steps()


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
    checks = preflight._preflight(
        session, settings, {"eks-pod-identity-agent": ("v1.3.8-eksbuild.2", "ACTIVE")}
    )
    verdicts = {c.name: c.verdict for c in checks}
    assert verdicts["cluster"] is Verdict.OK
    assert [(c.name, c.detail) for c in checks if c.verdict is Verdict.FAIL] == []


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
    configured so, every GPU node's DCGM series in a real PromQL engine) prints a line a check
    and fails none."""
    import cli.status.command
    from lambdas.shared import aws_clients

    # Status runs half an hour after the GPU nodes started (past the exporter's grace period).
    run_at = account["run_at"]
    monkeypatch.setattr(cli.status.command, "time", SimpleNamespace(time=lambda: run_at))
    cloudwatch = account["session"].client("cloudwatch")
    for node in account["nodes"]:
        deployed._exporter(cloudwatch, node, run_at - 1200, run_at)
    dcgm = tmp_path / "dcgm.om"
    write_openmetrics(dcgm, deployed._dcgm(account["nodes"], run_at - 1200, run_at, ("", -1)))
    deployed._alarms(account, {})
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
        "eks": deployed._otel_addon(account),
    }
    made = aws_clients.client
    monkeypatch.setattr(
        aws_clients, "client", lambda service, **kw: stubbed.get(service) or made(service, **kw)
    )
    with serve(dcgm, tmp_path / "data") as url, answering(deployed.REGION, url):
        status = main(_command("status"))
    out = capsys.readouterr()
    assert status == 0, out.out + out.err
    checks = dict(line.split()[1::-1] for line in out.out.splitlines()[:-2])
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
    }
    assert out.out.splitlines()[-1] == "12 ok, 0 warn, 0 fail"
