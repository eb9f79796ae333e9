"""The GPU-hour attribution in OTel Container Insights mode, against a real PromQL engine
(Debian's Prometheus, tests/prometheus.py) holding the demo's week as the add-on sends it in
OTel mode (cli/demo/otel.py), and against moto holding the same week as Classic publishes it
(cli/demo/week.py): the two readers give the same holds, findings and GPU-hour tables, and the
OTel reader places every pod on its node and GPU exactly.

The week's DCGM series are written at a 300 s ``metricResolution`` (the chart takes any
"<N>s"; 30 s by default): a pod's share of an hour is its samples over a full hour's, so the
interval does not change a figure, and a tenth of the samples keeps the engine's block import
to seconds. Classic's week is read from moto through the demo's index of it
(cli/demo/indexed_cloudwatch.py: moto's answers, byte for byte, without its quadratic scans)."""

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cli.demo.indexed_cloudwatch import indexed_cloudwatch
from cli.demo.otel import week_samples
from cli.demo.week import (
    DAYS,
    FAILING,
    JOB_PODS,
    NODES,
    START,
    WeekSeeder,
)
from lambdas.shared.aws_clients import client
from lambdas.shared.promql import PromQLClient
from lambdas.training_analyzer.gpu_hours.attribution import (
    UNPLACED_NODE,
    Attribution,
    Hold,
    attribute,
)
from lambdas.training_analyzer.gpu_hours.aws import Observed, observe
from lambdas.training_analyzer.gpu_hours.findings import day_table, held_not_working
from lambdas.training_analyzer.gpu_hours.otel import observe_otel, read_holds
from lambdas.training_analyzer.gpu_hours.run import placed_nodes
from lambdas.training_analyzer.gpu_memory.analysis import (
    GpuMemory,
    judge_jobs,
    memory_findings,
)
from lambdas.training_analyzer.gpu_memory.aws import read_gpu_memory
from lambdas.training_analyzer.gpu_memory.otel import read_gpu_memory_otel
from tests.prometheus import legacy_labels, serve, write_openmetrics

pytestmark = pytest.mark.promql_engine

CLUSTER = "train"
DAY = 86_400
PRICE = 9.87
EXACT = {pod.name: job for job, pods in JOB_PODS.items() for pod in pods}


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromQLClient]:
    folder = tmp_path_factory.mktemp("otel-week")
    write_openmetrics(folder / "week.om", week_samples(CLUSTER, interval=300))
    with serve(folder / "week.om", folder / "data") as url:
        yield PromQLClient(endpoint=url, region="us-east-1", credentials=None)


@pytest.fixture(scope="module")
def classic_week() -> Iterator[Any]:
    with mock_aws(), indexed_cloudwatch():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        cw = client("cloudwatch", session=session)
        seeder = WeekSeeder(cw, CLUSTER)
        for _ in seeder:
            pass
        yield cw


def key(hold: Hold) -> tuple[str, str, int, str]:
    return hold.gpu.node, hold.gpu.gpu, hold.hour, hold.pod


def _days() -> list[tuple[float, float]]:
    return [(START + d * DAY, START + (d + 1) * DAY) for d in range(DAYS)]


def _attribute(observed: Observed) -> Attribution:
    return attribute(
        observed.gpu_hours, observed.holds, exact_jobs=EXACT, ci_node_hours=observed.ci_node_hours
    )


def _said(attribution: Attribution, start: float) -> str:
    findings = held_not_working(
        attribution, gpu_hour_usd=PRICE, window_hours=24, window_start=start
    )
    table = day_table(attribution, PRICE)
    return json.dumps({"table": table, "findings": [f.to_dict() for f in findings]}, sort_keys=True)


def test_both_readers_give_the_weeks_same_findings_and_tables(
    prometheus: PromQLClient, classic_week: Any
) -> None:
    requests = prometheus.requests
    findings = 0
    for start, end in _days():
        classic = observe(classic_week, CLUSTER, start=start, end=end)
        if start == START:  # the whole OTel read once (the exporter's hours from CloudWatch)
            otel = observe_otel(
                classic_week, prometheus, CLUSTER, start=start, end=end, labels=legacy_labels()
            )
        else:  # the same exporter hours as Classic's, read once
            holds, reported = read_holds(
                prometheus,
                CLUSTER,
                start=start,
                end=end,
                gpu_hours=classic.gpu_hours,
                labels=legacy_labels(),
            )
            otel = Observed(gpu_hours=classic.gpu_hours, holds=holds, ci_node_hours=reported)
        assert [(key(h), h.namespace, h.controller) for h in sorted(otel.holds, key=key)] == [
            (key(h), h.namespace, h.controller) for h in sorted(classic.holds, key=key)
        ]
        for a, b in zip(sorted(otel.holds, key=key), sorted(classic.holds, key=key), strict=True):
            assert a.share == pytest.approx(b.share)
            assert a.power_utilization == pytest.approx(b.power_utilization)
        assert otel.ci_node_hours == classic.ci_node_hours
        said = _said(_attribute(otel), start)
        assert said == _said(_attribute(classic), start)
        findings += len(json.loads(said)["findings"])
    # The notebook held overnight without work: findings the week has in both modes.
    assert findings > 0
    # Each day's reads: 1 node listing and 4 per node, each a 24-hour page.
    assert prometheus.requests - requests == DAYS * (1 + 4 * len(NODES))


