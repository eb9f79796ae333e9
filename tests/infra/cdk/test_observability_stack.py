import json
from typing import Any

import jsonschema
import pytest
from aws_cdk import App
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match, Template

from cdk.app import build
from cdk.settings import Settings
from tests.infra.conftest import Synth, lint_errors, stack_named

OIDC = "arn:aws:iam::123456789012:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC123"
PROD = {"cluster_name": "train-prod", "account": "123456789012", "region": "eu-west-1"}
IRSA = {**PROD, "agent_credentials": "irsa", "oidc_provider_arn": OIDC}
NO_ADDON = {**PROD, "install_addon": "false"}


def _template(synth: Synth, context: dict[str, Any]) -> Template:
    stack = stack_named(synth(context), "-Observability")
    return Template.from_stack(stack)


def _one(template: Template, resource_type: str) -> tuple[str, dict[str, Any]]:
    resources = template.find_resources(resource_type)
    assert len(resources) == 1, resources
    logical_id, resource = next(iter(resources.items()))
    return logical_id, dict(resource)


def test_addon_is_installed_by_name_with_gpu_metrics(synth: Synth) -> None:
    template = _template(synth, {**PROD, "container_insights_mode": "classic"})
    _, addon = _one(template, "AWS::EKS::Addon")
    props = addon["Properties"]
    assert props["AddonName"] == "amazon-cloudwatch-observability"
    assert props["ClusterName"] == "train-prod"
    values = json.loads(props["ConfigurationValues"])
    kubernetes = values["agent"]["config"]["logs"]["metrics_collected"]["kubernetes"]
    assert kubernetes == {
        "cluster_name": "train-prod",
        "enhanced_container_insights": True,
        "accelerated_compute_metrics": True,
    }
    assert values["agent"]["config"]["logs"]["metrics_collected"]["emf"] == {}
    assert values["containerLogs"] == {"enabled": True}
    assert values["tolerations"] == [{"operator": "Exists"}]
    # The inference servers' scrape (serving_metrics, on by default): the agent's Prometheus
    # section and the chart's scrape config with its target allocator; its log events go to
    # /aws/containerinsights/train-prod/prometheus, inside the role's log scope below.
    prometheus = values["agent"]["config"]["logs"]["metrics_collected"]["prometheus"]
    assert prometheus["prometheus_config_path"] == "/etc/prometheusconfig/prometheus.yaml"
    assert values["agent"]["prometheus"]["targetAllocator"] == {"enabled": True}
    assert len(values["agent"]["prometheus"]["config"]["scrape_configs"]) == 4


def test_addon_runs_otel_container_insights_when_chosen(synth: Synth) -> None:
    _, addon = _one(
        _template(synth, {**PROD, "container_insights_mode": "otel"}), "AWS::EKS::Addon"
    )
    values = json.loads(addon["Properties"]["ConfigurationValues"])
    assert values["otelContainerInsights"] == {"enabled": True, "logs": {"enabled": False}}
    assert values["containerInsights"] == {"enabled": False}
    assert values["agent"]["config"] == {"logs": {"metrics_collected": {"emf": {}}}}


def test_addon_agent_config_validates_against_official_schema(
    synth: Synth, agent_schema: dict[str, Any]
) -> None:
    _, addon = _one(_template(synth, PROD), "AWS::EKS::Addon")
    values = json.loads(addon["Properties"]["ConfigurationValues"])
    jsonschema.Draft4Validator(agent_schema).validate(values["agent"]["config"])


def test_pod_identity_association_exists_before_the_addon(synth: Synth) -> None:
    template = _template(synth, PROD)
    association_id, association = _one(template, "AWS::EKS::PodIdentityAssociation")
    role_id, _ = _one(template, "AWS::IAM::Role")
    assert association["Properties"] == {
        "ClusterName": "train-prod",
        "Namespace": "amazon-cloudwatch",
        "ServiceAccount": "cloudwatch-agent",
        "RoleArn": {"Fn::GetAtt": [role_id, "Arn"]},
    }
    _, addon = _one(template, "AWS::EKS::Addon")
    assert association_id in addon["DependsOn"]
    assert "ServiceAccountRoleArn" not in addon["Properties"]


def test_pod_identity_role_trusts_only_eks_pods(synth: Synth) -> None:
    _, role = _one(_template(synth, PROD), "AWS::IAM::Role")
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(statement["Action"]) == ["sts:AssumeRole", "sts:TagSession"]


