"""What each widget shows, evaluated over a fleet's history as CloudWatch would evaluate its
queries: the idle GPU leads "lowest power in use", the hot one "hottest", the lost one is
counted, the data-bound job leads the data-wait view, and no widget draws more series as the
fleet grows from 8 GPUs to 8,000."""

from functools import cache

import pytest

from cli.backtest.dashboards import (
    WidgetEvaluationError,
    WidgetView,
    apply_variables,
    evaluate_body,
    index,
    math,
)
from dashboards import bodies
from dashboards.bodies import all_dashboards
from dashboards.funnel import FUNNEL_ACTIVE, FUNNEL_ALLOCATED, FUNNEL_PAID
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from tests.unit.dashboards.fleet_history import CLUSTER, fleet

CHOSEN = {"node": "node-0", "job": "job-0"}


@cache
def views(nodes: int) -> dict[str, WidgetView]:
    by_metric = index(fleet(nodes))
    shown: dict[str, WidgetView] = {}
    # Classic's bodies, evaluated on Classic's series (the PromQL widgets: test_demo.py's OTel
    # run, cli/backtest/promql_widgets.py).
    for name, body in all_dashboards(
        CLUSTER, ["b"], [], "us-east-1", exporter_interval_s=60, mode=ContainerInsightsMode.CLASSIC
    ).items():
        for view in evaluate_body(body, by_metric, CHOSEN):
            shown[f"{name.removeprefix('gpu-insights-train-')}: {view.title}"] = view
    return shown


def _top(view: WidgetView) -> tuple[str, float]:
    return view.lines[0].label, view.lines[0].value


def test_the_fleet_dashboard_answers_its_questions_at_8_gpus() -> None:
    v = views(1)
    assert _top(v[f"gpu-fleet: {bodies.COUNT_REPORTING}"])[1] == 8
    assert _top(v[f"gpu-fleet: {bodies.COUNT_IN_USE}"])[1] == 7
    assert _top(v[f"gpu-fleet: {bodies.COUNT_LOST}"])[1] == 1
    assert _top(v[f"gpu-fleet: {bodies.COUNT_HELD_IDLE}"])[1] == 2  # 48 GPU-hours in a day
    assert _top(v[f"gpu-fleet: {bodies.OUTLIER_LOW_POWER}"]) == ("node-0 1", 8.0)
    assert _top(v[f"gpu-fleet: {bodies.OUTLIER_LOW_SM}"]) == ("node-0 1", 1.0)
    assert _top(v[f"gpu-fleet: {bodies.OUTLIER_HOT}"]) == ("node-0 nvidia2", 91.0)  # from CI
    assert _top(v[f"gpu-fleet: {bodies.OUTLIER_THERMAL}"]) == ("node-0 2", 0.75)
    assert _top(v[f"gpu-fleet: {bodies.OUTLIER_XID_NODES}"]) == ("node-0", 5.0)
    # 6 GPUs at 80% and one at 8% of the same limit: (6 * 80 + 8) / 7
    assert _top(v[f"gpu-fleet: {bodies.FLEET_POWER}"])[1] == pytest.approx(488 / 7)
    # The GPU-hour funnel's hour: 8 GPUs paid (node_gpu_limit, a sample a minute), 7 held by
    # pods, 5 of them working on the day's average (120 held-and-working GPU-hours).
    assert _top(v[f"gpu-fleet: {FUNNEL_PAID}"])[1] == 8
    assert _top(v[f"gpu-fleet: {FUNNEL_ALLOCATED}"])[1] == 7
    assert _top(v[f"gpu-fleet: {FUNNEL_ACTIVE}"])[1] == 5


def test_the_node_dashboard_shows_the_picked_nodes_gpus_line_by_line() -> None:
    v = views(3)
    power = v["gpu-node: Power against the limit (%)"]
    assert len(power.lines) == 7  # node-0's GPUs with a reading; the lost one has none
    healthy = v["gpu-node: Healthy (0 = lost)"]
    assert _top(healthy) == ("3", 0.0)  # the lost GPU first
    assert len(healthy.lines) == 8


def test_the_training_dashboard_leads_with_the_data_bound_job_and_the_wasteful_namespace() -> None:
    v = views(30)
    assert _top(v[f"training: {bodies.OUTLIER_DATA_WAIT}"]) == ("job-0", 40.0)
    assert _top(v["training: Data-wait share of the step (%)"]) == ("job-0", 40.0)
    assert _top(v[f"training: {bodies.WASTE_HOURS}"]) == ("ns-0", 48.0)
    assert _top(v[f"training: {bodies.WASTE_USD}"]) == ("ns-0", 336.0)


