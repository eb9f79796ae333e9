"""The app's security, checked across every stack it synthesizes (cdk-nag's AwsSolutions pack
also runs at every synth and fails it on any unacknowledged finding)."""

import json
from typing import Any

import pytest
from aws_cdk import Stack
from aws_cdk.assertions import Template

from tests.infra.conftest import Synth

FULL = {
    "cluster_name": "train-prod",
    "account": "123456789012",
    "region": "eu-west-1",
    "kubectl_role_arn": "arn:aws:iam::123456789012:role/eks-admin",
    # The kubectl provider in the cluster's VPC (a private API endpoint).
    "kubectl_vpc_id": "vpc-0a1b2c3d4e5f67890",
    "kubectl_subnet_ids": "subnet-0a1b2c3d4e5f67890,subnet-1a1b2c3d4e5f67890",
    "kubectl_security_group_id": "sg-0a1b2c3d4e5f67890",
    "storage_buckets": "train-data",
    "s3_enable_request_metrics": "true",
    "xid_host_log_filter": "true",
    "alarm_emails": "oncall@example.com",
    "storage_fleet_volumes": "100000",  # the storage analysis as a Distributed Map
    "training_fleet_jobs": "10000",  # and the training analysis
    # The EMF sink: every function (the silence check too) and the Metrics Insights alarms;
    # OTel mode's default sink, OTLP, is the checkov "default" shape's.
    "exporter_sink": "emf",
}
#: Actions that IAM authorizes only on "*" (no resource-level permissions), per the Service
#: Authorization Reference; any other action on "*" is a policy that could be scoped.
NO_RESOURCE_LEVEL = {
    "cloudwatch:PutMetricData",
    "cloudwatch:GetMetricData",
    "cloudwatch:ListMetrics",
    "ec2:DescribeVolumes",
    "ec2:DescribeInstances",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeTags",
    "logs:DescribeLogGroups",
    # Carries only a query id; "*" authorizes it however AWS scopes it.
    "logs:GetQueryResults",
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
    # A state machine's logging: "CloudWatch Logs ... doesn't support resource-level
    # permissions" for these (https://docs.aws.amazon.com/step-functions/latest/dg/
    # cw-logs.html#cloudwatch-iam-policy).
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
}


def _all_templates(synth: Synth) -> list[dict[str, Any]]:
    templates = []
    for stack in synth(FULL):
        templates.append(dict(Template.from_stack(stack).to_json()))
        templates += [
            dict(Template.from_stack(n).to_json())
            for n in stack.node.children
            if isinstance(n, Stack)
        ]
    return templates


def _statements(templates: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for template in templates:
        for logical_id, resource in template["Resources"].items():
            props = resource.get("Properties", {})
            documents = [props.get("PolicyDocument")] + [
                p["PolicyDocument"] for p in props.get("Policies", [])
            ]
            for document in filter(None, documents):
                found += [(logical_id, s) for s in document["Statement"]]
    return found


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_every_identity_policy_lists_its_actions(synth: Synth) -> None:
    for logical_id, statement in _statements(_all_templates(synth)):
        if statement.get("Effect") != "Allow" or "Principal" in statement:
            continue  # resource policies (bucket, topic, queue, key) are checked below
        for action in _listed(statement["Action"]):
            assert "*" not in action, (logical_id, action)


def test_wildcard_resources_only_where_the_api_allows_nothing_else(synth: Synth) -> None:
    for logical_id, statement in _statements(_all_templates(synth)):
        if statement.get("Effect") != "Allow" or "Principal" in statement:
            continue
        if "*" in _listed(statement["Resource"]):
            actions = set(_listed(statement["Action"]))
            # CDK's own providers (kubectl, custom resources) and the KMS key's root statement
            # are outside this project's policies.
            if logical_id.startswith(
                ("Handler", "Provider", "AWS679f53fac002430cb0da5b7982bd2287")
            ):
                continue
            assert actions <= NO_RESOURCE_LEVEL | {"kms:GenerateDataKey", "kms:Decrypt"}, (
                logical_id,
                actions,
            )


def test_buckets_are_private_and_refuse_plain_http(synth: Synth) -> None:
    templates = _all_templates(synth)
    buckets = {
        k: r for t in templates for k, r in t["Resources"].items() if r["Type"] == "AWS::S3::Bucket"
    }
    assert buckets
    policies = [
        r
        for t in templates
        for r in t["Resources"].values()
        if r["Type"] == "AWS::S3::BucketPolicy"
    ]
    for bucket in buckets.values():
        block = bucket["Properties"]["PublicAccessBlockConfiguration"]
        assert all(
            block[k] is True
            for k in (
                "BlockPublicAcls",
                "BlockPublicPolicy",
                "IgnorePublicAcls",
                "RestrictPublicBuckets",
            )
        )
    secured = {
        json.dumps(p["Properties"]["Bucket"])
        for p in policies
        if any(
            s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
            for s in p["Properties"]["PolicyDocument"]["Statement"]
        )
    }
    assert secured == {json.dumps({"Ref": k}) for k in buckets}


def test_keys_rotate_and_logs_expire(synth: Synth) -> None:
    templates = _all_templates(synth)
    keys = [r for t in templates for r in t["Resources"].values() if r["Type"] == "AWS::KMS::Key"]
    assert len(keys) == 2
    assert all(k["Properties"]["EnableKeyRotation"] is True for k in keys)
    groups = [
        r for t in templates for r in t["Resources"].values() if r["Type"] == "AWS::Logs::LogGroup"
    ]
    assert groups
    assert all("RetentionInDays" in g["Properties"] for g in groups)
    functions = [
        r
        for t in templates
        for r in t["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    ]
    ours = [f for f in functions if str(f["Properties"].get("Handler", "")).startswith("lambdas.")]
    assert len(ours) == 5  # three analyzers, the notifier, the silence check
    assert all("LoggingConfig" in f["Properties"] for f in ours)


def test_topics_and_queues_are_encrypted_and_tls_only(synth: Synth) -> None:
    templates = _all_templates(synth)
    for t in templates:
        for resource in t["Resources"].values():
            if resource["Type"] == "AWS::SNS::Topic":
                assert "KmsMasterKeyId" in resource["Properties"]
            if resource["Type"] == "AWS::SQS::Queue":
                assert resource["Properties"].get("SqsManagedSseEnabled") is True
    policies = [
        r
        for t in templates
        for r in t["Resources"].values()
        if r["Type"] in {"AWS::SNS::TopicPolicy", "AWS::SQS::QueuePolicy"}
    ]
    assert policies
    for policy in policies:
        deny = policy["Properties"]["PolicyDocument"]["Statement"][0]
        assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


@pytest.mark.parametrize(
    "context", [{"cluster_name": "train"}, FULL], ids=["defaults", "everything-on"]
)
def test_cdk_nag_passes_for_each_shape_of_the_app(synth: Synth, context: dict[str, Any]) -> None:
    assert len(synth(context)) == 3  # synth raises on any unacknowledged AwsSolutions finding
