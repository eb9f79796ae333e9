"""``benchmarks/attribution.py`` on two nodes: a week of GPU-hours, each counted once."""

from benchmarks import attribution


def test_a_week_of_two_nodes_is_every_gpu_hour_once() -> None:
    figures = attribution.main(nodes=2)
    assert figures["gpu_hours"] == 2 * attribution.GPUS_PER_NODE * attribution.HOURS
    assert 0 <= figures["not_working"] <= figures["gpu_hours"]
