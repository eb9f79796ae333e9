"""The training analyzer's two readers of the same jobs: the demo's five jobs, two ranks each,
run through the real emitter (cli/demo/training.py), once as EMF (moto's CloudWatch and the
training log group, the EMF path's reads: aws.py) and once as the OTLP gauges the emitter
sends in their place (emitter/otlp.py ``training_points``), labelled as CloudWatch's PromQL
labels them ("@resource." before a resource attribute, a datapoint attribute bare: "PromQL
querying", https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-PromQL-Querying.html)
and served by a real PromQL engine (tests/prometheus.py; CloudWatch's label names translated
on the way by ``cli.demo.promql.answering``). Both give the same jobs, ranks, findings and
costs."""

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cli.demo.promql import answering
from cli.demo.storage import END
from cli.demo.training import (
    BATCH,
    CLUSTER,
    JOBS,
    RANKS,
    Collect,
    rank_query_results,
    seed,
    simulate,
)
from lambdas.shared.aws_clients import client
from lambdas.shared.events import analysis_window
from lambdas.shared.promql import PromQLClient, endpoint_for
from lambdas.training_analyzer.gpu_hours.stepping import stepping_hours, stepping_hours_promql
from lambdas.training_analyzer.run import TrainingRun, analyze_training, plan_jobs
from lambdas.weekly_report.aws import throughput_by_job, throughput_by_job_promql
from tests.prometheus import emitter_openmetrics, serve

pytestmark = pytest.mark.promql_engine

REGION = "us-east-1"
PRICE = 6.88
#: The demo's one-day lookback; its day before holds the jobs' earlier runs (the baselines).
START, STOP = analysis_window(END, 1)


@pytest.fixture(scope="module")
def promql(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromQLClient]:
    sink = Collect()
    for job in JOBS:
        for rank in range(RANKS):
            simulate(job, rank, sink)
    folder = tmp_path_factory.mktemp("emitter-otlp")
    emitter_openmetrics(folder / "jobs.om", sink.documents, "ml")
    with serve(folder / "jobs.om", folder / "data") as url, answering(REGION, url):
        yield PromQLClient(endpoint=endpoint_for(REGION), region=REGION, credentials=None)


@pytest.fixture
def emf() -> Iterator[dict[str, Any]]:
    with mock_aws():
        session = boto3.Session(
            region_name=REGION, aws_access_key_id="t", aws_secret_access_key="t"
        )
        clients = {s: client(s, session=session) for s in ("cloudwatch", "logs")}
        seed(clients)
        rank_query_results(clients["logs"])
        yield clients


def _said(run: TrainingRun) -> str:
    return json.dumps(
        {
            "findings": [f.to_dict() for f in run.findings],
            "costs": {job: vars(cost) for job, cost in sorted(run.costs.items())},
            "failures": [f.to_json() for f in run.failures],
            "skipped": run.skipped,
        },
        sort_keys=True,
        default=str,
    )


def test_both_readers_plan_the_same_jobs_ranks_and_pods(
    promql: PromQLClient, emf: dict[str, Any]
) -> None:
    classic, otlp = TrainingRun(), TrainingRun()
    jobs, ranks = plan_jobs(emf["cloudwatch"], emf["logs"], CLUSTER, START, STOP, classic)
    jobs_p, ranks_p = plan_jobs(
        emf["cloudwatch"], emf["logs"], CLUSTER, START, STOP, otlp, emitter_promql=promql
    )
    assert jobs_p == jobs == sorted(j.name for j in JOBS)
    assert sorted(ranks_p) == sorted(ranks)
    for job, stats in ranks.items():
        by_rank = {r.rank: r for r in ranks_p[job]}
        assert sorted(by_rank) == sorted(r.rank for r in stats) == ["0", "1"]
        for r in stats:
            p = by_rank[r.rank]
            assert (p.steps, p.node, p.pod) == (r.steps, r.node, r.pod)
            # Weighted by each hour's steps, not each flush's (promql_jobs.py): a checkpoint's
            # or a run's last, shorter flush weighs its hour's mean by a hair (0.01% here).
            assert p.mean_step_time == pytest.approx(r.mean_step_time, rel=1e-3)
    assert otlp.pods == classic.pods
    assert otlp.pod_nodes == classic.pod_nodes
    assert len(otlp.pods) == len(JOBS) * RANKS
    assert classic.skipped == otlp.skipped == []