def test_the_otel_reader_joins_every_pod_to_its_node_and_gpu_exactly(
    prometheus: PromQLClient,
) -> None:
    """Each pod's holds are on the node and GPU the week put it on: no power matching, no
    unplaced hold; the lost GPU, which sends nothing, is held by no one after it is lost."""
    start, end = START, START + DAYS * DAY
    holds, _ = read_holds(
        prometheus, CLUSTER, start=start, end=end, gpu_hours=(), labels=legacy_labels()
    )
    where = {
        (pod.namespace, pod.name): (node, gpu)
        for node, (_, _, _, held) in NODES.items()
        for gpu, pod in held.items()
    }
    assert holds
    assert all(h.gpu.node != UNPLACED_NODE for h in holds)
    for h in holds:
        if (h.namespace, h.pod) in where:
            assert (h.gpu.node, int(h.gpu.gpu)) == where[(h.namespace, h.pod)]
        else:  # the CronJob's nightly runs, on the research node's second GPU
            assert h.pod.startswith("nightly-eval-")
            assert (h.gpu.node, h.gpu.gpu) == ("ip-10-0-2-23.ec2.internal", "1")
    lost_node, lost_gpu = FAILING
    assert not [h for h in holds if (h.gpu.node, int(h.gpu.gpu)) == (lost_node, lost_gpu)]
    assert start < min(h.hour for h in holds) + 3600
    assert max(h.hour for h in holds) < end


def _memory(gpus: list[GpuMemory]) -> list[tuple[object, ...]]:
    return sorted(
        (g.namespace, g.job, g.pod, g.device, sorted(g.hourly_peaks), g.capacity_bytes)
        for g in gpus
    )


def test_both_memory_readers_give_the_weeks_same_gpus_and_findings(
    prometheus: PromQLClient, classic_week: Any
) -> None:
    """The week's GPU memory read from DCGM's framebuffer series (MiB) equals Classic's
    ``pod_gpu_memory_*`` (bytes); OTel names each device's model from its ``modelName``, Classic
    from the instance type of the node the attribution placed its pod on, and the two agree."""
    start, end = START, START + DAYS * DAY
    requests = prometheus.requests
    otel = read_gpu_memory_otel(
        prometheus, CLUSTER, start=start, end=end, exact_jobs=EXACT, labels=legacy_labels()
    )
    # A node listing, then two queries a node, each a day a page.
    assert prometheus.requests - requests == DAYS * (1 + 2 * len(NODES))
    holds, _ = read_holds(
        prometheus, CLUSTER, start=start, end=end, gpu_hours=(), labels=legacy_labels()
    )
    classic = read_gpu_memory(
        classic_week, CLUSTER, start=start, end=end, exact_jobs=EXACT, pod_nodes=placed_nodes(holds)
    )
    assert _memory(otel) == _memory(classic)
    assert {g.gpu_name for g in otel} == {"NVIDIA H100 80GB HBM3"}
    assert all(g.instance_type == "p5.48xlarge" for g in classic)
    judged = [
        judge_jobs(gpus, gpu_hour_usd=PRICE, window_hours=DAYS * 24) for gpus in (otel, classic)
    ]
    assert judged[0] == judged[1]
    # nlp's job fills 71 GiB of 79.65 (near capacity); the notebook's 9 GiB fits a 1g.10gb of
    # its H100 and the nightly runs' 12 GiB a 1g.20gb; vision's 52 GiB needs the whole GPU.
    assert {(j.job, str(j.verdict), j.profile, j.model) for j in judged[0]} == {
        ("bert-data-bound", "near capacity", None, "H100 80GB"),
        ("jupyter-alice", "oversized", "1g.10gb", "H100 80GB"),
        ("nightly-eval", "oversized", "1g.20gb", "H100 80GB"),
        ("resnet-healthy", "right-sized", None, "H100 80GB"),
    }
    said = [json.dumps([f.to_dict() for f in memory_findings(j)], sort_keys=True) for j in judged]
    assert said[0] == said[1]
