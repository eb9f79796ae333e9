"""The app as `cdk synth` runs it: cdk.json's ``app`` command (``python3 -m cdk.app``) in a
process of its own, with the context in ``CDK_CONTEXT_JSON`` and the output folder in
``CDK_OUTDIR`` (aws-cdk-lib cx-api/lib/cxapi.ts, ``CONTEXT_ENV`` and ``OUTDIR_ENV``). A setting
that is not one, or a missing cluster name, stops it before any template is written, in one
line and exit status 2."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cdk.app import CONTEXT_ENV, CONTEXT_OVERFLOW_LOCATION_ENV, cli_context, sink_default_warning
from cdk.settings import settings_from_context

ROOT = Path(__file__).resolve().parents[3]
#: What the CDK CLI adds to the project's context on every synth (aws/aws-cdk-cli,
#: toolkit-lib api/cloud-assembly/environment.ts ``contextFromSettings``), and feature flags
#: as `cdk init` writes them into cdk.json.
CLI_CONTEXT: dict[str, Any] = {
    "aws:cdk:enable-path-metadata": True,
    "aws:cdk:enable-asset-metadata": True,
    "aws:cdk:version-reporting": True,
    "aws:cdk:bundling-stacks": ["**"],
    "@aws-cdk/core:newStyleStackSynthesis": True,
    "@aws-cdk/aws-lambda:recognizeLayerVersion": True,
}


def cdk_app(
    context: dict[str, Any], outdir: Path, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the app the way the CDK CLI runs cdk.json's ``app`` command."""
    assert json.loads((ROOT / "cdk.json").read_text())["app"] == "python3 -m cdk.app"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "CDK_CONTEXT_JSON": json.dumps(context),
        "CDK_OUTDIR": str(outdir),
        "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION": "1",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        **(extra_env or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "cdk.app"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(
    ("context", "said"),
    [
        (
            {"cluster": "ml-prod", "sns_topic_arn": "arn:aws:sns:us-west-2:123456789012:oncall"},
            "gpu-insights: unknown setting 'cluster': did you mean 'cluster_name'?",
        ),
        (
            {"cluster_name": "ml-prod", "sns_topic_arn": "arn:aws:sns:us-west-2:1:oncall"},
            "gpu-insights: unknown setting 'sns_topic_arn': did you mean 'critical_topic_arn'?",
        ),
        (
            {"region": "us-west-2"},
            "gpu-insights: setting cluster_name is missing: name the EKS cluster to instrument "
            'with -c cluster_name=NAME or "cluster_name" in cdk.json\'s "context"',
        ),
    ],
    ids=["typo", "not-a-setting", "no-cluster"],
)
def test_synth_stops_in_one_line_before_writing_anything(
    context: dict[str, Any], said: str, tmp_path: Path
) -> None:
    outdir = tmp_path / "cdk.out"
    result = cdk_app({**CLI_CONTEXT, **context}, outdir)
    assert result.returncode == 2
    assert result.stderr == f"{said}\n"
    assert not outdir.exists() or not list(outdir.glob("*.template.json"))


def test_the_context_is_read_as_the_app_reads_it_the_overflow_file_over_the_variable(
    tmp_path: Path,
) -> None:
    overflow = tmp_path / "context.json"
    overflow.write_text(json.dumps({"cluster_name": "ml-prod", "lookback_days": 30}))
    environ = {
        CONTEXT_ENV: json.dumps({"cluster_name": "ml-dev", "region": "us-west-2"}),
        CONTEXT_OVERFLOW_LOCATION_ENV: str(overflow),
    }
    assert cli_context(environ) == {
        "cluster_name": "ml-prod",
        "region": "us-west-2",
        "lookback_days": 30,
    }
    assert cli_context({}) == {}


def test_a_setting_in_the_overflow_file_is_refused_like_one_in_the_variable(
    tmp_path: Path,
) -> None:
    overflow = tmp_path / "context.json"
    overflow.write_text(json.dumps({"cluster": "ml-prod"}))
    outdir = tmp_path / "cdk.out"
    result = cdk_app(CLI_CONTEXT, outdir, {CONTEXT_OVERFLOW_LOCATION_ENV: str(overflow)})
    assert result.returncode == 2
    assert (
        result.stderr == "gpu-insights: unknown setting 'cluster': did you mean 'cluster_name'?\n"
    )
    assert not outdir.exists() or not list(outdir.glob("*.template.json"))


def test_an_old_pinned_add_on_s_emf_default_is_said_at_synth() -> None:
    """An add-on pinned before the OTLP endpoint makes OTel mode's unset sink EMF: synth says so,
    with the version that would take OTLP; nothing is said where OTLP is the default or in
    Classic (build() adds it only while exporter_sink is unset in the context)."""
    base = {"cluster_name": "ml-prod", "region": "us-east-1"}
    old = settings_from_context({**base, "addon_version": "v7.0.0-eksbuild.1"})
    assert old.exporter_sink == "emf"
    said = sink_default_warning(old)
    assert said is not None
    assert "addon_version=v7.0.0-eksbuild.1 predates the add-on's OTLP endpoint" in said
    assert "v8.0.0-eksbuild.1 or later" in said
    assert "-c exporter_sink=emf" in said
    assert sink_default_warning(settings_from_context(base)) is None
    newer = settings_from_context({**base, "addon_version": "v8.0.0-eksbuild.1"})
    assert sink_default_warning(newer) is None
    classic = settings_from_context({**base, "container_insights_mode": "classic"})
    assert sink_default_warning(classic) is None


def test_synth_with_a_python_without_the_project_says_how_to_run_it_in_one_line(
    tmp_path: Path,
) -> None:
    """cdk.json's ``python3`` outside .venv once ended in a ``No module named
    'gpu_insights_agent'`` traceback. ``-S`` leaves out site-packages, where the project is
    installed: the Python a shell without .venv activated finds."""
    result = subprocess.run(
        [sys.executable, "-S", "-m", "cdk.app"],
        cwd=ROOT,
        env={**os.environ, "CDK_OUTDIR": str(tmp_path / "cdk.out")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert "no module 'gpu_insights_agent'" in line
    assert line.endswith(
        "run `make install`, then `source .venv/bin/activate` and `cdk synth` again (cdk.json "
        "runs `python3 -m cdk.app` with the first python3 on PATH)"
    )
