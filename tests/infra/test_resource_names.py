"""A cluster name that EKS accepts synthesizes, and every name in every template fits the
limits of its kind (cited in agent/gpu_insights_agent/contract/resource_names.py)."""

from typing import Any

import pytest
from aws_cdk import Stack
from aws_cdk.assertions import Template

from gpu_insights_agent.contract import resource_names as names
from tests.infra.conftest import Synth
from tests.infra.test_security_review import FULL

#: 100 characters (EKS's maximum) with underscores: valid for EKS, invalid in a stack name.
LONG_CLUSTER = "gpu_training_" + "x" * 80 + "_prod_1"
CONTEXT = {**FULL, "cluster_name": LONG_CLUSTER, "report_emails": "lead@example.com"}
#: (resource type, property) -> the rule its literal value must meet.
NAME_PROPERTIES: dict[tuple[str, str], names.NameRule] = {
    ("AWS::SNS::Topic", "TopicName"): names.SNS_TOPIC,
    ("AWS::SNS::Topic", "DisplayName"): names.SNS_DISPLAY_NAME,
    ("AWS::CloudWatch::Alarm", "AlarmName"): names.ALARM,
    ("AWS::CloudWatch::CompositeAlarm", "AlarmName"): names.ALARM,
    ("AWS::CloudWatch::Dashboard", "DashboardName"): names.DASHBOARD,
    ("AWS::Logs::LogGroup", "LogGroupName"): names.LOG_GROUP,
    ("AWS::Logs::MetricFilter", "LogGroupName"): names.LOG_GROUP,
    ("AWS::SSM::Parameter", "Name"): names.SSM_PARAMETER,
    ("AWS::Lambda::Function", "FunctionName"): names.LAMBDA_FUNCTION,
    ("AWS::IAM::Role", "RoleName"): names.IAM_ROLE,
    ("AWS::Events::Rule", "Name"): names.EVENT_RULE,
    ("AWS::SQS::Queue", "QueueName"): names.SQS_QUEUE,
    ("AWS::S3::Bucket", "BucketName"): names.S3_BUCKET,
}
#: CompositeAlarm AlarmRule: "Minimum length of 1. Maximum length of 10240."
#: https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutCompositeAlarm.html
MAX_ALARM_RULE = 10240


def _stacks(synth: Synth) -> list[Stack]:
    stacks = synth(CONTEXT)
    return stacks + [n for s in stacks for n in s.node.children if isinstance(n, Stack)]


@pytest.mark.slow
def test_a_long_cluster_name_with_underscores_synthesizes(synth: Synth) -> None:
    stacks = synth(CONTEXT)
    for stack in stacks:
        assert names.STACK.fits(stack.stack_name), stack.stack_name
        assert names.CDK_STACK_ID.fits(stack.node.id), stack.node.id
    # CDK's kubectl provider (a nested stack) synthesized: its template file name fits.
    assert any(isinstance(n, Stack) for s in stacks for n in s.node.children)
    assert {s.stack_name.rsplit("-", 1)[1] for s in synth(CONTEXT)} == {
        "Observability",
        "Alarms",
        "Analyzers",
    }


@pytest.mark.slow
def test_every_name_in_every_template_fits_its_kind(synth: Synth) -> None:
    checked: dict[tuple[str, str], int] = {}
    for stack in _stacks(synth):
        resources: dict[str, Any] = Template.from_stack(stack).to_json()["Resources"]
        for logical_id, resource in resources.items():
            props = resource.get("Properties", {})
            for (kind, prop), rule in NAME_PROPERTIES.items():
                value = props.get(prop)
                if resource["Type"] == kind and isinstance(value, str):
                    assert rule.fits(value), (logical_id, prop, value)
                    checked[kind, prop] = checked.get((kind, prop), 0) + 1
            if resource["Type"] == "AWS::CloudWatch::CompositeAlarm":
                assert len(props["AlarmRule"]) <= MAX_ALARM_RULE
    # The names the cluster name flows into were all seen (the test reads real templates).
    assert checked[("AWS::SNS::Topic", "DisplayName")] == 2
    assert checked[("AWS::SNS::Topic", "TopicName")] == 3
    assert (
        checked[("AWS::CloudWatch::Dashboard", "DashboardName")] == 8
    )  # fleet, node, training, storage, findings, cluster, serving, serving-deployment
    assert checked[("AWS::SSM::Parameter", "Name")] == 1
    assert checked[("AWS::CloudWatch::CompositeAlarm", "AlarmName")] == 1
