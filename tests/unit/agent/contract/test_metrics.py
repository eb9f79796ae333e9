"""The metric table's invariants: each row's role, alarm, cluster copy and Container Insights
equivalent agree with each other, with the alarms that read the metric and with the EMF units
CloudWatch accepts. A new row that breaks one fails here, not as an alarm that matches nothing."""

import json
import re

import pytest

from cdk.alarms.catalog import AlarmSettings, gpu_alarms
from cdk.alarms.model import InsightsQuery
from gpu_insights_agent.contract.metrics import (
    ADDON_DCGM_FIELDS,
    ADDON_DCGM_INTERVAL_S,
    ADDON_DCGM_LABEL_FIELDS,
    ALARM_METRICS,
    CI_NODE_GPU_METRICS,
    CLUSTER_METRICS,
    CYCLE_METRICS,
    DIM_CLUSTER,
    DIM_SHARD,
    FAULT_METRICS,
    GPU_METRIC_ROWS,
    GPU_METRIC_UNITS,
    GPU_METRICS,
    NAMESPACE_GPU,
    XID_DIMENSION_SETS,
    CostClass,
    GpuMetric,
    GpuMetricRow,
    Role,
    emf_dimension_sets,
    gpu_schema,
)
from tests.unit.reference_data import DATA


def _emf_units() -> set[str]:
    """The units the EMF specification's schema accepts (tests/data/cloudwatch-emf.schema.json)."""
    text = (DATA / "cloudwatch-emf.schema.json").read_text()
    pattern = re.search(r'"pattern": "\^\((Seconds\|[^)]*)\)\$"', text)
    assert pattern is not None
    return set(json.loads(f'"{pattern.group(1)}"').split("|"))


def test_every_gpu_metric_has_exactly_one_row() -> None:
    assert [r.metric for r in GPU_METRICS].count(GpuMetric.HEALTHY) == 1
    assert sorted(GPU_METRIC_ROWS) == sorted(GpuMetric)
    assert len(GPU_METRICS) == len(GpuMetric)


@pytest.mark.parametrize("row", GPU_METRICS, ids=str)
def test_a_rows_columns_agree(row: GpuMetricRow) -> None:
    assert row.unit in _emf_units()
    if row.alarmed:  # a per-GPU alarm needs a per-GPU series in every hour it may breach
        assert row.role in {Role.CYCLE, Role.FAULT}
    if row.cluster:
        assert row.role in {Role.CYCLE, Role.EVENT}
    if row.container_insights is not None:  # published there already: never a metric here
        assert row.role is Role.PROPERTY
    if row.otlp:  # sent over OTLP although no metric in EMF: only a property needs the flag
        assert row.role is Role.PROPERTY
    assert (DIM_SHARD in gpu_schema(row.metric)) is row.alarmed


def test_the_sets_are_the_tables_columns() -> None:
    rows = GPU_METRICS
    assert {r.metric for r in rows if r.alarmed} == ALARM_METRICS
    assert {r.metric for r in rows if r.role is Role.CYCLE} == CYCLE_METRICS
    assert {r.metric for r in rows if r.role is Role.FAULT} == FAULT_METRICS
    assert CLUSTER_METRICS <= CYCLE_METRICS
    assert {m: r.unit for m, r in GPU_METRIC_ROWS.items()} == GPU_METRIC_UNITS
    assert CI_NODE_GPU_METRICS[GpuMetric.TEMPERATURE] == "node_gpu_temperature"
    assert GPU_METRIC_ROWS[GpuMetric.ECC_UNCORRECTED].cost is CostClass.FAULT_HOURS
    assert GPU_METRIC_ROWS[GpuMetric.POWER_LIMIT].cost is CostClass.LOG_ONLY


def test_the_emf_dimension_sets_follow_the_row() -> None:
    assert emf_dimension_sets(GpuMetric.HEALTHY) == [gpu_schema(GpuMetric.HEALTHY), (DIM_CLUSTER,)]
    assert DIM_SHARD in gpu_schema(GpuMetric.HEALTHY)
    remap = GpuMetric.ROW_REMAP_PENDING
    assert emf_dimension_sets(remap) == [gpu_schema(remap)]
    assert DIM_SHARD not in gpu_schema(remap)
    assert emf_dimension_sets(GpuMetric.XID_ERRORS) == list(XID_DIMENSION_SETS)
    assert emf_dimension_sets(GpuMetric.TEMPERATURE) == []


