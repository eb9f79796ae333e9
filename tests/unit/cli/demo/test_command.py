"""The demo's summary says what the run wrote: as many dashboard bodies as its mode's app
deploys, counted from the files, not a number in a sentence."""

from pathlib import Path

import pytest

from cli.demo.command import DemoResult
from cli.demo.report import write_dashboards
from cli.demo.storage import BUCKETS, DEMO_CLUSTER
from gpu_insights_agent.contract.metrics import ExporterSink
from lambdas.shared.container_insights_mode import ContainerInsightsMode


@pytest.mark.parametrize(
    ("mode", "sink", "bodies"),
    [
        (ContainerInsightsMode.CLASSIC, ExporterSink.EMF, 6),
        (ContainerInsightsMode.OTEL, ExporterSink.OTLP, 8),
    ],
)
def test_step_8_counts_the_dashboard_bodies_it_wrote(
    tmp_path: Path, mode: ContainerInsightsMode, sink: ExporterSink, bodies: int
) -> None:
    written = write_dashboards(
        DEMO_CLUSTER, list(BUCKETS), [], tmp_path, mode=mode, exporter_sink=sink
    )
    assert len(written) == len(list((tmp_path / "dashboards").glob("*.json"))) == bodies
    result = DemoResult(
        out_dir=tmp_path,
        cdk_out=tmp_path / "cdk.out",
        report={"week": "2026-W49", "findings": 40, "malformed_finding_lines": 0},
        dashboards=written,
        mode=mode,
    )
    assert result.report_line.endswith(
        f"and wrote the {bodies} dashboard bodies the app deploys in {mode} mode."
    )
