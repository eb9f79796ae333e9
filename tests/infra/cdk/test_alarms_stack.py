import json
from typing import Any

from aws_cdk import Stack
from aws_cdk.assertions import Template
from cfnlint.api import lint

from tests.infra.conftest import Synth

PROD = {
    "cluster_name": "train-prod",
    "account": "123456789012",
    "region": "eu-west-1",
    "alarm_emails": "oncall@example.com",
    "alarm_https_endpoints": "https://events.pagerduty.example/integration/abc",
    "warning_emails": "gpu-team@example.com",
    "xid_host_log_filter": "true",
}


def _alarms_stack(synth: Synth, context: dict[str, Any]) -> Stack:
    (stack,) = [s for s in synth(context) if s.stack_name.endswith("-Alarms")]
    return stack


def _template(synth: Synth, context: dict[str, Any] = PROD) -> Template:
    return Template.from_stack(_alarms_stack(synth, context))


def _topic_ids(template: Template) -> dict[str, str]:
    topics = template.find_resources("AWS::SNS::Topic")
    return {
        props["Properties"]["TopicName"].rsplit("-", 1)[1]: tid for tid, props in topics.items()
    }


def _alarms(template: Template) -> dict[str, dict[str, Any]]:
    return {
        a["Properties"]["AlarmName"].removeprefix("gpu-insights-train-prod-"): a["Properties"]
        for a in template.find_resources("AWS::CloudWatch::Alarm").values()
    }


