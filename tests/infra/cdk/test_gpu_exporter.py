import json
import re
from pathlib import Path
from typing import Any

from aws_cdk import App
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk.assertions import Annotations, Match, Template

from tests.infra.cdk.test_lambda_code import import_alone
from tests.infra.conftest import Synth, lint_errors, stack_named

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


def test_the_daemonset_sends_otlp_when_the_exporter_sink_setting_says(synth: Synth) -> None:
    """exporter_sink=otlp in OTel mode: the applied DaemonSet's exporter sends to the add-on
    agent's OTLP endpoint instead of its EMF listener."""
    context = {**KUBECTL, "container_insights_mode": "otel", "exporter_sink": "otlp"}
    (resource,) = (
        _template(synth, context).find_resources("Custom::AWSCDK-EKS-KubernetesResource").values()
    )
    objects = json.loads(_joined(resource["Properties"]["Manifest"]))
    args = objects[2]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--sink") + 1] == "otlp"
    assert args[args.index("--otlp-endpoint") + 1] == (
        "http://cloudwatch-agent.amazon-cloudwatch:4318/v1/metrics"
    )
    assert "--emf-endpoint" not in args
    stack = stack_named(synth(context), "-Observability")
    warnings = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(".*"))
    # Every reader of the exporter's series follows its sink (the alarms, the dashboards, the
    # analyzers and the report read PromQL), so synth has nothing to warn of.
    assert not [w for w in warnings if "exporter_sink=otlp" in str(w.entry.data)]


def test_exporter_can_be_turned_off(synth: Synth) -> None:
    template = _template(
        synth, {**PROD, "exporter_enabled": "false", "gpu_instance_type": "p5.48xlarge"}
    )
    outputs = template.find_outputs("*")
    assert not [o for o in outputs.values() if "gpu-insights manifest" in o["Description"]]


def test_cfn_lint_passes_with_the_kubectl_provider(synth: Synth) -> None:
    stack = stack_named(synth(KUBECTL), "-Observability")
    assert lint_errors(stack, ["eu-west-1"]) == []


def _staged_image_context(synth: Synth) -> Path:
    stack = stack_named(synth(PROD), "-Observability")
    (image,) = [c for c in stack.node.find_all() if isinstance(c, ecr_assets.DockerImageAsset)]
    app = stack.node.root
    assert isinstance(app, App)
    return Path(app.outdir) / f"asset.{image.asset_hash}"


def test_the_image_context_holds_the_exporters_packages_alone(synth: Synth) -> None:
    """The context is agent/ with .dockerignore rules (CDK's IgnoreMode.DOCKER,
    https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.IgnoreMode.html): a CDK app,
    Lambda code or a .venv in the image would be dead weight and a leak."""
    context = _staged_image_context(synth)
    assert sorted(p.name for p in context.iterdir()) == [
        "Dockerfile",
        "README.md",
        "gpu_insights_agent",
        "pyproject.toml",
    ]
    assert sorted(p.name for p in (context / "gpu_insights_agent").iterdir()) == [
        "__init__.py",
        "contract",
        "emf",
        "emitter",
        "exporter",
        "otlp",
        "quality",
    ]
    assert not list(context.rglob("__pycache__"))
    assert re.findall(r"^COPY (\S+) ", (context / "Dockerfile").read_text(), re.M) == ["."]


def test_every_exporter_module_imports_from_the_image_context_alone(synth: Synth) -> None:
    context = _staged_image_context(synth)
    modules = sorted(
        ".".join(p.relative_to(context).with_suffix("").parts)
        for p in (context / "gpu_insights_agent" / "exporter").glob("*.py")
        if p.stem != "__main__"  # it runs the exporter; it only imports exporter.cli
    )
    assert "gpu_insights_agent.exporter.cli" in modules
    for module in modules:
        import_alone(module, context)


PRIVATE = {
    **KUBECTL,
    "kubectl_vpc_id": "vpc-0a1b2c3d4e5f67890",
    "kubectl_subnet_ids": "subnet-0a1b2c3d4e5f67890,subnet-1a1b2c3d4e5f67890",
    "kubectl_security_group_id": "sg-0a1b2c3d4e5f67890",
}


def _kubectl_functions(synth: Synth, context: dict[str, Any]) -> dict[str, Any]:
    """CDK's kubectl provider's functions (its nested stack), by logical id."""
    from aws_cdk import NestedStack

    stack = stack_named(synth(context), "-Observability")
    (nested,) = [c for c in stack.node.children if isinstance(c, NestedStack)]
    return dict(Template.from_stack(nested).find_resources("AWS::Lambda::Function"))


def test_a_private_endpoint_puts_the_kubectl_provider_in_the_cluster_vpc(synth: Synth) -> None:
    """A private-only API endpoint is reachable from inside the VPC alone; CDK's provider runs
    outside any VPC unless given subnets and a security group ("If not specified, the k8s
    endpoint is expected to be accessible publicly": aws-cdk-lib, aws-eks ClusterAttributes)."""
    functions = _kubectl_functions(synth, PRIVATE)
    configs = {
        f["Properties"]["Handler"]: f["Properties"].get("VpcConfig") for f in functions.values()
    }
    expected = {
        "SecurityGroupIds": ["sg-0a1b2c3d4e5f67890"],
        "SubnetIds": ["subnet-0a1b2c3d4e5f67890", "subnet-1a1b2c3d4e5f67890"],
    }
    # The kubectl handler, and the provider framework that invokes it.
    assert configs == {"index.handler": expected, "framework.onEvent": expected}
    public = _kubectl_functions(synth, KUBECTL)
    assert [f["Properties"].get("VpcConfig") for f in public.values()] == [None, None]
