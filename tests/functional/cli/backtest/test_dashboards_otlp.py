"""OTel mode with the exporter's OTLP sink: the dashboards' exporter widgets are PromQL charts
over its series, run by the dashboard evaluator (cli/backtest/dashboards.py, whose rules
cli/backtest/promql_widgets.py holds them to) on a real PromQL engine (Debian's Prometheus,
tests/prometheus.py).

Two hours of four GPUs, labelled as the exporter labels its OTLP series (DCGM's label names:
lambdas/shared/dcgm.py, stored under Prometheus 2's legacy names): n1's two GPUs in use (pods
on them), n2's GPU 0 reporting but not in use, its GPU 1 lost. XID counters: code 79 born on
n1/0; code 48 on n2/0 counting 3 from before, a fourth later; code 13 on n2/0 at 4, then the
exporter restarts and counts one new XID.
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from cli.backtest.dashboards import PromQLSource, WidgetView, evaluate_body
from dashboards import bodies
from dashboards.bodies import all_dashboards
from gpu_insights_agent.contract.metrics import ExporterSink, GpuMetric
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.shared.promql import PromQLClient
from tests.prometheus import Sample, legacy_labels, serve, write_openmetrics

pytestmark = pytest.mark.promql_engine

CLUSTER: Final = "otlp"
L: Final = legacy_labels()
END: Final = 1_795_000_200  # a whole five minutes
STEP: Final = 60
#: (node, GPU) -> (power % of limit, SM %, healthy, pod holding it).
GPUS: Final = {
    ("n1", 0): (80.0, 50.0, 1, "train-0"),
    ("n1", 1): (40.0, 30.0, 1, "train-1"),
    ("n2", 0): (60.0, None, 1, None),
    ("n2", 1): (None, None, 0, None),
}


def _labels(node: str, gpu: int, pod: str | None = None) -> dict[str, str]:
    labels = {L.cluster: CLUSTER, L.node: node, L.gpu: str(gpu)}
    if pod is not None:
        labels |= {L.namespace: "ml", L.pod: pod}
    return labels


def _samples() -> Iterator[Sample]:
    g = GpuMetric
    for at in range(END - 7200, END, STEP):
        for (node, gpu), (power, sm, healthy, pod) in GPUS.items():
            labels = _labels(node, gpu, pod)
            yield (str(g.HEALTHY), labels, at, healthy)
            if power is not None:
                yield (str(g.POWER_UTILIZATION), labels, at, power)
            if sm is not None:
                yield (str(g.SM_ACTIVE), labels, at, sm)
            if pod is not None:
                yield (str(g.ALLOCATED_POWER_UTILIZATION), labels, at, power or 0.0)
        minutes = (END - at) / 60
        if minutes <= 90:  # born at its first XID
            yield (str(g.XID_ERRORS), _labels("n1", 0, "train-0") | {L.xid_code: "79"}, at, 1)
        yield (
            str(g.XID_ERRORS),
            _labels("n2", 0) | {L.xid_code: "48"},
            at,
            3 if minutes > 30 else 4,
        )
        thirteen = 4 if minutes > 10 else 1  # the exporter restarts, then one new XID
        yield (str(g.XID_ERRORS), _labels("n2", 0) | {L.xid_code: "13"}, at, thirteen)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromQLSource]:
    folder: Path = tmp_path_factory.mktemp("otlp-dashboards")
    write_openmetrics(folder / "series.om", _samples())
    with serve(folder / "series.om", folder / "data") as url:
        yield PromQLSource(PromQLClient(endpoint=url, region="us-east-1", credentials=None), END)


def _views(engine: PromQLSource, node: str = "n2") -> dict[str, WidgetView]:
    shown = {}
    for name, body in all_dashboards(
        CLUSTER,
        [],
        [],
        "us-east-1",
        mode=ContainerInsightsMode.OTEL,
        dcgm_labels=L,
        exporter_sink=ExporterSink.OTLP,
        exporter_interval_s=STEP,
    ).items():
        if name.endswith(("gpu-fleet", "gpu-node")):
            for view in evaluate_body(body, [], {"node": node, "job": "j"}, engine):
                shown[f"{name.removeprefix(f'gpu-insights-{CLUSTER}-')}: {view.title}"] = view
    return shown


def _lines(view: WidgetView) -> list[tuple[str, float]]:
    return [(line.label, round(line.value, 3)) for line in view.lines]


def test_the_fleets_counts_and_means_read_the_exporters_series(engine: PromQLSource) -> None:
    views = _views(engine)
    assert _lines(views[f"gpu-fleet: {bodies.COUNT_REPORTING}"]) == [("GPUs", 4.0)]
    assert _lines(views[f"gpu-fleet: {bodies.COUNT_IN_USE}"]) == [("GPUs", 2.0)]
    assert _lines(views[f"gpu-fleet: {bodies.COUNT_LOST}"]) == [("GPUs", 1.0)]
    # The mean over the GPUs that send it: n1/0, n1/1, n2/0 (the lost one sends only health).
    assert _lines(views[f"gpu-fleet: {bodies.FLEET_POWER}"]) == [("%", 60.0)]
    assert _lines(views[f"gpu-fleet: {bodies.FLEET_SM}"]) == [("%", 40.0)]
    # Pods changing nothing: one line a GPU in use, by node and GPU.
    low = _lines(views[f"gpu-fleet: {bodies.OUTLIER_LOW_POWER}"])
    assert sorted(low) == [("n1 0", 80.0), ("n1 1", 40.0)]


def test_the_xid_widgets_count_each_xid_once_from_the_counters(engine: PromQLSource) -> None:
    """Summed over the chart's five-minute steps: n1 counted its born counter's one XID; n2 a
    step of 48 (3 -> 4) and, after a restart, 13's new count (1), not 4 - 1."""
    views = _views(engine)
    fleet = views[f"gpu-fleet: {bodies.OUTLIER_XID_NODES}"]
    node = views["gpu-node: XID errors by GPU and code"]
    assert sorted(line.label for line in fleet.lines) == ["n1", "n2"]
    assert sorted(line.label for line in node.lines) == ["0 13", "0 48"]
    body = all_dashboards(
        CLUSTER, [], [], "us-east-1", mode=ContainerInsightsMode.OTEL, dcgm_labels=L,
        exporter_sink=ExporterSink.OTLP,
    )  # fmt: skip
    (widget,) = [
        w
        for b in body.values()
        for w in b["widgets"]
        if w["properties"].get("title") == bodies.OUTLIER_XID_NODES
    ]
    query = widget["properties"]["data"]["queries"][0]["query"]
    found = engine.client.query_range(query, END - 7200 + 300, END, 300, lookback_s=600)
    totals = {s.labels[L.node]: sum(v for _, v in s.points) for s in found}
    assert totals == {"n1": 1.0, "n2": 2.0}
