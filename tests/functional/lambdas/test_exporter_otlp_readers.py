"""The analyzers and the weekly report where the exporter sends OTLP (exporter_sink=otlp): its
series are in CloudWatch's OTLP store only, with no ``GpuInsights`` metric, and each reader
reads them with PromQL, on a real PromQL engine (Debian's Prometheus, tests/prometheus.py),
each query sent as CloudWatch gets it (its label names translated for the engine by
``cli.demo.promql.answering``) through the client the handlers build (``promql_for``).

Two hours of a small cluster, labelled as the exporter labels its OTLP series (DCGM's label
names: lambdas/shared/dcgm.py): node A's GPU 0 busy (two pods in turn), its GPU 1 quiet, then
lost; node B's GPU 0 without SM activity (no GPM), not in use; another cluster's GPU on a node of
the same name, never read. Its XID counters: code 79 born on A/0 in the week, code 13 on B/0
counting since before the week.
"""

from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any, Final

import boto3
import pytest

from cli.demo.promql import answering
from gpu_insights_agent.contract.metrics import ExporterSink, GpuMetric
from lambdas.shared.dcgm import CLOUDWATCH as L
from lambdas.shared.promql import promql_for
from lambdas.training_analyzer.aws import gpu_hours_promql
from lambdas.training_analyzer.config import TrainingConfig
from lambdas.training_analyzer.gpu_hours.attribution import GpuHour, GpuKey
from lambdas.training_analyzer.gpu_hours.otel import exporter_gpu_hours_promql, observe_otel
from lambdas.training_analyzer.handler import exporter_promql
from lambdas.weekly_report.aws import gpu_days_promql, xid_counts_promql
from lambdas.weekly_report.config import ReportConfig
from lambdas.weekly_report.handler import exporter_days, exporter_xids
from tests.prometheus import Sample, serve, write_openmetrics

pytestmark = pytest.mark.promql_engine

REGION: Final = "us-east-1"
CLUSTER: Final = "train"
#: A node name with the dots a regular expression would read as any character.
A: Final = "ip-10-0-0-1.ec2.internal"
B: Final = "ip-10-0-0-2.ec2.internal"
#: The report's week (Monday to Monday) and the two hours of data, on its Tuesday.
WEEK: Final = (date(2026, 11, 16), date(2026, 11, 23))
MONDAY: Final = datetime(2026, 11, 16, tzinfo=UTC).timestamp()
TEN: Final = datetime(2026, 11, 17, 10, tzinfo=UTC).timestamp()
ELEVEN: Final = TEN + 3600
NOON: Final = TEN + 7200
STEP: Final = 60


def _gpu(node: str, gpu: int, pod: str | None = None, cluster: str = CLUSTER) -> dict[str, str]:
    labels = {L.cluster: cluster, L.node: node, L.gpu: str(gpu), L.device: f"nvidia{gpu}"}
    if pod is not None:
        labels |= {L.namespace: "ml", L.pod: pod}
    return labels


def _every(first: float, last: float) -> Iterator[float]:
    at = first
    while at < last:
        yield at
        at += STEP


def _cluster() -> Iterator[Sample]:
    g = GpuMetric
    for at in _every(TEN, NOON):
        busy = _gpu(A, 0, pod="train-0" if at < ELEVEN else "train-1")
        yield from (
            (str(g.POWER_UTILIZATION), busy, at, 80),
            (str(g.ALLOCATED_POWER_UTILIZATION), busy, at, 80),
            (str(g.SM_ACTIVE), busy, at, 60),
            (str(g.HEALTHY), busy, at, 1),
        )
        quiet = _gpu(A, 1)
        if at < ELEVEN:
            yield from (
                (str(g.POWER_UTILIZATION), quiet, at, 20),
                (str(g.ALLOCATED_POWER_UTILIZATION), quiet, at, 20),
                (str(g.SM_ACTIVE), quiet, at, 10),
                (str(g.HEALTHY), quiet, at, 1),
            )
        else:  # lost: only gpu_healthy, at 0
            yield (str(g.HEALTHY), quiet, at, 0)
        no_gpm = _gpu(B, 0)
        yield (str(g.POWER_UTILIZATION), no_gpm, at, 50)
        yield (str(g.HEALTHY), no_gpm, at, 1)
        elsewhere = _gpu(A, 0, cluster="other")
        yield (str(g.POWER_UTILIZATION), elsewhere, at, 99)
        yield (str(g.SM_ACTIVE), elsewhere, at, 99)
        yield (str(g.HEALTHY), elsewhere, at, 1)
    # Code 79 on A/0: born at 10:30 (1), a second at 11:30 (2), sent every cycle from birth.
    for at in _every(TEN + 1800, NOON):
        xid = _gpu(A, 0, pod="train-0" if at < ELEVEN else "train-1") | {L.xid_code: "79"}
        yield (str(g.XID_ERRORS), xid, at, 1 if at < ELEVEN + 1800 else 2)
    # Code 13 on B/0: 5 since before the week (its last hour before it, every 10 minutes, a
    # few blocks for the engine), sent every cycle; a sixth at 10:05.
    thirteen = _gpu(B, 0) | {L.xid_code: "13"}
    for at in _every(MONDAY - 3600, TEN):
        if at % 600 == 0:
            yield (str(g.XID_ERRORS), thirteen, at, 5 if at < TEN + 300 else 6)
    for at in _every(TEN, NOON):
        yield (str(g.XID_ERRORS), thirteen, at, 5 if at < TEN + 300 else 6)


