"""OTel mode's PromQL widgets run against a real PromQL engine (Debian's Prometheus,
tests/prometheus.py) by the dashboard evaluator, over DCGM's series labelled as the realistic
model labels them (cli/demo/realistic/otel.py):

- the demo's week as OTel Container Insights sends it (cli/demo/otel.py,
  its GPU utilization, and each held GPU's framebuffer memory, ``MEMORY_GIB``, in MiB as DCGM
  sends it): the node dashboard draws each reporting GPU of the node picked, with the day's
  figures the model gives, and no line for the GPU lost that week;
- the dashboard tests' fleet (tests/unit/dashboards/fleet_history.py) as DCGM series: the
  same answers as Classic's Metrics Insights widgets give over its node_gpu_* (the hot GPU
  leads "hottest" at 91 C), GPUs named by DCGM's index where Classic names the device;
- a fleet whose hottest GPUs change every five minutes: the widget still draws ten lines,
  where a ``topk`` ranked at every step draws every GPU that was ever in the ten.

Label names are stored as Prometheus 2 takes them (``legacy_labels``); the bodies are built
with those names, as with CloudWatch's in the deployed app."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.backtest.dashboards import PromQLSource, WidgetView, evaluate_body, index
from cli.demo.otel import PHASE_S, week_samples
from cli.demo.realistic import otel
from cli.demo.week import (
    FAILING,
    HOURS,
    NODES,
    THIS_WEEK,
    _behaviour,
)
from dashboards import bodies
from dashboards.bodies import all_dashboards
from dashboards.promql import RANK_WINDOW_S
from dashboards.sources import reading
from dashboards.widgets import chart_queries
from gpu_insights_agent.contract.metrics import CI_NODE_GPU_METRICS, GpuMetric
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.shared.promql import PromQLClient, duration
from tests.prometheus import Sample, legacy_labels, serve, write_openmetrics
from tests.unit.dashboards.fleet_history import fleet

pytestmark = pytest.mark.promql_engine

WEEK_CLUSTER = "train"
FLEET_CLUSTER = "fleet"
MOVING_CLUSTER = "moving"
INTERVAL = 300
END = int(THIS_WEEK.start) + HOURS * 3600
DAY = 86_400
OTEL = ContainerInsightsMode.OTEL
LABELS = legacy_labels()
VISION, _, RESEARCH = NODES
MIB = 2**20


def _fleet_samples(nodes: int) -> Iterator[Sample]:
    """The dashboard tests' fleet's Container Insights readings as DCGM's series over the
    day, one sample every five minutes (Classic's node_gpu_* values, memory in MiB)."""
    by_name = {name: metric for metric, name in CI_NODE_GPU_METRICS.items()}
    for s in fleet(nodes):
        # Per GPU only: a node's GPU counts (node_gpu_limit, node_gpu_usage_total) have no DCGM
        # twin (OTel mode reads Kube State Metrics' capacity: dashboards/funnel.py).
        if s.namespace != "ContainerInsights" or s.metric not in by_name:
            continue
        dims = dict(s.dimensions)
        metric = by_name[s.metric]
        where = reading(metric, OTEL)
        gpu = int(dims["GpuDevice"].removeprefix("nvidia"))
        labels = otel.dcgm_promql_labels(FLEET_CLUSTER, dims["NodeName"], gpu)
        for i in range(DAY // INTERVAL + 1):
            yield where.name, labels, END - DAY + PHASE_S + i * INTERVAL, s.value / where.scale


#: GPUs of the moving fleet, and the steps it reports in (the last two hours).
MOVING_GPUS = 40
MOVING_STEPS = 24


def _moving_samples() -> Iterator[Sample]:
    """40 GPUs over the last two hours, GPU g at 50 C plus g/10 and, at the g-th five-minute
    step, 40 C more: each step's ten hottest are that step's GPU and nine of 31-39; the day's
    ten hottest are the ten hottest of the GPUs that peaked, 14-23."""
    name = reading(GpuMetric.TEMPERATURE, OTEL).name
    for step in range(MOVING_STEPS):
        at = END - (MOVING_STEPS - step) * INTERVAL + PHASE_S
        for gpu in range(MOVING_GPUS):
            labels = otel.dcgm_promql_labels(MOVING_CLUSTER, f"node-{gpu // 8}", gpu % 8)
            labels["gpu"] = str(gpu)  # one index a GPU, to tell them apart
            yield name, labels, at, 50 + gpu / 10 + (40 if gpu == step else 0)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromQLSource]:
    folder: Path = tmp_path_factory.mktemp("otel-dashboards")

    def every() -> Iterator[Sample]:
        # The week's DCGM series, each held GPU's framebuffer memory (MiB) among them.
        yield from week_samples(WEEK_CLUSTER, interval=INTERVAL)
        yield from _fleet_samples(3)
        yield from _moving_samples()

    write_openmetrics(folder / "series.om", every())
    with serve(folder / "series.om", folder / "data") as url:
        client = PromQLClient(endpoint=url, region="us-east-1", credentials=None)
        yield PromQLSource(client, END)


def _views(
    cluster: str, engine: PromQLSource | None, node: str, samples: Any = ()
) -> dict[str, WidgetView]:
    mode = OTEL if engine is not None else ContainerInsightsMode.CLASSIC
    shown = {}
    for name, body in all_dashboards(
        cluster, [], [], "us-east-1", mode=mode, dcgm_labels=LABELS
    ).items():
        for view in evaluate_body(body, samples, {"node": node, "job": "j"}, engine):
            shown[f"{name.removeprefix(f'gpu-insights-{cluster}-')}: {view.title}"] = view
    return shown


def _lines(view: WidgetView) -> list[tuple[str, float]]:
    return [(line.label, line.value) for line in view.lines]


def _expected(node: str, gpu: int, value: Any) -> float | None:
    """The mean the widget draws for a GPU of the week: at each five-minute step of the day
    its [5m] window holds the one sample taken 285 s before, from the model's hour."""
    seen = []
    for t in range(END - DAY + INTERVAL, END + 1, INTERVAL):
        hour = int((t - (INTERVAL - PHASE_S) - THIS_WEEK.start) // 3600)
        s = _behaviour(node, gpu, hour)
        if s.power is not None and (found := value(s)) is not None:
            seen.append(found)
    return sum(seen) / len(seen) if seen else None


def test_the_node_dashboard_draws_the_weeks_gpus_by_promql(engine: PromQLSource) -> None:
    """The vision node's two GPUs at the job's 86% all day, each with its 52 GiB, and its six
    GPUs no pod asked for idle (no framebuffer line: no pod's memory); the research node's
    notebook GPU (35% in working hours), the nightly evaluation's GPU (idle but for its run at
    02:00), its five idle GPUs and no line for the GPU lost on day 5."""
    vision = _views(WEEK_CLUSTER, engine, VISION)
    assert _lines(vision["gpu-node: GPU utilization (%)"]) == [
        ("0", 86.0),
        ("1", 86.0),
        *((str(gpu), 0.0) for gpu in range(2, 8)),
    ]
    assert _lines(vision["gpu-node: Memory used (bytes)"]) == [
        ("0", 52 * 2**30),
        ("1", 52 * 2**30),
    ]
    research = _views(WEEK_CLUSTER, engine, RESEARCH)
    utilization = _lines(research["gpu-node: GPU utilization (%)"])
    # The lost GPU 2 draws nothing.
    assert [label for label, _ in utilization] == ["0", "1", "3", "4", "5", "6", "7"]
    assert FAILING == (RESEARCH, 2)
    for label, value in utilization:
        assert value == pytest.approx(_expected(RESEARCH, int(label), lambda s: s.sm or 0.0))
    assert utilization[0][1] == pytest.approx(35 * 9 / 24)  # 9 working hours of 24
    assert utilization[1][1] == pytest.approx(60 / 24)  # its hour at 02:00
    memory = dict(_lines(research["gpu-node: Memory used (bytes)"]))
    assert memory == {"0": 9 * 2**30, "1": 12 * 2**30}  # the notebook; the nightly run
    # The model holds no temperature: the widget is drawn empty, not refused.
    assert research["gpu-node: Temperature (C)"].lines == []
    # The exporter's widgets read the exporter's metrics (none here): unchanged by the mode.
    assert research["gpu-node: Power against the limit (%)"].lines == []


def test_promql_widgets_answer_as_classics_metrics_insights_twins(engine: PromQLSource) -> None:
    """The fleet's hottest GPU leads both modes' "hottest" at 91 C, and the node widgets draw
    the same GPUs with the same values; Classic names a GPU's device, DCGM its index."""
    classic = _views("train", None, "node-0", index(fleet(3)))
    otel_views = _views(FLEET_CLUSTER, engine, "node-0")
    switched = [
        f"gpu-fleet: {bodies.OUTLIER_HOT}",
        "gpu-node: GPU utilization (%)",
        "gpu-node: Temperature (C)",
        "gpu-node: Memory used (bytes)",
    ]
    for title in switched:
        was = [(label.replace("nvidia", ""), v) for label, v in _lines(classic[title])]
        now = _lines(otel_views[title])
        assert [v for _, v in now] == pytest.approx([v for _, v in was], rel=1e-5), title
        # The same GPUs, but for which of those tied at the cut each engine keeps.
        cut = was[-1][1] if len(was) == bodies.OUTLIERS else float("-inf")
        assert {k for k, v in now if v > cut} == {k for k, v in was if v > cut}, title
    assert _lines(otel_views[f"gpu-fleet: {bodies.OUTLIER_HOT}"])[0] == ("node-0 2", 91.0)
    assert len(otel_views[f"gpu-fleet: {bodies.OUTLIER_HOT}"].lines) == bodies.OUTLIERS
    assert len(otel_views["gpu-node: Temperature (C)"].lines) == 7  # the lost GPU has none


def test_a_widget_draws_its_ten_however_the_ranking_moves(engine: PromQLSource) -> None:
    """Over two hours in which 24 GPUs each have their turn at the top, the widget draws the
    day's ten hottest, as its twin's ORDER BY MAX() ranks them; the same query ranked at every
    step draws every GPU that was ever in a step's ten: 33."""
    view = _views(MOVING_CLUSTER, engine, "node-0")[f"gpu-fleet: {bodies.OUTLIER_HOT}"]
    assert sorted(int(line.label.split()[1]) for line in view.lines) == list(range(14, 24))
    body = all_dashboards(MOVING_CLUSTER, [], [], "us-east-1", mode=OTEL, dcgm_labels=LABELS)
    query = next(
        chart_queries(w)[0]["query"]
        for w in body[f"gpu-insights-{MOVING_CLUSTER}-gpu-fleet"]["widgets"]
        if w["properties"].get("title") == bodies.OUTLIER_HOT
    )
    ranked = f"[{duration(RANK_WINDOW_S)}] @ end()"
    assert query.count(ranked) == 1
    every_step = query.replace(ranked, "[5m]")  # each step's ten, at the widget's period
    first = END - DAY + INTERVAL
    found = engine.client.query_range(every_step, first, END, INTERVAL, lookback_s=INTERVAL)
    assert len(found) == 24 + 9
