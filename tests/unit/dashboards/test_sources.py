"""The table of where each GPU widget reads its reading in each mode, and the bodies built from
it: in OTel mode the widgets that read Classic's node_gpu_* read DCGM's series by PromQL, under
the same titles and bounded as their Metrics Insights twins; every other widget is the same in
both modes."""

import json
import re
from typing import Any

import pytest

from cli.backtest.promql_widgets import rule_errors, series_bound
from cli.demo.realistic.otel import DCGM_METRIC_UNITS
from dashboards.bodies import GPUS_PER_NODE_MAX, OUTLIERS, all_dashboards
from dashboards.cluster import CLUSTER_DASHBOARD
from dashboards.serving import DEPLOYMENT_DASHBOARD, SERVING_DASHBOARD
from dashboards.sources import MIB, READINGS, Query, reading
from dashboards.widgets import CHART_WIDGET, chart_queries, is_promql
from gpu_insights_agent.contract.metrics import (
    CI_NODE_GPU_METRICS,
    DCGM_GPU_METRICS,
    NAMESPACE_CONTAINER_INSIGHTS,
    NAMESPACE_GPU,
    NAMESPACE_TRAINING,
    OTLP_JOB,
    ExporterSink,
    GpuMetric,
)
from gpu_insights_agent.contract.resource_names import dashboard_name
from lambdas.shared.console_links import JOB_PATTERN, JOB_VARIABLE, NODE_VARIABLE
from lambdas.shared.container_insights_mode import DEFAULT_MODE, ContainerInsightsMode

CLASSIC, OTEL = ContainerInsightsMode.CLASSIC, ContainerInsightsMode.OTEL
OTLP = ExporterSink.OTLP
ARGS: tuple[Any, ...] = ("train", ["train-data"], ["arn:a"], "us-east-1")
_LIMIT = re.compile(r"LIMIT (\d+)$")
#: The exporter's namespace in a body (a metric row's, or quoted in SQL), not its neighbours'.
_GPU_NAMESPACE = re.compile(r'\\?"' + NAMESPACE_GPU + r'\\?"')


def test_every_container_insights_reading_has_its_dcgm_series_as_the_add_on_names_it() -> None:
    """The readings Classic publishes as node_gpu_* are DCGM's, and OTel mode sends them under
    the names the add-on's configuration gives a unit (cli/demo/realistic/otel.py)."""
    assert set(DCGM_GPU_METRICS) == set(CI_NODE_GPU_METRICS)
    assert set(DCGM_GPU_METRICS.values()) <= set(DCGM_METRIC_UNITS)
    for metric in CI_NODE_GPU_METRICS:
        otel = reading(metric, OTEL)
        # The exporter's and Classic's bytes from DCGM's MiB ("MiBy"), the rest as sent.
        assert otel.scale == (MIB if DCGM_METRIC_UNITS[otel.name] == "MiBy" else 1)
    assert reading(GpuMetric.MEMORY_USED, OTEL).scale == 1_048_576


def test_the_table_reads_the_exporter_where_its_sink_sends_and_container_insights_by_mode() -> None:
    # Classic and OTel with EMF; OTel with OTLP (Classic takes no OTLP sink).
    assert len(READINGS) == 3 * len(GpuMetric)
    for (metric, mode, sink), where in READINGS.items():
        if metric not in CI_NODE_GPU_METRICS and sink is OTLP:
            assert mode is OTEL
            assert (where.query, where.namespace, where.name) == (Query.PROMQL, None, str(metric))
        elif metric not in CI_NODE_GPU_METRICS:
            assert where == reading(metric, CLASSIC)
            assert (where.query, where.namespace, where.name) == (
                Query.METRICS_INSIGHTS,
                NAMESPACE_GPU,
                str(metric),
            )
        elif mode is CLASSIC:
            assert (where.query, where.namespace) == (
                Query.METRICS_INSIGHTS,
                NAMESPACE_CONTAINER_INSIGHTS,
            )
            assert where.name.startswith("node_gpu_")
        else:
            assert (where.query, where.namespace) == (Query.PROMQL, None)
            assert where.name.startswith("DCGM_FI_")
            assert where == reading(metric, mode, sink)