def test_no_widget_draws_more_series_at_8000_gpus_than_its_fixed_bound() -> None:
    small, large = views(1), views(1000)
    assert max(view.series for view in large.values()) <= bodies.GPUS_PER_NODE_MAX
    for title, view in large.items():
        bound = 1 if not view.lines or view.series == 1 else bodies.OUTLIERS
        if title.startswith("gpu-node"):
            bound = bodies.GPUS_PER_NODE_MAX
        assert view.series <= bound, title
    # the fleet's answers do not change with its size
    assert _top(large[f"gpu-fleet: {bodies.OUTLIER_LOW_POWER}"]) == ("node-0 1", 8.0)
    assert _top(large[f"gpu-fleet: {bodies.OUTLIER_HOT}"]) == ("node-0 nvidia2", 91.0)
    assert _top(large[f"gpu-fleet: {bodies.COUNT_REPORTING}"])[1] == 8000
    assert _top(large[f"gpu-fleet: {bodies.COUNT_LOST}"])[1] == 1
    assert _top(large[f"gpu-fleet: {FUNNEL_PAID}"])[1] == 8000
    assert len(large[f"gpu-fleet: {bodies.OUTLIER_LOW_POWER}"].lines) == 10
    print(
        "largest series count of any widget:",
        max(v.series for v in small.values()),
        "at 8 GPUs,",
        max(v.series for v in large.values()),
        "at 8,000 GPUs",
    )


def test_a_pattern_variable_rewrites_the_node_inside_the_queries() -> None:
    body = all_dashboards(CLUSTER, [], [], "us-east-1", mode=ContainerInsightsMode.CLASSIC)[
        "gpu-insights-train-gpu-node"
    ]
    applied = apply_variables(body, {"node": "node-7"})
    sql = applied["widgets"][1]["properties"]["metrics"][0][0]["expression"]
    assert "NodeName = 'node-7'" in sql
    assert "NODE_TO_SHOW" not in str(applied)


def test_metric_math_pairs_periods_and_refuses_an_unknown_id() -> None:
    env = {"n": {0.0: 48.0, 60.0: 40.0}, "ok": {0.0: 42.0}}
    assert math("(n - ok) * 10 / PERIOD(n)", env, 60) == {0.0: 1.0}
    with pytest.raises(WidgetEvaluationError, match="not a row"):
        math("n / m", env, 60)


def test_the_storage_dashboard_draws_every_named_bucket_and_the_busiest_volumes() -> None:
    """The S3 widgets OR the buckets' names in one SEARCH: every bucket named is drawn (a term
    of one name is an alternative, not the last one written); the EBS widgets rank the
    cluster's volumes, and only those, by their reads."""
    from cli.backtest.history import Sample

    def s3(bucket: str, metric: str, value: float) -> Sample:
        dims = frozenset({("BucketName", bucket), ("FilterId", "EntireBucket")})
        return Sample("AWS/S3", metric, dims, 3600.0, value)

    def ebs(volume: str, ops: float) -> Sample:
        return Sample("AWS/EBS", "VolumeReadOps", frozenset({("VolumeId", volume)}), 3600.0, ops)

    latencies = [s3(b, "FirstByteLatency", ms) for b, ms in (("a", 40.0), ("b", 250.0), ("c", 9.0))]
    # vol-9 is another cluster's (EBS metrics name no cluster): it is not drawn, however busy.
    samples = [*latencies, ebs("vol-1", 10.0), ebs("vol-2", 900.0), ebs("vol-9", 5000.0)]
    before_first_run = bodies.storage(CLUSTER, ["a"], "us-east-1")
    drawn = {v.title: v.series for v in evaluate_body(before_first_run, samples)}
    assert drawn["EBS read ops per 5 minutes (ten busiest)"] == 0
    body = bodies.storage(CLUSTER, ["a", "b"], "us-east-1", volume_ids=["vol-2", "vol-1"])
    shown = {v.title: v for v in evaluate_body(body, samples)}
    latency = shown["S3 first-byte latency p99 (ms)"]
    assert sorted((line.label, line.value) for line in latency.lines) == [
        ("a EntireBucket", 40.0),
        ("b EntireBucket", 250.0),
    ]
    reads = shown["EBS read ops per 5 minutes (ten busiest)"]
    assert [(line.label, line.value) for line in reads.lines] == [("vol-2", 900.0), ("vol-1", 10.0)]
