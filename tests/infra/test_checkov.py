"""checkov's CloudFormation checks pass on every synthesized template, nested stacks included,
for the default shape and the all-options shape. A finding is fixed in the construct or
skipped in the resource's metadata with its reason (cdk/constructs/checkov.py).

checkov pins boto3 and botocore to old versions, so it lives in its own virtual environment
(``make install`` creates ``.venv/checkov``) and runs once per cloud assembly directory.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import Stage

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


def run_checkov(directory: str) -> list[dict[str, Any]]:
    result = subprocess.run(
        [
            *(checkov_binary(), "-d", directory, "--framework", "cloudformation"),
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


@pytest.mark.slow
@pytest.mark.parametrize(
    "context",
    [{"cluster_name": "train"}, FULL, OTEL_PROMQL],
    ids=["default", "all-options", "otel-promql-alarms"],
)
def test_checkov_passes_on_every_template(synth: Synth, context: dict[str, str]) -> None:
    stacks = synth(context)
    (report,) = run_checkov(str(Stage.of(stacks[0]).outdir))  # type: ignore[union-attr]
    failed = [
        f"{check['check_id']} {check['resource']} ({check['check_name']})"
        for check in report["results"]["failed_checks"]
    ]
    assert failed == []
    summary = report["summary"]
    assert summary["parsing_errors"] == 0
    assert summary["passed"] > 100
    assert summary["skipped"] == len(report["results"]["skipped_checks"]) > 0
    # Each skip carries its reason from the construct that made the choice.
    assert all(
        check["check_result"]["suppress_comment"] for check in report["results"]["skipped_checks"]
    )