def _per_gpu_queries(settings: AlarmSettings) -> list[InsightsQuery]:
    return [
        s.metric
        for s in gpu_alarms(settings)
        if isinstance(s.metric, InsightsQuery) and s.metric.namespace == NAMESPACE_GPU
    ]


def test_a_per_gpu_alarm_reads_only_metrics_the_table_shards() -> None:
    """An alarm whose query names ``Shard`` on a metric the exporter publishes without it
    would match no series and never page: each metric a per-GPU alarm reads is alarmed in the
    table, its SCHEMA is the metric's per-GPU schema, and no alarmed row lacks an alarm."""
    queries = _per_gpu_queries(AlarmSettings(cluster_name="c", shards=3))
    read = {GpuMetric(q.metric) for q in queries if q.metric in set(GpuMetric)}
    assert read == ALARM_METRICS
    for q in queries:
        if q.metric in set(GpuMetric):
            assert set(q.schema) == set(gpu_schema(GpuMetric(q.metric))), q.metric
            assert GPU_METRIC_ROWS[GpuMetric(q.metric)].alarmed


#: The README's unit words for each CloudWatch unit ("None" is a flag, watts or degrees).
README_UNITS = {
    "Percent": {"percent"},
    "Bytes": {"bytes"},
    "Count": {"count"},
    "None": {"0/1", "watts", "°C", "MHz"},
}


#: The metric reference (moved out of the README, which links it).
METRICS_PAGE = DATA.parents[1] / "docs" / "metrics.md"


def _readme_rows() -> dict[str, list[str]]:
    """docs/metrics.md's exporter metric table: metric -> (unit, meaning, published as, read
    by)."""
    readme = METRICS_PAGE.read_text()
    section = readme.split("From the GPU exporter: namespace `GpuInsights`", 1)[1]
    section = section.split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 5:
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_the_readmes_metric_table_says_what_the_table_does() -> None:
    """Every per-GPU reading has a docs/metrics.md row whose unit, role, Shard, cluster copy and
    Container Insights equivalent are the table's; the XID events are named in its prose."""
    rows = _readme_rows()
    readme = METRICS_PAGE.read_text()
    for row in GPU_METRICS:
        name = str(row.metric)
        if row.role is Role.EVENT:
            assert f"`{name}` (count" in readme, name
            continue
        assert name in rows, f"{name} has no row in the README's metric table"
        unit, _, published, read_by = rows[name]
        assert unit in README_UNITS[row.unit], (name, unit)
        assert (published == "property") is (row.role is Role.PROPERTY), name
        assert ("every cycle" in published) is (row.role is Role.CYCLE), name
        assert ("only in hours it is non-zero" in published) is (row.role is Role.FAULT), name
        assert ("with `Shard`" in published) is row.alarmed, name
        assert ("per cluster" in published) is row.cluster, name
        if row.container_insights is not None:
            assert f"Container Insights `{row.container_insights}`" in read_by, name
    exporter = {str(m) for m in GpuMetric}
    listed = {n for n in rows if n.startswith("gpu_") and n not in exporter}
    assert listed == {"gpu_silent", "gpu_silent_nodes"}  # the silence check's, not the exporter's


def test_what_the_add_ons_dcgm_gives_is_a_property_and_what_it_lacks_is_the_exporters() -> None:
    """In OTel mode the add-on sends the DCGM fields of its dcgm-exporter's metricsConfig
    (ADDON_DCGM_FIELDS, from the chart's dcgm-exporter-daemonset.yaml): ten, tensor activity
    the one profiling field, no SM clock, and the driver version as a label. A reading
    Container Insights publishes in Classic is among them and rides as a property; every
    reading the exporter sends as a metric is one the add-on's DCGM does not collect."""
    assert len(ADDON_DCGM_FIELDS) == 10
    assert "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" in ADDON_DCGM_FIELDS
    assert "DCGM_FI_DEV_SM_CLOCK" not in ADDON_DCGM_FIELDS
    assert "DCGM_FI_PROF_SM_ACTIVE" not in ADDON_DCGM_FIELDS
    assert ADDON_DCGM_LABEL_FIELDS == ("DCGM_FI_DRIVER_VERSION",)
    for row in GPU_METRICS:
        given = row.dcgm in ADDON_DCGM_FIELDS
        if row.container_insights is not None:
            assert given, row
        if row.role is not Role.PROPERTY:
            assert not given, row
    assert all(f.startswith("DCGM_FI_") for f in ADDON_DCGM_FIELDS)
    assert ADDON_DCGM_INTERVAL_S == 30
