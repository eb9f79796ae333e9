"""The whole app synthesized as `cdk synth` runs it (tests/unit/cdk/test_app.py: a process of
its own, context in ``CDK_CONTEXT_JSON``)."""

from pathlib import Path

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
