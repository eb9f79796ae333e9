"""checkov's CloudFormation checks pass on every synthesized template, nested stacks included,
for the default shape and the all-options shape. A finding is fixed in the construct or
skipped in the resource's metadata with its reason (cdk/constructs/checkov.py).

checkov pins boto3 and botocore to old versions, so it lives in its own virtual environment
(``make install`` creates ``.venv/checkov``). It runs once for the whole module, on the template
files of every shape's cloud assembly (its start-up and its walk through the asset folders cost
more than the checks), and each shape's test reads its own templates' results from that report.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import Stack, Stage

from tests.infra.conftest import Synth
from tests.infra.test_security_review import FULL

REPO = Path(__file__).resolve().parents[2]
#: OTel mode with the GPUs' power known: its low-power alarm is a PromQL alarm.
OTEL_PROMQL = {
    "cluster_name": "train",
    "container_insights_mode": "otel",
    "gpu_instance_type": "p5.48xlarge",
}


def checkov_binary() -> str:
    for candidate in (
        os.environ.get("CHECKOV"),
        str(REPO / ".venv" / "checkov" / "bin" / "checkov"),
        shutil.which("checkov"),
    ):
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.fail("checkov is not installed: run `make install` (it creates .venv/checkov)")


def run_checkov(templates: list[Path]) -> list[dict[str, Any]]:
    """One checkov run over the given template files (``-f`` each: the asset folders beside them
    hold no templates, and walking them with ``-d`` was a third of checkov's time)."""
    result = subprocess.run(
        [
            *(checkov_binary(), "--framework", "cloudformation"),
            *(arg for template in templates for arg in ("-f", str(template))),
            *("--output", "json", "--compact", "--skip-download"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "BC_SKIP_MAPPING": "TRUE", "CHECKOV_RUN_SCA_PACKAGE_SCAN_V2": ""},
    )
    assert result.stdout.strip(), result.stderr[-2000:]
    report = json.loads(result.stdout)
    return report if isinstance(report, list) else [report]


SHAPES = {
    "default": {"cluster_name": "train"},
    "all-options": FULL,
    "otel-promql-alarms": OTEL_PROMQL,
}


def templates_of(stacks: list[Stack]) -> list[Path]:
    """Every template file of the stacks' cloud assembly, nested stacks' included."""
    outdir = Path(Stage.of(stacks[0]).outdir)  # type: ignore[union-attr]
    return sorted(outdir.glob("*.template.json"))


@pytest.fixture(scope="module")
def checkov_report(synth: Synth) -> dict[str, Any]:
    """checkov's one report over every shape's templates."""
    (report,) = run_checkov(
        [t for context in SHAPES.values() for t in templates_of(synth(context))]
    )
    return report


def results_for(report: dict[str, Any], templates: list[Path]) -> dict[str, list[dict[str, Any]]]:
    """The report's results (passed, failed, skipped checks; parsing errors) on these templates."""
    paths = {str(template) for template in templates}
    return {
        "parsing_errors": [path for path in report["results"]["parsing_errors"] if path in paths],
        **{
            kind: [check for check in report["results"][kind] if check["file_abs_path"] in paths]
            for kind in ("passed_checks", "failed_checks", "skipped_checks")
        },
    }


@pytest.mark.slow
@pytest.mark.parametrize("shape", SHAPES)
def test_checkov_passes_on_every_template(
    synth: Synth, checkov_report: dict[str, Any], shape: str
) -> None:
    templates = templates_of(synth(SHAPES[shape]))
    results = results_for(checkov_report, templates)
    failed = [
        f"{check['check_id']} {check['resource']} ({check['check_name']})"
        for check in results["failed_checks"]
    ]
    assert failed == []
    assert results["parsing_errors"] == []
    # checkov read every template: each has checks that passed.
    assert {Path(check["file_abs_path"]) for check in results["passed_checks"]} == set(templates)
    assert len(results["passed_checks"]) > 100
    assert len(results["skipped_checks"]) > 0
    # Each skip carries its reason from the construct that made the choice.
    assert all(check["check_result"]["suppress_comment"] for check in results["skipped_checks"])
