"""The log groups the CloudWatch agent writes to (the exporter's, training scripts') survive a
group that already exists: the agent creates a group on its first line, and a retained group
outlives ``cdk destroy``, while an AWS::Logs::LogGroup of an existing name fails the deploy
with "already exists"."""

import json
from typing import Any

from aws_cdk.assertions import Template

from gpu_insights_agent.contract.metrics import exporter_log_group, training_log_group
from tests.infra.conftest import Synth
from tests.infra.test_security_review import FULL


def _calls(template: dict[str, Any], logical_id: str) -> dict[str, Any]:
    props = template["Resources"][logical_id]["Properties"]
    return {
        event: json.loads(props[event] if isinstance(props[event], str) else _flat(props[event]))
        for event in ("Create", "Update")
        if event in props
    }


def _flat(value: Any) -> str:
    return "".join(p if isinstance(p, str) else "x" for p in value["Fn::Join"][1])


def test_agent_log_groups_are_made_idempotently_with_a_retention(synth: Synth) -> None:
    cluster = FULL["cluster_name"]
    templates = {s.stack_name: dict(Template.from_stack(s).to_json()) for s in synth(FULL)}
    agent_groups = {exporter_log_group(cluster), training_log_group(cluster)}
    fixed = {
        r["Properties"].get("LogGroupName")
        for t in templates.values()
        for r in t["Resources"].values()
        if r["Type"] == "AWS::Logs::LogGroup"
    }
    assert fixed & agent_groups == set()  # no stack creates them the way that collides
    made: dict[str, list[str]] = {}
    for stack_name, template in templates.items():
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] != "Custom::AWS":
                continue
            calls = _calls(template, logical_id)
            if calls["Create"]["service"] != "CloudWatchLogs":
                continue
            assert calls["Create"] == calls["Update"]  # a deleted group comes back on update
            group = calls["Create"]["parameters"]["logGroupName"]
            made.setdefault(group, []).append(stack_name.rsplit("-", 1)[1])
            if calls["Create"]["action"] == "CreateLogGroup":
                assert calls["Create"]["ignoreErrorCodesMatching"] == (
                    "ResourceAlreadyExistsException"
                )
            else:
                assert calls["Create"]["action"] == "PutRetentionPolicy"
                assert calls["Create"]["parameters"]["retentionInDays"] == 30
                assert len(resource["DependsOn"]) >= 1  # after the group exists
    assert made == {
        exporter_log_group(cluster): ["Alarms", "Alarms"],
        training_log_group(cluster): ["Analyzers", "Analyzers"],
    }


def test_the_xid_subscription_waits_for_the_exporter_log_group(synth: Synth) -> None:
    (alarms,) = [s for s in synth(FULL) if s.stack_name.endswith("-Alarms")]
    template = dict(Template.from_stack(alarms).to_json())
    (subscription,) = [
        r
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Logs::SubscriptionFilter"
        and r["Properties"]["LogGroupName"] == exporter_log_group(FULL["cluster_name"])
    ]
    depends = subscription.get("DependsOn", [])
    assert any(d.startswith("ExporterLogsRetention") for d in depends), depends
