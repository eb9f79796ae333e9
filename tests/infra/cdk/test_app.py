"""The whole app synthesized as `cdk synth` runs it (tests/unit/cdk/test_app.py: a process of
its own, context in ``CDK_CONTEXT_JSON``)."""

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from aws_cdk import App
from aws_cdk.assertions import Annotations, Match

from cdk.app import build
from cdk.deploy_region import MODE_KEY
from cdk.settings import Settings, settings_from_context
from tests.unit.cdk.test_app import CLI_CONTEXT, cdk_app


def test_synth_as_the_cdk_cli_runs_it_names_the_stacks_for_the_cluster(tmp_path: Path) -> None:
    """With CDK's own context keys beside the settings (the CLI's, feature flags, `cdk
    acknowledge`'s), synth succeeds, and every stack is the named cluster's."""
    context = {**CLI_CONTEXT, "cluster_name": "ml-prod", "acknowledged-issue-numbers": [34892]}
    result = cdk_app(context, tmp_path / "cdk.out")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "cdk.out").glob("*.template.json")) == [
        f"GpuInsights-ml-prod-{part}.template.json"
        for part in ("Alarms", "Analyzers", "Observability")
    ]
    # The CLI prints an entry's first trace frame above its warning: from Python, a frame of
    # the jsii kernel's lib/program.js, so the app records none.
    entries = [
        entry
        for stack_file in (tmp_path / "cdk.out").glob("*.metadata.json")
        for path_entries in json.loads(stack_file.read_text()).values()
        for entry in path_entries
    ]
    assert any(entry["type"] == "aws:cdk:warning" for entry in entries)
    assert not [e for e in entries if e["type"] == "aws:cdk:warning" and "trace" in e]


def _warnings(context: dict[str, Any]) -> list[str]:
    app = App(context=context)
    stacks = build(app, settings_from_context(context))
    app.synth()
    found = Annotations.from_stack(stacks[0]).find_warning("*", Match.any_value())
    return [str(w.entry.data) for w in found]


def test_synth_says_so_when_the_container_insights_mode_is_left_to_its_default() -> None:
    """OTel is the default; a deployment made when Classic was would switch its add-on."""
    assert MODE_KEY in {f.name for f in fields(Settings)}
    (said,) = [w for w in _warnings({"cluster_name": "ml-prod"}) if MODE_KEY in w]
    assert f"-c {MODE_KEY}=classic to keep Classic" in said
    for mode in ("otel", "classic"):
        assert not [
            w for w in _warnings({"cluster_name": "ml-prod", MODE_KEY: mode}) if MODE_KEY in w
        ]
    # In a Region AWS does not offer OTel Container Insights in, the unset mode is Classic,
    # and synth says why (OTEL_REGIONS); set to otel there, synth refuses it in one line.
    frankfurt = {"cluster_name": "ml-prod", "region": "eu-central-1"}
    (said,) = [w for w in _warnings(frankfurt) if MODE_KEY in w]
    assert "configured for Classic Container Insights" in said
    assert "does not offer OTel Container Insights in eu-central-1" in said
    assert settings_from_context(frankfurt).container_insights_mode == "classic"
    (said,) = [w for w in _warnings({**frankfurt, "region": "eu-west-1"}) if MODE_KEY in w]
    assert "configured for OTel Container Insights" in said
    # The add-on managed elsewhere: the deploy switches nothing.
    elsewhere = {"cluster_name": "ml-prod", "install_addon": "false"}
    assert not [w for w in _warnings(elsewhere) if MODE_KEY in w]
