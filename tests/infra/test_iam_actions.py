"""Every IAM action in every synthesized template exists, by AWS's own list.

The list is the Service Authorization Reference as policy_sentry bundles it (a maintained,
offline copy, refreshed with each release; https://docs.aws.amazon.com/service-authorization/
latest/reference/reference_policies_actions-resources-contextkeys.html). An API operation's
name is not always its action's: S3's PutBucketMetricsConfiguration and
DeleteBucketMetricsConfiguration are both authorized by s3:PutMetricsConfiguration, and a
policy naming the operation is accepted by CloudFormation and grants nothing.

Every shape of the app is read: the documented example (defaults), everything on (kubectl
role, request metrics, host-log XIDs, alarm emails) and IRSA; every statement anywhere in a
template (identity, custom-resource, trust, key, bucket, topic and queue policies, nested
stacks) and every Lambda permission.
"""

import fnmatch
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
from aws_cdk import Stack
from aws_cdk.assertions import Template
from policy_sentry.querying.actions import get_actions_for_service

from tests.infra.cdk.test_observability_stack import IRSA
from tests.infra.conftest import Synth
from tests.infra.test_security_review import FULL


@cache
def _service_actions(service: str) -> frozenset[str]:
    return frozenset(a.lower() for a in get_actions_for_service(service.lower()))


def unknown_actions(actions: list[str]) -> list[str]:
    """The actions (wildcards allowed, case ignored as IAM does) that name no IAM action."""
    unknown = []
    for action in actions:
        if action == "*":
            continue
        service, _, name = action.partition(":")
        known = _service_actions(service)
        if not fnmatch.filter(known, f"{service}:{name}".lower()):
            unknown.append(action)
    return unknown


def _statements(value: Any) -> Iterator[dict[str, Any]]:
    """Every policy statement in a template, wherever it sits."""
    if isinstance(value, dict):
        if "Effect" in value and ("Action" in value or "NotAction" in value):
            yield value
        for child in value.values():
            yield from _statements(child)
    elif isinstance(value, list):
        for child in value:
            yield from _statements(child)


def template_actions(template: dict[str, Any]) -> set[str]:
    actions: set[str] = set()
    for statement in _statements(template["Resources"]):
        for key in ("Action", "NotAction"):
            value = statement.get(key, [])
            actions |= set(value if isinstance(value, list) else [value])
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Lambda::Permission":
            actions.add(resource["Properties"]["Action"])
    return actions


def _templates(stacks: list[Stack]) -> Iterator[dict[str, Any]]:
    for stack in stacks:
        yield dict(Template.from_stack(stack).to_json())
        for child in stack.node.children:
            if isinstance(child, Stack):
                yield dict(Template.from_stack(child).to_json())


@pytest.mark.parametrize(
    "context",
    [{"cluster_name": "train"}, FULL, IRSA],
    ids=["defaults", "everything-on", "irsa"],
)
def test_every_action_in_every_template_exists(synth: Synth, context: dict[str, Any]) -> None:
    actions = set().union(*(template_actions(t) for t in _templates(synth(context))))
    assert len(actions) > 20  # the check reads the policies, not an empty set
    assert unknown_actions(sorted(actions)) == []


def test_a_misspelt_or_operation_named_action_is_caught() -> None:
    assert unknown_actions(
        [
            "s3:PutMetricsConfiguration",
            "s3:PutBucketMetricsConfiguration",  # the API operation, not the action
            "s3:DeleteBucketMetricsConfiguration",
            "SNS:Publish",
            "logs:Start*",
            "cloudwatch:GetMetricsData",
            "nosuchservice:Get*",
        ]
    ) == [
        "s3:PutBucketMetricsConfiguration",
        "s3:DeleteBucketMetricsConfiguration",
        "cloudwatch:GetMetricsData",
        "nosuchservice:Get*",
    ]
