"""Resource policies and service principals, evaluated by a real policy evaluator.

Every request that AWS makes on this app's behalf, built from the synthesized templates with
their intrinsics resolved, runs through @cloud-copilot/iam-simulate (AWS's evaluation logic:
identity and resource policies, service principals, conditions, KMS key-policy trust):

- CloudWatch publishing an alarm's notification to its topic, with the alarm's ARN as
  aws:SourceArn: the topic policy and the key policy must both allow it. Only the notifier's
  failure alarm has an action (the GPU alarms page through the notifier). A topic policy
  replaces SNS's default one, so without an Allow for cloudwatch.amazonaws.com alarm actions
  fail (https://docs.aws.amazon.com/sns/latest/dg/sns-access-policy-use-cases.html, the
  CloudWatch alarms case; https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html
  #compatibility-with-aws-services for the key).
- EventBridge invoking each scheduled function and the notifier (its rule on this app's alarm
  and contributor state changes), CloudWatch Logs invoking the notifier:
  Lambda turns each AWS::Lambda::Permission into a resource-policy statement whose SourceArn
  becomes an ArnLike condition on AWS:SourceArn
  (https://docs.aws.amazon.com/lambda/latest/dg/access-control-resource-based.html).
- Each function's on-failure destination and dead-letter queue: the function's role sends
  (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html, "the
  function's execution role"), against the queue's policy.
- Every role's request on a bucket, queue, topic or key of the app, against that resource's
  policy (the bucket policies' TLS Deny, the keys' account delegation).
Each kind has a negative case that shows the evaluator would catch the defect.
"""

import copy
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest
from aws_cdk.assertions import Template

from tests.infra.conftest import Synth
from tests.infra.policy.resolve import Resolver
from tests.infra.policy.simulate import Request, simulate
from tests.infra.test_security_review import FULL

ACCOUNT = FULL["account"]
REGION = FULL["region"]
TLS = {"aws:SecureTransport": "true"}
ALLOWED = "Allowed"


