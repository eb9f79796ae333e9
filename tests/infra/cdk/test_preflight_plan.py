"""Preflight checks what the synthesized app creates: these tests hold its plan (log group
names, Metrics Insights alarms, image architectures, kubectl version) to the templates."""

import json
from pathlib import Path
from typing import Any

from aws_cdk import App, Stack
from aws_cdk.assertions import Template

from cdk.settings import settings_from_context
from cli.preflight.checks import EXPORTER_IMAGE_ARCHITECTURES, KUBECTL_MINOR, plan_for
from tests.infra.conftest import Synth, stack_named

#: The EMF sink: its Metrics Insights alarms are what preflight counts against the quota (OTel
#: mode's default sink, OTLP, makes none: every alarm is PromQL).
PROD = {
    "cluster_name": "train-prod",
    "account": "123456789012",
    "region": "eu-west-1",
    "exporter_sink": "emf",
}
KUBECTL = {**PROD, "kubectl_role_arn": "arn:aws:iam::123456789012:role/eks-admin"}


def _resources(stacks: list[Stack], kind: str) -> list[dict[str, Any]]:
    return [
        r.get("Properties", {})
        for s in stacks
        for r in Template.from_stack(s).find_resources(kind).values()
    ]


def test_the_fixed_log_group_names_are_those_preflight_checks(synth: Synth) -> None:
    for context in (PROD, {**PROD, "xid_host_log_filter": "true"}):
        stacks = synth(context)
        # No log group is created by a fixed name with AWS::Logs::LogGroup ("already exists");
        # the agent's groups are made by the idempotent CreateLogGroup custom resource.
        assert not [
            p
            for p in _resources(stacks, "AWS::Logs::LogGroup")
            if isinstance(p.get("LogGroupName"), str)
        ]
        created = {
            json.loads(_joined(p["Create"]))["parameters"]["logGroupName"]
            for p in _resources(stacks, "Custom::AWS")
            if '"CreateLogGroup"' in _joined(p["Create"])
        }
        assert created == set(plan_for(settings_from_context(context)).fixed_log_groups)


def _joined(value: Any) -> str:
    """An AwsCustomResource's Create property: a string, or an Fn::Join of strings."""
    if isinstance(value, str):
        return value
    return "".join(p if isinstance(p, str) else "" for p in value["Fn::Join"][1])


def test_the_metrics_insights_alarms_are_those_preflight_counts(synth: Synth) -> None:
    insights = {
        p["AlarmName"]
        for p in _resources(synth(PROD), "AWS::CloudWatch::Alarm")
        if any("SELECT " in m.get("Expression", "") for m in p.get("Metrics", []))
    }
    assert insights == set(plan_for(settings_from_context(PROD)).insights_alarms)
    # Five per-GPU kinds at one shard and gpu-silent; six job kinds in eight job shards; the
    # fleet count alarm of each of those twelve kinds.
    assert len(insights) == 6 + 48 + 12


def test_the_exporter_image_is_built_for_the_architectures_preflight_assumes(
    synth: Synth,
) -> None:
    stack = stack_named(synth(PROD), "-Observability")
    assets = Path(App.of(stack).outdir) / f"{stack.artifact_id}.assets.json"  # type: ignore[union-attr]
    images = json.loads(assets.read_text())["dockerImages"].values()
    platforms = {image["source"]["platform"] for image in images}
    assert platforms == {f"linux/{arch}" for arch in EXPORTER_IMAGE_ARCHITECTURES}


def test_cdks_kubectl_is_the_version_preflight_compares_with(synth: Synth) -> None:
    stack = stack_named(synth(KUBECTL), "-Observability")
    layers = {type(c).__name__ for c in stack.node.find_all() if "KubectlV" in type(c).__name__}
    assert layers == {f"KubectlV{KUBECTL_MINOR}Layer"}