def test_each_alarm_has_its_metric_threshold_periods_and_action(synth: Synth) -> None:
    template = _template(synth)
    topics = _topic_ids(template)
    alarms = _alarms(template)
    fatal = alarms["gpu-xid-fatal"]
    assert fatal["Namespace"] == "GpuInsights"
    assert fatal["MetricName"] == "gpu_xid_fatal_errors"
    assert fatal["Dimensions"] == [{"Name": "ClusterName", "Value": "train-prod"}]
    assert (fatal["Statistic"], fatal["Period"], fatal["Threshold"]) == ("Sum", 60, 1)
    assert (fatal["EvaluationPeriods"], fatal["DatapointsToAlarm"]) == (1, 1)
    assert fatal["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert fatal["TreatMissingData"] == "notBreaching"
    # The alarm's action is the critical topic's ARN (Ref of an SNS topic is its ARN).
    assert fatal["AlarmActions"] == [{"Ref": topics["critical"]}]
    low = alarms["gpu-low-power"]
    (query,) = low["Metrics"]
    assert query["Expression"].startswith("SELECT MAX(gpu_allocated_power_utilization)")
    assert "GROUP BY ClusterName, NodeName, GpuIndex ORDER BY MAX() ASC" in query["Expression"]
    assert "LIMIT" not in query["Expression"]
    assert (query["Period"], low["Threshold"], low["EvaluationPeriods"]) == (300, 30, 12)
    assert low["ComparisonOperator"] == "LessThanThreshold"
    assert low["AlarmActions"] == [{"Ref": topics["warning"]}]
    xid = alarms["gpu-xid"]
    assert [m["Id"] for m in xid["Metrics"]] == ["m1", "m2", "e1"]
    assert xid["Metrics"][2]["Expression"] == "m1 - FILL(m2, 0)"
    host = alarms["gpu-xid-host-log"]
    assert host["Namespace"] == "GpuInsights/HostLogs/train-prod"


def test_no_alarm_names_a_node_or_an_instance(synth: Synth) -> None:
    text = json.dumps(_template(synth).find_resources("AWS::CloudWatch::Alarm"))
    for dimension in ('"NodeName", "Value"', "InstanceId", '"GpuIndex", "Value"'):
        assert dimension not in text


def test_composite_sums_up_every_gpu_alarm(synth: Synth) -> None:
    template = _template(synth)
    (composite,) = template.find_resources("AWS::CloudWatch::CompositeAlarm").values()
    rule = composite["Properties"]["AlarmRule"]
    for name in _alarms(template):
        assert f'ALARM("gpu-insights-train-prod-{name}")' in rule
    assert rule.count(" OR ") == len(_alarms(template)) - 1


def test_topics_are_encrypted_refuse_plain_http_and_subscribe_the_settings(synth: Synth) -> None:
    template = _template(synth)
    (key_id, key), = template.find_resources("AWS::KMS::Key").items()  # fmt: skip
    assert key["Properties"]["EnableKeyRotation"] is True
    statements = key["Properties"]["KeyPolicy"]["Statement"]
    cloudwatch = next(s for s in statements if s.get("Sid") == "CloudWatchAlarmsPublish")
    assert cloudwatch["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    for topic in template.find_resources("AWS::SNS::Topic").values():
        assert topic["Properties"]["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    for policy in template.find_resources("AWS::SNS::TopicPolicy").values():
        deny, allow = policy["Properties"]["PolicyDocument"]["Statement"]
        assert deny["Effect"] == "Deny"
        assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        # A topic policy replaces SNS's default one: CloudWatch needs its own Allow, for this
        # account's alarms only (the full evaluation is in tests/infra/test_resource_policies).
        assert allow["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
        assert allow["Action"] == "sns:Publish"
        assert allow["Condition"]["StringEquals"] == {"aws:SourceAccount": "123456789012"}
        assert json.dumps(allow["Condition"]["ArnLike"]).endswith(
            ':cloudwatch:eu-west-1:123456789012:alarm:*"]]}}'
        )
    endpoints = {
        (s["Properties"]["Protocol"], s["Properties"]["Endpoint"])
        for s in template.find_resources("AWS::SNS::Subscription").values()
    }
    assert endpoints == {
        ("email", "oncall@example.com"),
        ("https", "https://events.pagerduty.example/integration/abc"),
        ("email", "gpu-team@example.com"),
    }


def test_xid_notifier_reads_both_log_groups_and_is_least_privilege(synth: Synth) -> None:
    template = _template(synth)
    filters = template.find_resources("AWS::Logs::SubscriptionFilter")
    patterns = sorted(f["Properties"]["FilterPattern"] for f in filters.values())
    assert patterns == ['"NVRM: Xid"', '{ $.XidCode = "*" }']
    metric_filter = next(iter(template.find_resources("AWS::Logs::MetricFilter").values()))
    assert metric_filter["Properties"]["LogGroupName"] == "/aws/containerinsights/train-prod/host"
    for policy in template.find_resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = (
                statement["Action"]
                if isinstance(statement["Action"], list)
                else [statement["Action"]]
            )
            assert all("*" not in action for action in actions), actions
    (function,) = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Handler": "lambdas.xid_notifier.handler.handler"}},
    ).values()
    assert "DeadLetterConfig" in function["Properties"]
    retention = {
        g["Properties"].get("LogGroupName", "function"): g["Properties"]["RetentionInDays"]
        for g in template.find_resources("AWS::Logs::LogGroup").values()
    }
    assert retention == {"function": 30}  # the exporter's group: see test_agent_log_group


def test_container_insights_only_cluster_alarms_on_pod_power_in_watts(synth: Synth) -> None:
    context = {**PROD, "exporter_enabled": "false", "gpu_instance_type": "p4d.24xlarge"}
    alarms = _alarms(_template(synth, context))
    assert set(alarms) == {"gpu-low-power", "gpu-xid-host-log"}
    low = alarms["gpu-low-power"]
    assert low["Threshold"] == 120  # 30% of the A100's 400 W
    assert "pod_gpu_power_draw" in low["Metrics"][0]["Expression"]


def test_cfn_lint_passes_on_the_alarms_stack(synth: Synth) -> None:
    template = json.dumps(_template(synth).to_json())
    matches = lint(template, regions=["eu-west-1"])
    assert [str(m) for m in matches if m.rule.id.startswith("E")] == []


def test_five_dashboards_are_deployed_with_the_alarms_on_them(synth: Synth) -> None:
    dashboards = _template(synth).find_resources("AWS::CloudWatch::Dashboard")
    names = sorted(d["Properties"]["DashboardName"] for d in dashboards.values())
    assert names == [
        f"gpu-insights-train-prod-{n}"
        for n in ("findings", "gpu-fleet", "gpu-node", "storage", "training")
    ]
    findings = next(
        d for d in dashboards.values() if d["Properties"]["DashboardName"].endswith("findings")
    )
    body = json.dumps(findings["Properties"]["DashboardBody"])
    assert body.count("Fn::GetAtt") == len(_alarms(_template(synth)))  # every alarm's ARN