@dataclass(frozen=True)
class Deployed:
    """One stack's template with its intrinsics resolved."""

    resources: dict[str, Any]
    resolve: Resolver

    def of_type(self, kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
        for logical_id, resource in self.resources.items():
            if resource["Type"] == kind:
                yield logical_id, self.resolve(resource.get("Properties", {}))

    def arn_of(self, kind: str, physical: str) -> str | None:
        """The logical id whose ARN (or Ref) is this value, among resources of this type."""
        for logical_id, resource in self.resources.items():
            if resource["Type"] == kind and physical in {
                self.resolve.arn(logical_id),
                self.resolve.ref(logical_id),
            }:
                return logical_id
        return None


@pytest.fixture(scope="module")
def deployed(synth: Synth) -> list[Deployed]:
    stacks = []
    for stack in synth(FULL):
        template = dict(Template.from_stack(stack).to_json())
        resolver = Resolver(template, account=ACCOUNT, region=REGION)
        stacks.append(Deployed(template["Resources"], resolver))
    return stacks


def _policy_of(stack: Deployed, kind: str, key: str, target: str) -> dict[str, Any] | None:
    """The resource policy (AWS::SNS::TopicPolicy, AWS::SQS::QueuePolicy, ...) naming target."""
    for _, props in stack.of_type(kind):
        targets = props[key] if isinstance(props[key], list) else [props[key]]
        if target in targets:
            document: dict[str, Any] = props["PolicyDocument"]
            return document
    return None


def _identity_policies(stack: Deployed, role_id: str) -> list[dict[str, Any]]:
    role_name = stack.resolve.ref(role_id)
    # Inline policies, and the managed ones CDK attaches where a role's default policy grows
    # past IAM's size limit (its overflow policies: AWS::IAM::ManagedPolicy naming the role).
    documents = [
        props["PolicyDocument"]
        for kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy")
        for _, props in stack.of_type(kind)
        if role_name in props.get("Roles", [])
    ]
    role = stack.resolve(stack.resources[role_id].get("Properties", {}))
    return documents + [p["PolicyDocument"] for p in role.get("Policies", [])]


def _function_policy(stack: Deployed, function_arn: str) -> dict[str, Any]:
    """The function's resource policy as Lambda builds it from its permissions."""
    statements = []
    for _, props in stack.of_type("AWS::Lambda::Permission"):
        if props["FunctionName"] != function_arn:
            continue
        statement: dict[str, Any] = {
            "Effect": "Allow",
            "Principal": {"Service": props["Principal"]},
            "Action": props["Action"],
            "Resource": function_arn,
        }
        conditions: dict[str, Any] = {}
        if "SourceArn" in props:
            conditions["ArnLike"] = {"AWS:SourceArn": props["SourceArn"]}
        if "SourceAccount" in props:
            conditions["StringEquals"] = {"AWS:SourceAccount": props["SourceAccount"]}
        if conditions:
            statement["Condition"] = conditions
        statements.append(statement)
    return {"Version": "2012-10-17", "Statement": statements}


def _source(arn: str) -> dict[str, str]:
    return {**TLS, "aws:SourceArn": arn, "aws:SourceAccount": ACCOUNT}


def alarm_requests(stacks: list[Deployed]) -> list[Request]:
    requests = []
    for stack in stacks:
        alarms = [
            *stack.of_type("AWS::CloudWatch::Alarm"),
            *stack.of_type("AWS::CloudWatch::CompositeAlarm"),
        ]
        for alarm_id, props in alarms:
            alarm_arn = stack.resolve.arn(alarm_id)
            topics = {
                t
                for key in ("AlarmActions", "OKActions", "InsufficientDataActions")
                for t in props.get(key, [])
            }
            for topic in sorted(topics):
                topic_id = stack.arn_of("AWS::SNS::Topic", topic)
                assert topic_id is not None, (alarm_id, topic)
                requests.append(
                    Request(
                        name=f"{alarm_id} publishes to {topic_id}",
                        principal="cloudwatch.amazonaws.com",
                        action="sns:Publish",
                        resource=topic,
                        account_id=ACCOUNT,
                        context=_source(alarm_arn),
                        resource_policy=_policy_of(stack, "AWS::SNS::TopicPolicy", "Topics", topic),
                    )
                )
                key_arn = stack.resolve(stack.resources[topic_id]["Properties"]["KmsMasterKeyId"])
                key_id = stack.arn_of("AWS::KMS::Key", key_arn)
                assert key_id is not None, (topic_id, key_arn)
                key_policy = stack.resolve(stack.resources[key_id]["Properties"]["KeyPolicy"])
                for action in ("kms:GenerateDataKey", "kms:Decrypt"):
                    requests.append(
                        Request(
                            name=f"{alarm_id} {action} for {topic_id}",
                            principal="cloudwatch.amazonaws.com",
                            action=action,
                            resource=key_arn,
                            account_id=ACCOUNT,
                            context=_source(alarm_arn),
                            resource_policy=key_policy,
                        )
                    )
    return requests


def invoke_requests(stacks: list[Deployed]) -> list[Request]:
    """EventBridge rules and CloudWatch Logs subscriptions invoking their functions."""
    invocations = []  # (stack, who, service principal, function ARN, aws:SourceArn)
    for stack in stacks:
        for rule_id, props in stack.of_type("AWS::Events::Rule"):
            rule_arn = stack.resolve.arn(rule_id)
            for target in props.get("Targets", []):
                if ":lambda:" in target["Arn"]:  # state machines: machine_requests
                    invocations.append((stack, rule_id, "events", target["Arn"], rule_arn))
        for filter_id, props in stack.of_type("AWS::Logs::SubscriptionFilter"):
            group = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{props['LogGroupName']}:*"
            invocations.append((stack, filter_id, "logs", props["DestinationArn"], group))
    return [
        Request(
            name=f"{who} invokes {function}",
            principal=f"{service}.amazonaws.com",
            action="lambda:InvokeFunction",
            resource=function,
            account_id=ACCOUNT,
            context=_source(source),
            resource_policy=_function_policy(stack, function),
        )
        for stack, who, service, function, source in invocations
    ]


def machine_requests(stacks: list[Deployed]) -> list[Request]:
    """A schedule starting a state machine (as the rule's role), and the state machine
    invoking its function (as its role): identity policies, same account, no resource policy
    needed (https://docs.aws.amazon.com/lambda/latest/dg/access-control-resource-based.html)."""
    requests = []
    for stack in stacks:
        roles = {stack.resolve.arn(r): r for r, _ in stack.of_type("AWS::IAM::Role")}
        for rule_id, props in stack.of_type("AWS::Events::Rule"):
            for target in props.get("Targets", []):
                if ":states:" in target["Arn"]:
                    role_id = roles[target["RoleArn"]]
                    requests.append(
                        Request(
                            name=f"{rule_id} starts {target['Arn']}",
                            principal=target["RoleArn"],
                            action="states:StartExecution",
                            resource=target["Arn"],
                            account_id=ACCOUNT,
                            identity_policies=_identity_policies(stack, role_id),
                        )
                    )
        for machine_id, props in stack.of_type("AWS::StepFunctions::StateMachine"):
            role_id = roles[props["RoleArn"]]
            definition = str(props.get("DefinitionString", ""))
            for function_id, _ in stack.of_type("AWS::Lambda::Function"):
                function_arn = stack.resolve.arn(function_id)
                if function_arn in definition:
                    requests.append(
                        Request(
                            name=f"{machine_id} invokes {function_arn}",
                            principal=props["RoleArn"],
                            action="lambda:InvokeFunction",
                            resource=function_arn,
                            account_id=ACCOUNT,
                            identity_policies=_identity_policies(stack, role_id),
                        )
                    )
    return requests


def _role_of(stack: Deployed, function_arn: str) -> tuple[str, str]:
    function_id = stack.arn_of("AWS::Lambda::Function", function_arn)
    assert function_id is not None, function_arn
    role_arn = stack.resolve(stack.resources[function_id]["Properties"]["Role"])
    role_id = stack.arn_of("AWS::IAM::Role", role_arn)
    assert role_id is not None, role_arn
    return role_id, role_arn


def failure_requests(stacks: list[Deployed]) -> list[Request]:
    """Each function's role sending a failed event to its on-failure destination or DLQ."""
    destinations: list[tuple[Deployed, str, str]] = []
    for stack in stacks:
        for _, props in stack.of_type("AWS::Lambda::EventInvokeConfig"):
            failure = props.get("DestinationConfig", {}).get("OnFailure")
            if failure:
                name = props["FunctionName"]
                arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
                destinations.append((stack, arn, failure["Destination"]))
        for function_id, props in stack.of_type("AWS::Lambda::Function"):
            if "DeadLetterConfig" in props:
                arn = stack.resolve.arn(function_id)
                destinations.append((stack, arn, props["DeadLetterConfig"]["TargetArn"]))
    requests = []
    for stack, function_arn, destination in destinations:
        role_id, role_arn = _role_of(stack, function_arn)
        queue_id = stack.arn_of("AWS::SQS::Queue", destination)
        assert queue_id is not None, f"{destination}: only SQS destinations are expected here"
        requests.append(
            Request(
                name=f"{role_id} keeps a failed event in {queue_id}",
                principal=role_arn,
                action="sqs:SendMessage",
                resource=destination,
                account_id=ACCOUNT,
                context=TLS,
                identity_policies=_identity_policies(stack, role_id),
                resource_policy=_policy_of(
                    stack, "AWS::SQS::QueuePolicy", "Queues", stack.resolve.ref(queue_id)
                ),
            )
        )
    return requests


def _concrete(resource: str) -> str:
    """A resource the statement's pattern stands for: each wildcard as a sample name."""
    return resource.replace("*", "sample")


def _resource_policy(stack: Deployed, arn: str) -> tuple[str, dict[str, Any] | None] | None:
    """Which of the app's resources this ARN is in, and its resource policy."""
    for logical_id, resource in stack.resources.items():
        kind = resource["Type"]
        if kind == "AWS::S3::Bucket":
            bucket = stack.resolve.arn(logical_id)
            if arn == bucket or arn.startswith(bucket + "/"):
                name = stack.resolve.ref(logical_id)
                return logical_id, _policy_of(stack, "AWS::S3::BucketPolicy", "Bucket", name)
        elif kind == "AWS::KMS::Key" and arn == stack.resolve.arn(logical_id):
            return logical_id, stack.resolve(resource["Properties"]["KeyPolicy"])
        elif kind == "AWS::SQS::Queue" and arn == stack.resolve.arn(logical_id):
            url = stack.resolve.ref(logical_id)
            return logical_id, _policy_of(stack, "AWS::SQS::QueuePolicy", "Queues", url)
        elif kind == "AWS::SNS::Topic" and arn == stack.resolve.arn(logical_id):
            return logical_id, _policy_of(stack, "AWS::SNS::TopicPolicy", "Topics", arn)
    return None


def role_requests(stacks: list[Deployed]) -> list[Request]:
    """Every action a role of the app is granted on a bucket, key, queue or topic of the app,
    against that resource's policy."""
    requests = []
    seen: set[str] = set()
    for stack in stacks:
        for role_id, _ in stack.of_type("AWS::IAM::Role"):
            if role_id.startswith("AWS679f53fac002430cb0da5b7982bd2287"):
                continue  # CDK's custom-resource provider; its statements are per resource
            identity = _identity_policies(stack, role_id)
            for document in identity:
                for statement in document["Statement"]:
                    resources = statement["Resource"]
                    actions = statement["Action"]
                    for resource in resources if isinstance(resources, list) else [resources]:
                        target = _resource_policy(stack, resource.rstrip("*").rstrip("/"))
                        if statement["Effect"] != "Allow" or target is None:
                            continue
                        context = {**TLS}
                        for values in statement.get("Condition", {}).values():
                            context |= {k: _concrete(v[0]) for k, v in values.items()}
                        for action in actions if isinstance(actions, list) else [actions]:
                            name = f"{role_id} {action} {resource} ({target[0]})"
                            if name in seen:
                                continue  # granted twice (CDK's grant and ours): asked once
                            seen.add(name)
                            requests.append(
                                Request(
                                    name=name,
                                    principal=stack.resolve.arn(role_id),
                                    action=action,
                                    resource=_concrete(resource),
                                    account_id=ACCOUNT,
                                    context=context,
                                    identity_policies=identity,
                                    resource_policy=target[1],
                                )
                            )
    return requests


@pytest.fixture(scope="module")
def requests(deployed: list[Deployed]) -> dict[str, list[Request]]:
    return {
        "alarms": alarm_requests(deployed),
        "invocations": invoke_requests(deployed),
        "failures": failure_requests(deployed),
        "roles": role_requests(deployed),
        "machines": machine_requests(deployed),
    }


def _without(policy: dict[str, Any] | None, predicate: Any) -> dict[str, Any]:
    assert policy is not None
    trimmed = copy.deepcopy(policy)
    trimmed["Statement"] = [s for s in trimmed["Statement"] if not predicate(s)]
    return trimmed


def _is_service(name: str) -> Any:
    return lambda s: s.get("Principal", {}) == {"Service": name} and s["Effect"] == "Allow"


def _negatives(requests: dict[str, list[Request]]) -> list[tuple[Request, str]]:
    """One broken variant per kind of request, and what AWS would answer."""
    publish = next(r for r in requests["alarms"] if r.action == "sns:Publish")
    key = next(r for r in requests["alarms"] if r.action == "kms:GenerateDataKey")
    schedule = next(r for r in requests["invocations"] if r.principal == "events.amazonaws.com")
    logs = next(r for r in requests["invocations"] if r.principal == "logs.amazonaws.com")
    failure = requests["failures"][0]
    bucket = next(r for r in requests["roles"] if r.action == "s3:PutObject")
    return [
        # The defect of issue 11: the topic policy without the CloudWatch Allow.
        (
            replace(
                publish,
                name="no CloudWatch Allow",
                resource_policy=_without(
                    publish.resource_policy, _is_service("cloudwatch.amazonaws.com")
                ),
            ),
            "ImplicitlyDenied",
        ),
        # A GPU alarm given an action again: CloudWatch may publish for the failure alarm only.
        (
            replace(
                publish,
                name="a GPU alarm's action",
                context=_source(
                    publish.context["aws:SourceArn"].replace(
                        "notifier-failing", "gpu-low-power-shard-00"
                    )
                ),
            ),
            "ImplicitlyDenied",
        ),
        # The confused deputy: another account's alarm naming this topic.
        (
            replace(
                publish,
                name="another account's alarm",
                context=_source(publish.context["aws:SourceArn"].replace(ACCOUNT, "210987654321"))
                | {"aws:SourceAccount": "210987654321"},
            ),
            "ImplicitlyDenied",
        ),
        (
            replace(
                key,
                name="key policy without CloudWatch",
                resource_policy=_without(
                    key.resource_policy, _is_service("cloudwatch.amazonaws.com")
                ),
            ),
            "ImplicitlyDenied",
        ),
        (
            replace(
                schedule,
                name="another rule",
                context=_source(schedule.context["aws:SourceArn"] + "-other"),
            ),
            "ImplicitlyDenied",
        ),
        (
            replace(
                logs,
                name="another log group",
                context=_source(f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/other:*"),
            ),
            "ImplicitlyDenied",
        ),
        (
            replace(
                failure,
                name="role without SendMessage",
                identity_policies=[
                    _without(p, lambda s: "sqs:SendMessage" in str(s["Action"]))
                    for p in failure.identity_policies
                ],
            ),
            "ImplicitlyDenied",
        ),
        (
            replace(bucket, name="plain HTTP", context={"aws:SecureTransport": "false"}),
            "ExplicitlyDenied",
        ),
    ]


def test_every_request_aws_makes_for_the_app_is_allowed(
    requests: dict[str, list[Request]],
) -> None:
    everything = [r for kind in requests.values() for r in kind]
    negatives = _negatives(requests)
    results = simulate(everything + [n for n, _ in negatives])
    denied = {r.name: results[r.name] for r in everything if results[r.name] != ALLOWED}
    assert denied == {}
    assert {n.name: results[n.name] for n, _ in negatives} == {n.name: e for n, e in negatives}


def test_the_requests_cover_every_alarm_schedule_subscription_and_destination(
    requests: dict[str, list[Request]],
) -> None:
    # Two alarms publish (and encrypt) by themselves: the notifier's failure and refused-events
    # alarms, to the critical topic. The GPU alarms have no action; the notifier pages for them.
    publishes = [r for r in requests["alarms"] if r.action == "sns:Publish"]
    assert sorted(r.name.split(" ")[0][:17] for r in publishes) == [
        "XidNotifierFailin",
        "XidNotifierRefuse",
    ]
    assert "TopicsCritical" in publishes[0].name
    assert len(requests["alarms"]) == 3 * len(publishes)
    # The weekly report's and the silence check's schedules invoke their functions, the
    # notifier's rule takes this app's alarm state changes, and the storage and training
    # schedules start their Distributed Maps, each of which invokes its own function.
    assert len([r for r in requests["invocations"] if "events" in r.principal]) == 3
    assert any(
        r.name.startswith("XidNotifierAlarmStateChanges") and "xidnotifier" in r.resource.lower()
        for r in requests["invocations"]
    )
    assert any(
        r.name.startswith("SilenceCheckSchedule") and "silencecheck" in r.resource.lower()
        for r in requests["invocations"]
    )
    assert sorted(r.action for r in requests["machines"]) == [
        "lambda:InvokeFunction",
        "lambda:InvokeFunction",
        "states:StartExecution",
        "states:StartExecution",
    ]
    invoked = {r.name.split(" ")[0][:13]: r.resource for r in requests["machines"]}
    assert "storageanalyzer" in invoked["StorageFleetS"].lower()
    assert "traininganalyzer" in invoked["TrainingFleet"].lower()
    # The exporter's log group and, with xid_host_log_filter, the host log group.
    assert len([r for r in requests["invocations"] if "logs" in r.principal]) == 2
    assert len(requests["failures"]) == 4  # three analyzers' destinations, the notifier's DLQ
    on_bucket = {r.name.split(" ")[0] for r in requests["roles"] if r.action.startswith("s3:")}
    assert len(on_bucket) == 3  # storage, training, weekly report
    # Every topic a function publishes to: the report topic and both alarm topics.
    published = {r.name.rsplit("(", 1)[1] for r in requests["roles"] if r.action == "sns:Publish"}
    assert {p.rstrip(")")[:-8] for p in published} == {
        "ReportTopic",
        "TopicsCritical",
        "TopicsWarning",
    }
    names = [r.name for kind in requests.values() for r in kind]
    assert len(names) == len(set(names))


def test_training_role_may_run_its_logs_insights_query(deployed: list[Deployed]) -> None:
    """StartQuery is authorized on the log group as AWS evaluates it, an ARN below
    ``log-group:NAME`` (the denial in aws/aws-sdk-js#3022 names
    ``...:log-group:<name>:log-stream:``), so the policy must say ``log-group:NAME:*``.
    GetQueryResults and StopQuery carry only a query id; "*" is the one resource that
    authorizes them however AWS scopes them (the Service Authorization Reference lists
    StopQuery with no resource type)."""
    ((stack, role),) = [
        (s, logical_id)
        for s in deployed
        for logical_id, _ in s.of_type("AWS::IAM::Role")
        if logical_id.startswith("TrainingAnalyzerRole")
    ]
    group = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/gpu-insights/train-prod/training"
    base = Request(
        name="",
        principal=stack.resolve.arn(role),
        action="logs:StartQuery",
        resource=f"{group}:log-stream:",
        account_id=ACCOUNT,
        identity_policies=_identity_policies(stack, role),
    )
    results = simulate(
        [
            replace(base, name="start"),
            replace(base, name="results", action="logs:GetQueryResults", resource=f"{group}:*"),
            replace(base, name="other group", resource=group.replace("training", "x") + ":*"),
        ]
    )
    assert results == {"start": ALLOWED, "results": ALLOWED, "other group": "ImplicitlyDenied"}


def test_training_role_may_read_its_clusters_container_insights_logs_only(
    deployed: list[Deployed],
) -> None:
    """A failed job's pods' and nodes' logs (lambdas/training_analyzer/failure_logs.py):
    DescribeLogStreams and GetLogEvents on this cluster's Container Insights groups, as the
    group's ARN, with its ``:*`` suffix, or below it (how AccessDenied messages name a logs
    resource, aws/aws-sdk-js#3022); not another cluster's whose name starts with this one's,
    and no other log action there."""
    ((stack, role),) = [
        (s, logical_id)
        for s in deployed
        for logical_id, _ in s.of_type("AWS::IAM::Role")
        if logical_id.startswith("TrainingAnalyzerRole")
    ]
    groups = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/containerinsights"
    base = Request(
        name="",
        principal=stack.resolve.arn(role),
        action="logs:GetLogEvents",
        resource="",
        account_id=ACCOUNT,
        identity_policies=_identity_policies(stack, role),
    )
    # GetLogEvents is authorized on a log stream's ARN (its resource type is log-stream).
    stream = ":log-stream:ip-10-0-1-23.ec2.internal.host.dmesg"
    allowed = [
        replace(base, name=f"{action} {kind}{suffix}", action=f"logs:{action}",
                resource=f"{groups}/train-prod/{kind}{suffix}")
        for action, suffixes in (("DescribeLogStreams", ("", ":*", ":log-stream:")),
                                 ("GetLogEvents", (stream,)))
        for kind in ("application", "host", "dataplane")
        for suffix in suffixes
    ]  # fmt: skip
    denied = [
        replace(base, name="other cluster", resource=f"{groups}/train-prod-eu/host{stream}"),
        replace(base, name="write", action="logs:PutLogEvents",
                resource=f"{groups}/train-prod/host:log-stream:x"),
    ]  # fmt: skip
    results = simulate([*allowed, *denied])
    assert {r.name: results[r.name] for r in allowed} == {r.name: ALLOWED for r in allowed}
    assert (results["other cluster"], results["write"]) == ("ImplicitlyDenied",) * 2


def test_training_role_gets_404_for_a_day_without_storage_findings(
    deployed: list[Deployed],
) -> None:
    """The training analyzer reads the day's storage findings, which may not exist yet; S3
    answers 404 rather than 403 only to a caller that may ListBucket the bucket
    (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html, Permissions)."""
    ((stack, role),) = [
        (s, logical_id)
        for s in deployed
        for logical_id, _ in s.of_type("AWS::IAM::Role")
        if logical_id.startswith("TrainingAnalyzerRole")
    ]
    (bucket,) = [
        logical_id
        for logical_id, _ in stack.of_type("AWS::S3::Bucket")
        if logical_id.startswith("ReportBucket") and "Logs" not in logical_id
    ]
    key = "findings/cluster=train-prod/date=2026-11-30/storage.jsonl"
    base = Request(
        name="",
        principal=stack.resolve.arn(role),
        action="s3:ListBucket",
        resource=stack.resolve.arn(bucket),
        account_id=ACCOUNT,
        context={"s3:prefix": key},
        identity_policies=_identity_policies(stack, role),
    )
    results = simulate(
        [
            replace(base, name="storage findings"),
            replace(base, name="other bucket", resource="arn:aws:s3:::another-teams-bucket"),
        ]
    )
    assert results == {"storage findings": ALLOWED, "other bucket": "ImplicitlyDenied"}


def _role_named(stacks: list[Deployed], prefix: str) -> tuple[Deployed, str]:
    ((stack, role),) = [
        (s, logical_id)
        for s in stacks
        for logical_id, _ in s.of_type("AWS::IAM::Role")
        if logical_id.startswith(prefix)
    ]
    return stack, role


def test_the_agent_may_put_metric_data_to_container_insights_only(
    deployed: list[Deployed],
) -> None:
    """The agent's PutMetricData carries a cloudwatch:namespace condition (PutMetricData's
    condition key, Service Authorization Reference): Container Insights' namespace is
    allowed, any other denied, so a pod with the agent's role cannot forge GpuInsights'
    alarmed series."""
    stack, role = _role_named(deployed, "ContainerInsightsAgentIdentityRole")
    base = Request(
        name="",
        principal=stack.resolve.arn(role),
        action="cloudwatch:PutMetricData",
        resource="*",
        account_id=ACCOUNT,
        identity_policies=_identity_policies(stack, role),
    )
    results = simulate(
        [
            replace(base, name=ns, context={"cloudwatch:namespace": ns})
            for ns in ("ContainerInsights", "GpuInsights", "GpuInsights/Training", "AWS/EC2")
        ]
    )
    assert results == {
        "ContainerInsights": ALLOWED,
        "GpuInsights": "ImplicitlyDenied",
        "GpuInsights/Training": "ImplicitlyDenied",
        "AWS/EC2": "ImplicitlyDenied",
    }


def test_the_topic_key_lets_cloudwatch_encrypt_for_this_accounts_alarms_only(
    deployed: list[Deployed],
) -> None:
    """The key statement for cloudwatch.amazonaws.com holds aws:SourceAccount: the failure
    alarm of this account may encrypt for its topic; the same request from an alarm of
    another account is denied (the confused deputy,
    https://docs.aws.amazon.com/IAM/latest/UserGuide/confused-deputy.html)."""
    # The critical topic's alarms (notifier-failing, notifier-refused) send the same request.
    request, *_ = [
        r
        for r in alarm_requests(deployed)
        if r.action == "kms:GenerateDataKey" and "TopicsCritical" in r.name
    ]
    other = "210987654321"
    forged = replace(
        request,
        name="other account",
        context={
            **request.context,
            "aws:SourceAccount": other,
            "aws:SourceArn": request.context["aws:SourceArn"].replace(ACCOUNT, other),
        },
    )
    results = simulate([request, forged])
    assert results == {request.name: ALLOWED, "other account": "ImplicitlyDenied"}


def test_the_report_reads_the_alarm_history_of_this_deployments_alarms_only(
    deployed: list[Deployed],
) -> None:
    """DescribeAlarmHistory is authorized on the alarm (Service Authorization Reference,
    Amazon CloudWatch, resource type ``alarm``): the report's role reads this deployment's
    alarms, a sharded kind's shards included, and not the alarms of cluster train-prod-eu,
    whose names start with this cluster's and a hyphen, nor any other of the Region's."""
    stack, role = _role_named(deployed, "WeeklyReportRole")
    alarms = f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:gpu-insights-"
    base = Request(
        name="",
        principal=stack.resolve.arn(role),
        action="cloudwatch:DescribeAlarmHistory",
        resource="",
        account_id=ACCOUNT,
        identity_policies=_identity_policies(stack, role),
    )
    names = {
        "gpu-lost": "train-prod-gpu-lost",
        "job shard": "train-prod-job-hung-shard-07",
        "silent": "train-prod-gpu-silent",
        "other cluster": "train-prod-eu-gpu-lost",
        "other cluster's shard": "train-prod-eu-job-hung-shard-07",
        "someone else's": "x",
        "a name past this one's": "train-prod-gpu-lost-canary",
    }
    results = simulate(
        [replace(base, name=name, resource=f"{alarms}{alarm}") for name, alarm in names.items()]
    )
    assert results == {
        "gpu-lost": ALLOWED,
        "job shard": ALLOWED,
        "silent": ALLOWED,
        "other cluster": "ImplicitlyDenied",
        "other cluster's shard": "ImplicitlyDenied",
        "someone else's": "ImplicitlyDenied",
        "a name past this one's": "ImplicitlyDenied",
    }
