"""One day of serving inside the training analyzer's run: read the servers' series, price
them with the day's GPU-hour attribution (its ``workloads``, already computed: not read twice),
find, and each model's drift from its own past (drift/). OTel mode only: Classic Container
Insights drops the servers' histograms and this project collects no serving series there, so a
Classic run has no serving day (docs/analyzers.md)."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date

from botocore.exceptions import BotoCoreError, ClientError

from lambdas.shared.findings import AnalysisRun
from lambdas.shared.promql import PromQLClient, PromQLError
from lambdas.shared.serving_table import ServingRow
from lambdas.training_analyzer.gpu_hours.by_workload import WorkloadGpu
from lambdas.training_analyzer.gpu_hours.findings import ANALYZER
from lambdas.training_analyzer.serving.analysis import (
    ServingThresholds,
    serving_findings,
    serving_rows,
)
from lambdas.training_analyzer.serving.autoscaling import workload_hours
from lambdas.training_analyzer.serving.drift import drift_findings
from lambdas.training_analyzer.serving.drift.promql import read_drift
from lambdas.training_analyzer.serving.promql import read_serving


@dataclass
class ServingRun(AnalysisRun):
    analyzer: str = ANALYZER
    rows: list[ServingRow] = field(default_factory=list)
    #: False where the day could not be read (its skip says why): no table is written then,
    #: so the report says the day is missing rather than read it as a day of no serving.
    read: bool = False


def analyze_serving(
    promql: PromQLClient,
    cluster: str,
    *,
    start: float,
    end: float,
    day: date,
    workloads: Mapping[tuple[str, str], WorkloadGpu],
    gpu_hour_usd: float,
    thresholds: ServingThresholds = ServingThresholds(),  # noqa: B008
) -> ServingRun:
    run = ServingRun()
    try:
        reads = read_serving(promql, cluster, start=start, end=end)
    except (ClientError, BotoCoreError, PromQLError) as err:
        # Credentials, throttling or a query refused: the day is skipped and named; the
        # training findings already made are kept.
        run.skip(f"serving of {cluster}", err)
        return run
    run.read = True
    run.rows = serving_rows(reads, workloads, gpu_hour_usd)
    hours = workload_hours(reads.hourly_replicas, reads.hourly_kv_cache, reads.hourly_waiting)
    run.findings += serving_findings(
        run.rows, day=day, gpu_hour_usd=gpu_hour_usd, thresholds=thresholds, hours=hours
    )
    try:
        drift = read_drift(promql, cluster, start=start)
    except (ClientError, BotoCoreError, PromQLError) as err:
        # The drift reads alone are skipped and named; the day's table and findings stand.
        run.skip(f"serving drift of {cluster}", err)
    else:
        run.findings += drift_findings(drift, day)
    return run
