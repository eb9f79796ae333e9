"""The table of where each GPU widget reads its reading in each mode, and the bodies built from
it: in OTel mode the widgets that read Classic's node_gpu_* read DCGM's series by PromQL, under
the same titles and bounded as their Metrics Insights twins; every other widget is the same in
both modes."""

import json
import re
from typing import Any

import pytest

from cli.backtest.promql_widgets import series_bound
from cli.demo.realistic.otel import DCGM_METRIC_UNITS
from dashboards.bodies import GPUS_PER_NODE_MAX, OUTLIERS, all_dashboards
from dashboards.sources import MIB, READINGS, Query, reading
from dashboards.widgets import CHART_WIDGET, chart_queries, is_promql
from gpu_insights_agent.contract.metrics import (
    CI_NODE_GPU_METRICS,
    DCGM_GPU_METRICS,
    NAMESPACE_CONTAINER_INSIGHTS,
    NAMESPACE_GPU,
    GpuMetric,
)
from lambdas.shared.container_insights_mode import DEFAULT_MODE, ContainerInsightsMode

CLASSIC, OTEL = ContainerInsightsMode.CLASSIC, ContainerInsightsMode.OTEL
ARGS: tuple[Any, ...] = ("train", ["train-data"], ["arn:a"], "us-east-1")
_LIMIT = re.compile(r"LIMIT (\d+)$")


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


def test_the_table_reads_the_exporter_in_both_modes_and_container_insights_by_mode() -> None:
    assert len(READINGS) == 2 * len(GpuMetric)
    for (metric, mode), where in READINGS.items():
        if metric not in CI_NODE_GPU_METRICS:
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


def _widgets(mode: ContainerInsightsMode) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (name, w["properties"].get("title", w["properties"].get("markdown", ""))): w
        for name, body in all_dashboards(*ARGS, mode=mode).items()
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