#: The dashboards each mode has its own of (the cluster's pods and nodes, OTel's serving):
#: tests/unit/dashboards/test_cluster.py and test_serving.py.
MODE_OWN = {
    dashboard_name(ARGS[0], purpose)
    for purpose in (CLUSTER_DASHBOARD, SERVING_DASHBOARD, DEPLOYMENT_DASHBOARD)
}


def _widgets(
    mode: ContainerInsightsMode, sink: ExporterSink = ExporterSink.EMF
) -> dict[tuple[str, str], dict[str, Any]]:
    """The widgets of the dashboards both modes have, by dashboard and title."""
    return {
        (name, w["properties"].get("title", w["properties"].get("markdown", ""))): w
        for name, body in all_dashboards(*ARGS, mode=mode, exporter_sink=sink).items()
        if name not in MODE_OWN
        for w in body["widgets"]
    }


def _reads_classic_ci(widget: dict[str, Any]) -> bool:
    return NAMESPACE_CONTAINER_INSIGHTS in json.dumps(widget.get("properties", {}).get("metrics"))


def test_otel_mode_reads_by_promql_exactly_what_classic_reads_from_node_gpu() -> None:
    """Same widgets, same titles and places; the four that read node_gpu_* in Classic read
    DCGM by PromQL in OTel mode, each bounded by the same number as its twin's LIMIT (10 on
    the fleet, 16 on the node); every other widget is byte for byte the same."""
    classic, otel = _widgets(CLASSIC), _widgets(OTEL)
    assert list(classic) == list(otel)
    switched = {key for key, widget in classic.items() if _reads_classic_ci(widget)}
    assert sorted(title for _, title in switched) == [
        "GPU utilization (%)",
        "Hottest (C), 10 GPUs",
        "Memory used (bytes)",
        "Temperature (C)",
    ]
    for key, widget in classic.items():
        twin = otel[key]
        if key not in switched:
            assert twin == widget, key
            continue
        # A chart widget of one PromQL query in the metric widget's place.
        assert (twin["type"], widget["type"]) == (CHART_WIDGET, "metric")
        assert {k: v for k, v in twin.items() if k not in {"type", "properties"}} == {
            k: v for k, v in widget.items() if k not in {"type", "properties"}
        }
        (query,) = chart_queries(twin)
        assert is_promql(query)
        (classic_row,) = widget["properties"]["metrics"]
        limit = _LIMIT.search(classic_row[0]["expression"])
        assert limit is not None
        assert series_bound(query["query"]) == int(limit[1])
        assert int(limit[1]) in {OUTLIERS, GPUS_PER_NODE_MAX}
        assert query.get("label", "") == classic_row[0]["label"]
        assert twin["properties"]["region"] == widget["properties"]["region"]


def test_no_otel_body_names_a_metric_otel_mode_turns_off() -> None:
    for body in all_dashboards(*ARGS, mode=OTEL).values():
        text = json.dumps(body)
        assert "node_gpu_" not in text
        assert "pod_gpu_" not in text


@pytest.mark.parametrize("mode", list(ContainerInsightsMode))
def test_the_default_mode_is_the_settings_default(mode: ContainerInsightsMode) -> None:
    """A caller that names no mode gets the project's default, Classic today."""
    named = all_dashboards(*ARGS, mode=mode)
    assert (named == all_dashboards(*ARGS)) == (mode is DEFAULT_MODE)


