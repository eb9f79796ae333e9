"""What the exporter costs, before and after issue 14, at us-east-1 list prices.

CloudWatch bills a custom metric for the hours it is published ("metrics are prorated by the
hour", https://aws.amazon.com/cloudwatch/pricing/): a fault gauge sent in 2% of hours costs 2%
of a metric-month.
"""

import pytest

from cli.cost.exporter import AFTER, BEFORE, GAUGES_PER_GPU, estimate
from cli.cost.prices import tiered_metric_cost
from gpu_insights_agent.contract.metrics import (
    CI_NODE_GPU_METRICS,
    CYCLE_METRICS,
    FAULT_METRICS,
    GpuMetric,
)


def test_tiers_price_each_metric_in_its_band() -> None:
    assert tiered_metric_cost(100) == pytest.approx(30.0)
    assert tiered_metric_cost(10_000) == pytest.approx(3_000.0)
    assert tiered_metric_cost(10_100) == pytest.approx(3_000.0 + 10.0)


def test_an_8_gpu_node_costs_under_a_third_of_before() -> None:
    cost = estimate(nodes=1, gpus_per_node=8, interval_s=10)
    # Before: every reading (19 since the fail-slow evidence) per GPU and per cluster, 1,482
    # EMF bytes per GPU and cycle.
    assert (BEFORE.per_gpu, BEFORE.per_cluster) == (19, 19)
    assert cost.before.metrics == 8 * 19 + 19 == 171
    assert cost.before.metrics_usd == pytest.approx(171 * 0.30)  # $51.30
    assert cost.before.ingestion_gb == pytest.approx(8 * 262_800 * 1482 / 1e9)  # 3.12 GB
    assert cost.before_per_node_usd == pytest.approx(52.86, abs=0.005)
    # After: power utilization, in-use power, SM activity and health per GPU and per cluster;
    # 7 fault gauges per GPU in 2% of hours (ECC, throttles, row remap, the fail-slow's PCIe
    # replays, NVLink errors and HW slowdown); 1,008 EMF bytes per GPU and cycle (the SM clock
    # a property).
    assert (AFTER.per_gpu, AFTER.per_cluster, AFTER.faults_per_gpu) == (4, 4, 7)
    assert cost.exporter_metrics == 8 * 4 + 4 == 36
    assert cost.after.fault_metric_months == pytest.approx(8 * 7 * 0.02)  # 1.12
    assert cost.exporter_metrics_usd == pytest.approx(37.12 * 0.30)  # $11.14
    assert cost.exporter_ingestion_gb == pytest.approx(8 * 262_800 * 1008 / 1e9)  # 2.12 GB
    assert cost.per_node_usd == pytest.approx(12.20, abs=0.005)
    assert cost.per_node_usd <= 14.0  # the goal
    assert cost.per_node_usd <= cost.before_per_node_usd / 3
    assert "171 series $52.86 -> 36 series $12.20 a month (23% of before)" in cost.table()


def test_every_reading_is_a_metric_a_fault_gauge_or_a_property() -> None:
    gauges = set(GpuMetric) - {GpuMetric.XID_ERRORS, GpuMetric.XID_FATAL_ERRORS}
    assert len(gauges) == BEFORE.per_gpu
    assert GAUGES_PER_GPU == len(CYCLE_METRICS) == 4
    assert len(FAULT_METRICS) == 7
    # Container Insights gives these per GPU: the exporter no longer does.
    assert not set(CI_NODE_GPU_METRICS) & (CYCLE_METRICS | FAULT_METRICS)


def test_the_cluster_series_are_paid_once_per_fleet() -> None:
    result = estimate(nodes=10, gpus_per_node=8, interval_s=10, fault_hour_share=0)
    assert result.exporter_metrics == 10 * 8 * 4 + 4
    assert result.before.metrics == 10 * 8 * 19 + 19
    assert result.exporter_metrics_usd == pytest.approx(324 * 0.30)
    assert result.ci_observations_millions == pytest.approx(80 * 18 * 43_800 / 1e6)
    assert "per GPU node 8 GPUs x 4 gauges = 32 series, plus 4 per cluster" in result.table()


def test_a_longer_interval_cuts_ingestion_not_metrics() -> None:
    fast, slow = (
        estimate(nodes=2, gpus_per_node=8),
        estimate(nodes=2, gpus_per_node=8, interval_s=60),
    )
    assert slow.exporter_metrics == fast.exporter_metrics
    assert slow.exporter_ingestion_gb == pytest.approx(fast.exporter_ingestion_gb / 6)


@pytest.mark.parametrize(
    ("nodes", "gpus", "interval", "share"),
    [(0, 8, 10, 0.02), (1, 0, 10, 0.02), (1, 8, 0, 0.02), (1, 8, 10, 1.5)],
)
def test_bad_fleet_is_refused(nodes: int, gpus: int, interval: float, share: float) -> None:
    with pytest.raises(ValueError, match=r"at least 1|positive|above 0|from 0 to 1"):
        estimate(nodes=nodes, gpus_per_node=gpus, interval_s=interval, fault_hour_share=share)
