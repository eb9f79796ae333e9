import json
from typing import Any

from aws_cdk.assertions import Template
from cfnlint.api import lint

from tests.infra.conftest import Synth, stack_named

PROD = {"cluster_name": "train-prod", "account": "123456789012", "region": "eu-west-1"}
KUBECTL = {**PROD, "kubectl_role_arn": "arn:aws:iam::123456789012:role/eks-admin"}


def _template(synth: Synth, context: dict[str, Any]) -> Template:
    stack = stack_named(synth(context), "-Observability")
    return Template.from_stack(stack)


def _joined(value: Any) -> str:
    """A CloudFormation string with its tokens (image URI parts) replaced by placeholders."""
    if isinstance(value, str):
        return value
    parts = value["Fn::Join"][1]
    return "".join(p if isinstance(p, str) else "TOKEN" for p in parts)


def test_image_uri_is_an_output_and_no_daemonset_without_kubectl_role(synth: Synth) -> None:
    template = _template(synth, PROD)
    outputs = template.find_outputs("*")
    image_outputs = [o for o in outputs.values() if "gpu-insights manifest" in o["Description"]]
    assert len(image_outputs) == 1
    assert template.find_resources("Custom::AWSCDK-EKS-KubernetesResource") == {}


def test_kubectl_role_applies_the_daemonset_after_the_addon(synth: Synth) -> None:
    template = _template(synth, KUBECTL)
    resources = template.find_resources("Custom::AWSCDK-EKS-KubernetesResource")
    assert len(resources) == 1
    (resource,) = resources.values()
    addon_id = next(iter(template.find_resources("AWS::EKS::Addon")))
    assert addon_id in resource["DependsOn"]
    objects = json.loads(_joined(resource["Properties"]["Manifest"]))
    assert [o["kind"] for o in objects] == ["Namespace", "ServiceAccount", "DaemonSet"]
    container = objects[2]["spec"]["template"]["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in json.dumps(container["resources"])
    assert container["args"][:2] == ["--cluster-name", "train-prod"]
    assert container["image"].startswith("TOKEN")  # the image asset's URI
    assert resource["Properties"]["Overwrite"] is True


def test_exporter_can_be_turned_off(synth: Synth) -> None:
    template = _template(
        synth, {**PROD, "exporter_enabled": "false", "gpu_instance_type": "p5.48xlarge"}
    )
    outputs = template.find_outputs("*")
    assert not [o for o in outputs.values() if "gpu-insights manifest" in o["Description"]]


def test_cfn_lint_passes_with_the_kubectl_provider(synth: Synth) -> None:
    stack = stack_named(synth(KUBECTL), "-Observability")
    matches = lint(json.dumps(Template.from_stack(stack).to_json()), regions=["eu-west-1"])
    assert [str(m) for m in matches if m.rule.id.startswith("E")] == []