@pytest.fixture(scope="module")
def cloudwatch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A CloudWatch client whose PromQL requests the local engine answers."""
    folder = tmp_path_factory.mktemp("otlp-readers")
    write_openmetrics(folder / "cluster.om", _cluster())
    session = boto3.Session(region_name=REGION, aws_access_key_id="t", aws_secret_access_key="t")
    with serve(folder / "cluster.om", folder / "data") as url, answering(REGION, url):
        yield session.client("cloudwatch")


def test_the_weekly_report_reads_the_clusters_power_sm_and_gpu_hours_with_promql(
    cloudwatch: Any,
) -> None:
    days = gpu_days_promql(promql_for(cloudwatch), CLUSTER, *WEEK, interval_s=STEP)
    tuesday = days[1]
    assert tuesday.day == date(2026, 11, 17)
    # Power samples: A/0 120, A/1 60, B/0 120 -> 300 of 60 s = 5 GPU-hours; the other
    # cluster's never. The mean of every sample, not of the GPUs' means.
    assert tuesday.sampled_gpu_hours == pytest.approx(5.0)
    assert tuesday.power_utilization == pytest.approx((120 * 80 + 60 * 20 + 120 * 50) / 300)
    # SM: only the GPUs that have it (B/0 has no GPM).
    assert tuesday.sm_active == pytest.approx((120 * 60 + 60 * 10) / 180)
    quiet = [d for d in days if d.day != tuesday.day]
    assert [(d.sampled_gpu_hours, d.power_utilization, d.sm_active) for d in quiet] == [
        (0.0, None, None)
    ] * 6


def test_the_weekly_report_counts_each_xid_once_from_the_counters(cloudwatch: Any) -> None:
    # 79 born in the week and stepping once more: 2. 13 counted 5 before the week: 1 in it.
    assert xid_counts_promql(promql_for(cloudwatch), CLUSTER, *WEEK) == [
        (A, "79", 2.0),
        (B, "13", 1.0),
    ]


def test_the_weekly_reports_setting_says_which_store_it_reads(cloudwatch: Any) -> None:
    otlp = ReportConfig(
        cluster_name=CLUSTER, report_bucket="b", topic_arn="t", exporter_sink=ExporterSink.OTLP
    )
    assert exporter_days(otlp, cloudwatch, *WEEK)[1].power_utilization == pytest.approx(56.0)
    assert [(n, c) for n, c, _ in exporter_xids(otlp, cloudwatch, *WEEK)] == [(A, "79"), (B, "13")]


def test_the_training_analyzer_reads_its_nodes_gpus_hour_by_hour_with_promql(
    cloudwatch: Any,
) -> None:
    found = gpu_hours_promql(promql_for(cloudwatch), CLUSTER, [A], start=TEN, end=NOON)
    # Node A only (B not asked for), each GPU's mean of the hour (power: its allocated
    # reading, sent while it is in use), the other cluster's never.
    assert found == {
        (A, "0", "power"): {TEN: 80.0, ELEVEN: 80.0},
        (A, "0", "sm"): {TEN: 60.0, ELEVEN: 60.0},
        (A, "1", "power"): {TEN: 20.0},
        (A, "1", "sm"): {TEN: 10.0},
    }


def test_the_gpu_hour_attribution_reads_the_exporters_gpu_hours_with_promql(
    cloudwatch: Any,
) -> None:
    hours = exporter_gpu_hours_promql(promql_for(cloudwatch), CLUSTER, start=TEN, end=NOON)
    t, e = int(TEN), int(ELEVEN)
    assert hours == [
        GpuHour(gpu=GpuKey(A, "0"), hour=t, power_utilization=80, sm_active=60, in_use=True),
        GpuHour(gpu=GpuKey(A, "0"), hour=e, power_utilization=80, sm_active=60, in_use=True),
        GpuHour(gpu=GpuKey(A, "1"), hour=t, power_utilization=20, sm_active=10, in_use=True),
        GpuHour(gpu=GpuKey(A, "1"), hour=e, faulted=True),
        GpuHour(gpu=GpuKey(B, "0"), hour=t, power_utilization=50),
        GpuHour(gpu=GpuKey(B, "0"), hour=e, power_utilization=50),
    ]
    # With the OTLP sink, no GpuInsights read at all: no CloudWatch client is needed.
    observed = observe_otel(
        None, promql_for(cloudwatch), CLUSTER, start=TEN, end=NOON, exporter_otlp=True
    )
    assert observed.gpu_hours == hours


def test_the_training_analyzers_setting_says_which_store_it_reads(cloudwatch: Any) -> None:
    def config(sink: ExporterSink) -> TrainingConfig:
        return TrainingConfig(cluster_name=CLUSTER, report_bucket="b", exporter_sink=sink)

    assert exporter_promql(config(ExporterSink.EMF), lambda _: cloudwatch) is None
    client = exporter_promql(config(ExporterSink.OTLP), lambda _: cloudwatch)
    assert client is not None
    assert client.endpoint == f"https://monitoring.{REGION}.amazonaws.com"