def test_with_the_otlp_sink_every_exporter_widget_reads_its_series_by_promql() -> None:
    """exporter_sink=otlp: no ``GpuInsights`` metric exists, so each widget that reads the
    exporter reads its OTLP series by PromQL, in the same place under the same title; the
    widgets of other namespaces (the analyzers' waste, storage, findings) stay as they are,
    the training jobs' are PromQL too (the next test), and every PromQL query keeps the rules
    CloudWatch documents."""
    emf, otlp = _widgets(OTEL), _widgets(OTEL, OTLP)
    assert list(emf) == list(otlp)
    exporter = {key for key, w in emf.items() if _GPU_NAMESPACE.search(json.dumps(w))}
    # The fleet: 5 counts and means, 4 outliers (the hottest is DCGM's), XIDs; the node: 5
    # per-GPU widgets (utilization, temperature and memory are DCGM's), XIDs.
    assert len(exporter) == 16
    for key, widget in emf.items():
        twin = otlp[key]
        if key in exporter:
            assert twin["type"] == CHART_WIDGET, key
            (query,) = chart_queries(twin)
            assert is_promql(query)
            assert rule_errors(key[1], query["query"]) == []
            assert "Shard" not in json.dumps(twin)
        else:
            assert twin == widget or twin["type"] == CHART_WIDGET, key
    for body in all_dashboards(*ARGS, mode=OTEL, exporter_sink=OTLP).values():
        assert not _GPU_NAMESPACE.search(json.dumps(body))
        # The node picker has no GpuInsights metric to search: a text box.
        for variable in body.get("variables", []):
            if variable["id"] == NODE_VARIABLE:
                assert variable["inputType"] == "input"
                assert "search" not in variable


def test_with_the_otlp_sink_every_job_widget_reads_the_emitters_series_by_promql() -> None:
    """The emitter sends OTLP, not EMF, in the same deployments (exporter_sink=otlp): no
    ``GpuInsights/Training`` metric exists, so each of the training dashboard's thirteen job
    widgets is a PromQL chart in the same place under the same title, bounded (10 jobs, or the
    one picked), by the job label the emitter sets; the waste widgets stay; the job picker is
    a text box."""
    emf, otlp = _widgets(OTEL), _widgets(OTEL, OTLP)
    training = [key for key in emf if key[0].endswith("-training")]
    jobs = [key for key in training if NAMESPACE_TRAINING in json.dumps(emf[key])]
    assert len(jobs) == 13
    for key in jobs:
        (query,) = chart_queries(otlp[key])
        assert is_promql(query)
        assert rule_errors(key[1], query["query"]) == []
        assert series_bound(query["query"]) in {1, OUTLIERS}
        assert f'{OTLP_JOB}="{JOB_PATTERN}"' in query["query"] or "topk(10," in query["query"]
    assert [key for key in training if key not in jobs] == [
        key for key in training if otlp[key] == emf[key]
    ]
    (body,) = [b for n, b in all_dashboards(*ARGS, mode=OTEL, exporter_sink=OTLP).items()
               if n.endswith("-training")]  # fmt: skip
    assert NAMESPACE_TRAINING not in json.dumps(body)
    (picker,) = body["variables"]
    assert (picker["id"], picker["inputType"]) == (JOB_VARIABLE, "input")


def test_the_job_dashboard_charts_the_jobs_goodput_over_15_minutes_and_the_hour() -> None:
    """Goodput now (docs/goodput.md): the mean of the picked job's windows, each rolling window
    one Metrics Insights period in Classic, one PromQL range where the emitter sends OTLP."""
    emf, otlp = _widgets(OTEL), _widgets(OTEL, OTLP)
    for window, duration in ((900, "15m"), (3600, "1h")):
        title = {900: "Goodput, last 15 minutes (0-1)", 3600: "Goodput, last hour (0-1)"}[window]
        (key,) = [k for k in emf if k[0].endswith("-training") and k[1] == title]
        properties = emf[key]["properties"]
        (row,) = properties["metrics"]
        assert row[0]["expression"] == (
            'SELECT AVG(goodput) FROM SCHEMA("GpuInsights/Training", ClusterName, JobName, '
            f"Shard) WHERE ClusterName = 'train' AND JobName = '{JOB_PATTERN}'"
        )
        assert properties["period"] == window
        (query,) = chart_queries(otlp[key])
        assert '__name__="goodput"' in query["query"]
        assert query["query"].count(f"[{duration}])") == 2  # its sum over its count
