"""``gpu-insights demo --mode otel``: the Classic run, then the OTel run on the same weeks, and
whether the two wrote the same findings and report (cli/demo/otel.py serves the OTel run); then
the alarm stage with the exporter's OTLP sink (cli/demo/otel_alarms.py): each planted fault paged
once by a PromQL alarm replayed on Prometheus."""

import filecmp
import tempfile
from pathlib import Path
from typing import Final

from moto import mock_aws

from cdk.settings import Settings
from cli.demo.command import DEMO_REGION, run_demo
from cli.demo.otel_alarms import otel_alarms_summary, run_otel_alarms
from cli.demo.storage import DEMO_CLUSTER
from lambdas.shared.aws_clients import new_session
from lambdas.shared.container_insights_mode import ContainerInsightsMode

#: What the two runs write that must be equal: the analyzers' findings, the weekly report
#: (its waste table and GPU-hour tables among them) in each of its forms.
COMPARED: Final = (
    "storage-findings.jsonl",
    "training-findings.jsonl",
    "report.json",
    "report.csv",
    "report.html",
    "failures.csv",
    "gpu-memory.csv",
)


def compare(classic: Path, otel_out: Path) -> list[tuple[str, bool]]:
    """Each compared file of the two runs, and whether they are byte for byte equal."""
    return [
        (name, filecmp.cmp(classic / name, otel_out / name, shallow=False)) for name in COMPARED
    ]


def run_both(*, out_dir: Path, cdk_out: Path) -> str:
    """The Classic run (in a folder of its own), then the OTel run into ``out_dir``: the OTel
    run's summary, and whether each compared file equals the Classic run's."""
    with tempfile.TemporaryDirectory(prefix="classic-") as classic:
        base = Path(classic)
        run_demo(out_dir=base / "out", cdk_out=base / "cdk.out")
        result = run_demo(out_dir=out_dir, cdk_out=cdk_out, mode=ContainerInsightsMode.OTEL)
        compared = compare(base / "out", out_dir)
    same = [name for name, equal in compared if equal]
    different = [name for name, equal in compared if not equal]
    line = (
        f"The OTel run's findings and report equal the Classic run's: {', '.join(same)}"
        if not different
        else f"The OTel run DIFFERS from the Classic run in: {', '.join(different)}"
    )
    with mock_aws():  # the alarm stage's notifier, topics and ledger: a moto of its own
        session = new_session(
            aws_access_key_id="demo", aws_secret_access_key="demo", region_name=DEMO_REGION
        )
        alarms = run_otel_alarms(session, Settings(cluster_name=DEMO_CLUSTER), DEMO_REGION, out_dir)
    return "\n".join([result.summary(), "", line, "", *otel_alarms_summary(alarms)])