def test_agent_role_lists_its_actions_and_scopes_logs_to_the_cluster(synth: Synth) -> None:
    _, role = _one(_template(synth, PROD), "AWS::IAM::Role")
    statements = {
        s["Sid"]: s
        for p in role["Properties"]["Policies"]
        for s in p["PolicyDocument"]["Statement"]
    }
    actions = [a for s in statements.values() for a in _as_list(s["Action"])]
    assert all("*" not in action for action in actions)
    assert "iam:PassRole" not in actions
    assert set(actions) == {
        "cloudwatch:PutMetricData",
        "logs:CreateLogGroup",
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "logs:PutRetentionPolicy",
        "logs:DescribeLogStreams",
        "logs:DescribeLogGroups",
        "ec2:DescribeVolumes",
        "ec2:DescribeTags",
    }
    log_resources = json.dumps(statements["WriteContainerInsightsLogs"]["Resource"])
    assert ":log-group:/aws/containerinsights/train-prod/*" in log_resources
    assert role["Properties"].get("ManagedPolicyArns") is None


def test_irsa_trusts_the_service_account_and_passes_the_role_to_the_addon(synth: Synth) -> None:
    template = _template(synth, IRSA)
    assert template.find_resources("AWS::EKS::PodIdentityAssociation") == {}
    role_id, role = _one(template, "AWS::IAM::Role")
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    issuer = "oidc.eks.eu-west-1.amazonaws.com/id/ABC123"
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Principal"] == {"Federated": OIDC}
    assert statement["Condition"]["StringEquals"] == {
        f"{issuer}:sub": "system:serviceaccount:amazon-cloudwatch:cloudwatch-agent",
        f"{issuer}:aud": "sts.amazonaws.com",
    }
    _, addon = _one(template, "AWS::EKS::Addon")
    assert addon["Properties"]["ServiceAccountRoleArn"] == {"Fn::GetAtt": [role_id, "Arn"]}
    assert role_id in addon["DependsOn"]


def test_addon_can_be_left_to_whoever_manages_it(synth: Synth) -> None:
    template = _template(synth, NO_ADDON)
    template.resource_count_is("AWS::EKS::Addon", 0)
    template.resource_count_is("AWS::IAM::Role", 0)
    template.resource_count_is("AWS::SSM::Parameter", 1)


def test_addon_version_is_pinned_when_set(synth: Synth) -> None:
    classic = {**PROD, "container_insights_mode": "classic"}
    template = _template(synth, {**classic, "addon_version": "v4.1.0-eksbuild.1"})
    template.has_resource_properties(
        "AWS::EKS::Addon", {"AddonVersion": "v4.1.0-eksbuild.1", "ResolveConflicts": "OVERWRITE"}
    )


def test_gpu_agent_config_is_stored_under_the_agents_ssm_prefix(
    synth: Synth, agent_schema: dict[str, Any]
) -> None:
    template = _template(synth, PROD)
    _, parameter = _one(template, "AWS::SSM::Parameter")
    assert parameter["Properties"]["Name"] == "AmazonCloudWatch-GpuInsights-train-prod"
    config = json.loads(parameter["Properties"]["Value"])
    jsonschema.Draft4Validator(agent_schema).validate(config)
    measured = config["metrics"]["metrics_collected"]["nvidia_gpu"]["measurement"]
    assert "power_draw" in measured
    assert "power_limit" not in measured  # not in the agent's allowlist: fetch-config fails
    template.has_output(
        "AgentConfigFetchCommand",
        {"Value": Match.string_like_regexp("fetch-config .*-c ssm:AmazonCloudWatch-GpuInsights")},
    )


@pytest.mark.parametrize("context", [PROD, IRSA, NO_ADDON], ids=["prod", "irsa", "no-addon"])
def test_cfn_lint_finds_no_errors(synth: Synth, context: dict[str, Any]) -> None:
    for stack in synth(context):
        assert lint_errors(stack, ["us-east-1", "eu-west-1"]) == []


def test_cdk_nag_fails_synth_on_an_unacknowledged_finding(tmp_path: Any) -> None:
    """The clean synths above mean something only if nag does stop a bad one."""
    app = App(outdir=str(tmp_path))
    stack = stack_named(build(app, Settings(cluster_name="train")), "-Observability")
    role = iam.Role(stack, "CarelessRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    role.add_to_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=["*"]))
    with pytest.raises(RuntimeError, match=r"CarelessRole(.|\n)*AwsSolutions-IAM5\[Resource::\*\]"):
        app.synth()


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else value
