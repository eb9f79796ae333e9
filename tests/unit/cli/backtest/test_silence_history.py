"""gpu_silent derived from a history file by the silence check's own rule
(cli/backtest/silence_history.py)."""

from cdk.function_configs import silence_config
from cdk.settings import Settings
from cli.backtest.history import Sample
from cli.backtest.silence_history import derive_silence

#: 2026-11-29 15:00 UTC.
T15 = 1_795_964_400.0
CONFIG = silence_config(Settings(cluster_name="train"))


def _healthy(node: str, gpu: int, at: float) -> Sample:
    dims = {"ClusterName": "train", "NodeName": node, "GpuIndex": str(gpu), "Shard": "0"}
    return Sample("GpuInsights", "gpu_healthy", frozenset(dims.items()), at, 1.0)


def _silent(samples: list[Sample], end: float) -> set[tuple[float, str, str]]:
    derived = derive_silence(samples, CONFIG, start=T15, end=end)
    assert {s.metric for s in derived} <= {"gpu_silent"}
    return {
        (s.timestamp - T15, dict(s.dimensions)["NodeName"], dict(s.dimensions)["GpuIndex"])
        for s in derived
    }


def test_a_gpu_the_driver_stops_listing_is_silent_by_its_index() -> None:
    """n1 sends GPUs 0 and 1 until 15:30, then GPU 0 alone: GPU 1 is silent from the first run
    whose 600 s look back starts after 15:29 (15:40), GPU 0 never."""
    samples = [
        _healthy("n1", gpu, T15 + m * 60) for m in range(60) for gpu in (0, 1) if gpu == 0 or m < 30
    ]
    silent = _silent(samples, T15 + 3600)
    assert silent == {(m * 60.0, "n1", "1") for m in (40, 45, 50, 55)}


def test_a_node_that_joins_later_is_not_silent_before_its_first_sample() -> None:
    samples = [_healthy("n1", 0, T15 + m * 60) for m in range(60)]
    samples += [_healthy("n2", 0, T15 + m * 60) for m in range(30, 60)]
    assert _silent(samples, T15 + 3600) == set()
