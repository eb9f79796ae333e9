"""The README's deploy steps on the synthesized app and the realistic cluster model: step 2's
``context`` with step 4's ``cdk deploy -c`` makes the three stacks the README names, with the
subscriptions it promises, and leaves the exporter to step 5, whose ``manifest`` command line
(as the README shows it) selects every NVIDIA GPU node of cli/demo/realistic/nodes.py and no
other node. Preflight and status: tests/functional/cli/test_readme_deploy.py."""

import json
import shlex

import pytest
from aws_cdk.assertions import Template

from cdk.node_config.node_affinity import selects
from cli.main import main
from tests.docs_text import argv, deploy_steps
from tests.infra.conftest import Synth, stack_named
from tests.unit.cdk.node_config.test_gpu_node_selection import GPU_NODES, OTHER_NODES

STEPS = deploy_steps()
#: The image URI the Observability stack prints as its ``ImageUri`` output, as ECR spells it.
IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/cdk-hnb659fds-container-assets:3f2a9c"


def _deploy_context() -> dict[str, object]:
    """cdk.json's context (step 2), then each ``-c`` of step 4's ``cdk deploy``, as cdk merges
    them."""
    (deploy,) = [c for c in STEPS.commands if c.startswith("cdk deploy")]
    words = shlex.split(deploy)
    given = dict(words[i + 1].split("=", 1) for i, w in enumerate(words) if w == "-c")
    return {**STEPS.context, **given}


def test_step_4_deploys_the_three_stacks_of_the_named_cluster(synth: Synth) -> None:
    stacks = synth(_deploy_context())
    assert sorted(s.stack_name for s in stacks) == [
        "GpuInsights-ml-prod-Alarms",
        "GpuInsights-ml-prod-Analyzers",
        "GpuInsights-ml-prod-Observability",
    ]
    assert {s.region for s in stacks} == {STEPS.context["region"]}
    assert {s.account for s in stacks} == {STEPS.context["account"]}


def test_step_6_has_a_subscription_for_each_address_of_step_2(synth: Synth) -> None:
    stacks = synth(_deploy_context())
    endpoints = sorted(
        (r["Properties"]["Protocol"], r["Properties"]["Endpoint"])
        for s in stacks
        for r in Template.from_stack(s).find_resources("AWS::SNS::Subscription").values()
        if r["Properties"]["Protocol"] == "email"
    )
    emails = [
        e for key in ("alarm_emails", "warning_emails", "report_emails") for e in STEPS.context[key]
    ]
    assert endpoints == sorted(("email", e) for e in emails)


def test_without_a_kubectl_role_the_exporter_is_left_to_step_5(synth: Synth) -> None:
    assert "kubectl_role_arn" not in STEPS.context
    observability = Template.from_stack(stack_named(synth(_deploy_context()), "-Observability"))
    assert observability.find_resources("Custom::AWSCDK-EKS-KubernetesResource") == {}
    assert "ImageUri" in observability.find_outputs("*")


def test_step_5_manifest_reaches_every_gpu_node_and_no_other(
    capsys: pytest.CaptureFixture[str],
) -> None:
    (command,) = [c for c in STEPS.commands if c.startswith("gpu-insights manifest")]
    assert command.endswith("| kubectl apply -f -")
    assert main(argv(command, ImageUri=IMAGE)) == 0
    document = json.loads(capsys.readouterr().out)
    (daemon_set,) = [o for o in document["items"] if o["kind"] == "DaemonSet"]
    pod = daemon_set["spec"]["template"]["spec"]
    assert [c["image"] for c in pod["containers"]] == [IMAGE]
    required = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    terms = required["nodeSelectorTerms"]
    assert [p for p, (labels, _) in GPU_NODES.items() if not selects(terms, labels)] == []
    assert [p for p, labels in OTHER_NODES.items() if selects(terms, labels)] == []