def test_both_readers_find_the_same_for_the_same_jobs(
    promql: PromQLClient, emf: dict[str, Any]
) -> None:
    def run(emitter_promql: PromQLClient | None) -> TrainingRun:
        return analyze_training(
            cloudwatch=emf["cloudwatch"], logs=emf["logs"], cluster=CLUSTER, start=START,
            end=STOP, gpu_hour_usd=PRICE, emitter_promql=emitter_promql,
        )  # fmt: skip

    classic = run(None)
    before = promql.requests
    otlp = run(promql)
    assert _said(otlp) == _said(classic)
    kinds = sorted((f.resource, f.kind) for f in otlp.findings)
    assert kinds == [
        ("job/bert-data-bound", "training_data_bound"),
        ("job/bert-data-bound", "training_low_goodput"),
        ("job/gpt-regressing", "training_throughput_regression"),
        ("job/llama-slow-checkpoint", "training_low_goodput"),
        ("job/llama-slow-checkpoint", "training_slow_checkpoint"),
        ("job/vit-flaky", "training_failure_cause"),
        ("job/vit-flaky", "training_job_failures"),
        ("job/vit-flaky", "training_low_goodput"),
    ]
    # Each job's goodput, the same from both readers; vit-flaky's second run resumed from
    # its checkpoint an hour in and redid the steps after it.
    for job, g in classic.goodput.items():
        assert otlp.goodput[job].split.gpu_hours() == pytest.approx(g.split.gpu_hours())
    goodput = {j: round(g.goodput or 0, 3) for j, g in classic.goodput.items()}
    assert goodput == {
        "bert-data-bound": 0.597,
        "gpt-regressing": 0.954,
        "llama-slow-checkpoint": 0.770,
        "resnet-healthy": 0.945,
        "vit-flaky": 0.790,
    }
    assert classic.goodput["vit-flaky"].steps_redone == pytest.approx(1780)
    # A one-day window: each read is one page. Listing (2 metrics), ranks (3: steps, step
    # time, work seconds), the series (18 JOB_METRICS) and the baseline (2) for the five jobs
    # in one batch.
    assert promql.requests - before == 2 + 3 + 18 + 2


def test_both_readers_give_the_gpu_hour_attribution_the_same_stepping_hours(
    promql: PromQLClient, emf: dict[str, Any]
) -> None:
    """The hours each job stepped in, which class its pods' GPU-hours as working whatever
    they drew (gpu_hours/stepping.py): from ``GpuInsights/Training`` and from the OTLP
    gauges alike."""
    jobs = [j.name for j in JOBS]
    classic, failed = stepping_hours(emf["cloudwatch"], CLUSTER, jobs, start=START, end=STOP)
    otlp, failed_p = stepping_hours_promql(promql, CLUSTER, jobs, start=START, end=STOP)
    assert otlp == classic
    assert failed == failed_p == {}
    # The day's last eight hours of runs; vit-flaky's two runs, hours 0-3 and 4-7, leave two
    # hours without steps.
    assert len(otlp["resnet-healthy"]) == 8
    assert len(otlp["vit-flaky"]) == 6


def test_both_readers_give_the_weekly_report_the_same_daily_throughput(
    promql: PromQLClient, emf: dict[str, Any]
) -> None:
    """The report's throughput by job and day: each day's mean of every flush's
    ``samples_per_second``, CloudWatch's daily Average, from PromQL's hourly sums and counts."""
    end = datetime.fromtimestamp(END, UTC).date() + timedelta(days=1)
    start = end - timedelta(days=7)
    classic = throughput_by_job(emf["cloudwatch"], CLUSTER, start, end)
    otlp = throughput_by_job_promql(promql, CLUSTER, start, end)
    assert sorted(otlp) == sorted(classic) == sorted(j.name for j in JOBS)
    for job, days in classic.items():
        assert otlp[job] == pytest.approx(days, rel=1e-12), job
    assert classic["resnet-healthy"][:6] == [BATCH / 2.0] * 6  # 64 samples a 2 s step
