import pytest

from agent.cost import GAUGES_PER_GPU, estimate, tiered_metric_cost


def test_tiers_price_each_metric_in_its_band() -> None:
    assert tiered_metric_cost(100) == pytest.approx(30.0)
    assert tiered_metric_cost(10_000) == pytest.approx(3_000.0)
    assert tiered_metric_cost(10_100) == pytest.approx(3_000.0 + 10.0)


def test_fleet_estimate_counts_series_per_gpu_and_per_cluster() -> None:
    result = estimate(nodes=10, gpus_per_node=8, interval_s=10)
    assert GAUGES_PER_GPU == 15
    assert result.exporter_metrics == 10 * 8 * 15 + 15
    assert result.exporter_metrics_usd == pytest.approx(1215 * 0.30)
    # 80 GPUs, 262,800 cycles a month, 1,482 bytes each.
    assert result.exporter_ingestion_gb == pytest.approx(80 * 262_800 * 1482 / 1e9)
    assert result.ci_observations_millions == pytest.approx(80 * 18 * 43_800 / 1e6)
    assert "Budget per GPU node: 8 GPUs x 15 gauges = 120 series" in result.table()


def test_a_longer_interval_cuts_ingestion_not_metrics() -> None:
    fast, slow = (
        estimate(nodes=2, gpus_per_node=8),
        estimate(nodes=2, gpus_per_node=8, interval_s=60),
    )
    assert slow.exporter_metrics == fast.exporter_metrics
    assert slow.exporter_ingestion_gb == pytest.approx(fast.exporter_ingestion_gb / 6)


@pytest.mark.parametrize(("nodes", "gpus", "interval"), [(0, 8, 10), (1, 0, 10), (1, 8, 0)])
def test_bad_fleet_is_refused(nodes: int, gpus: int, interval: float) -> None:
    with pytest.raises(ValueError, match=r"at least 1|positive|above 0"):
        estimate(nodes=nodes, gpus_per_node=gpus, interval_s=interval)
