"""Alarms and reports to the user's own topics (``critical_topic_arn`` and its kind): imported,
not made; the publishing roles granted the topic and its customer managed key, as a real policy
evaluator reads them; and what the topic's owner must allow said at synth."""

from typing import Any

from aws_cdk import Stack
from aws_cdk.assertions import Annotations, Match, Template

from tests.infra.conftest import Synth, stack_named
from tests.infra.policy.resolve import Resolver
from tests.infra.policy.simulate import Request, simulate

ACCOUNT = "123456789012"
REGION = "us-west-2"
ONCALL = f"arn:aws:sns:{REGION}:{ACCOUNT}:oncall-critical"
ONCALL_KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
REPORTS = f"arn:aws:sns:{REGION}:{ACCOUNT}:platform-reports"
REPORTS_KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/mrk-1234abcd12ab34cd56ef1234567890ab"
CONTEXT = {
    "cluster_name": "ml-prod",
    "account": ACCOUNT,
    "region": REGION,
    "critical_topic_arn": ONCALL,
    "critical_topic_kms_key_arn": ONCALL_KEY,
    "warning_emails": "gpu-team@example.com",
    "report_topic_arn": REPORTS,
    "report_topic_kms_key_arn": REPORTS_KEY,
}
#: The key policy KMS gives a key made without one: the account's IAM policies decide
#: (https://docs.aws.amazon.com/kms/latest/developerguide/key-policy-default.html, "Allows
#: access to the AWS account and enables IAM policies").
DEFAULT_KEY_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Sid": "Enable IAM User Permissions",
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
            "Action": "kms:*",
            "Resource": "*",
        }
    ],
}


def _function_role(stack: Stack, handler: str) -> tuple[str, list[dict[str, Any]]]:
    """The function's role ARN and its identity policies, intrinsics resolved."""
    template = dict(Template.from_stack(stack).to_json())
    resolve = Resolver(template, account=ACCOUNT, region=REGION)
    resources = template["Resources"]
    (function,) = [
        r
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::Function" and r["Properties"]["Handler"] == handler
    ]
    role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    documents = [
        resolve(r["Properties"]["PolicyDocument"])
        for r in resources.values()
        if r["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in r["Properties"]["Roles"]
    ]
    return resolve.arn(role_id), documents


def _requests(stack: Stack, handler: str, topic: str, key: str) -> list[Request]:
    role, identity = _function_role(stack, handler)
    return [
        Request(
            name=f"{handler} {action}",
            principal=role,
            action=action,
            resource=resource,
            account_id=ACCOUNT,
            context={"aws:SecureTransport": "true"},
            identity_policies=identity,
            resource_policy=policy,
        )
        for action, resource, policy in (
            ("sns:Publish", topic, None),
            ("kms:GenerateDataKey", key, DEFAULT_KEY_POLICY),
            ("kms:Decrypt", key, DEFAULT_KEY_POLICY),
        )
    ]


def test_the_publishers_may_publish_to_the_existing_topics_and_use_their_keys(
    synth: Synth,
) -> None:
    """Publishing to a topic encrypted with a customer managed key needs kms:GenerateDataKey and
    kms:Decrypt on that key (https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html,
    "Allow a user to send messages to a topic with SSE"); SNS refuses the publish otherwise."""
    stacks = synth(CONTEXT)
    requests = _requests(
        stack_named(stacks, "-Alarms"), "lambdas.notifier.handler.handler", ONCALL, ONCALL_KEY
    ) + _requests(
        stack_named(stacks, "-Analyzers"),
        "lambdas.weekly_report.handler.handler",
        REPORTS,
        REPORTS_KEY,
    )
    other_key = ONCALL_KEY.replace("1234abcd-", "9999abcd-")
    negative = Request(**{**requests[1].__dict__, "name": "another key", "resource": other_key})
    results = simulate([*requests, negative])
    assert {r.name: results[r.name] for r in requests} == {r.name: "Allowed" for r in requests}
    assert results["another key"] == "ImplicitlyDenied"


def test_existing_topics_are_imported_and_get_no_policy_or_subscription(synth: Synth) -> None:
    stacks = synth(CONTEXT)
    alarms = Template.from_stack(stack_named(stacks, "-Alarms"))
    # Only the warning topic is the app's; the page goes to the on-call topic.
    topics = alarms.find_resources("AWS::SNS::Topic")
    assert [t["Properties"]["TopicName"] for t in topics.values()] == [
        "gpu-insights-ml-prod-warning"
    ]
    assert len(alarms.find_resources("AWS::SNS::TopicPolicy")) == 1  # the warning topic's TLS
    subscriptions = alarms.find_resources("AWS::SNS::Subscription")
    assert {s["Properties"]["Endpoint"] for s in subscriptions.values()} == {"gpu-team@example.com"}
    alarms.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {"AlarmName": "gpu-insights-ml-prod-notifier-failing", "AlarmActions": [ONCALL]},
    )
    alarms.has_output("CriticalTopicArn", {"Value": ONCALL})
    alarms.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "lambdas.notifier.handler.handler",
            "Environment": {"Variables": Match.object_like({"CRITICAL_TOPIC_ARN": ONCALL})},
        },
    )
    analyzers = Template.from_stack(stack_named(stacks, "-Analyzers"))
    assert analyzers.find_resources("AWS::SNS::Topic") == {}
    analyzers.has_output("ReportTopicArn", {"Value": REPORTS})


def test_synth_says_what_the_existing_critical_topic_must_allow(synth: Synth) -> None:
    """The failure alarm publishes to the on-call topic itself; its owner's policies decide."""
    stack = stack_named(synth(CONTEXT), "-Alarms")
    warnings = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(".*"))
    texts = [str(w.entry.data) for w in warnings]
    assert any(
        "gpu-insights-ml-prod-notifier-failing" in t
        and ONCALL in t
        and "cloudwatch.amazonaws.com sns:Publish" in t
        and "kms:GenerateDataKey" in t
        for t in texts
    ), texts


def test_both_alarm_topics_existing_unencrypted_make_no_key(synth: Synth) -> None:
    context = {
        "cluster_name": "ml-prod",
        "account": ACCOUNT,
        "region": REGION,
        "critical_topic_arn": ONCALL,
        "warning_topic_arn": f"arn:aws:sns:{REGION}:{ACCOUNT}:oncall-warning",
    }
    alarms = Template.from_stack(stack_named(synth(context), "-Alarms"))
    assert alarms.find_resources("AWS::KMS::Key") == {}
    assert alarms.find_resources("AWS::SNS::Topic") == {}
    _role, identity = _function_role(
        stack_named(synth(context), "-Alarms"), "lambdas.notifier.handler.handler"
    )
    actions = {
        a
        for document in identity
        for s in document["Statement"]
        for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    }
    assert "sns:Publish" in actions
    assert not {a for a in actions if a.startswith("kms:")}
