"""``benchmarks/exporter.py`` over two simulated hours instead of a day."""

import pytest

from benchmarks import exporter


def test_two_hours_of_cycles_are_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exporter, "DAY_S", 7200.0)
    figures = exporter.main()
    assert figures["cycles"] == 720
    assert figures["cpu_ms_per_gpu_per_cycle"] > 0
    assert figures["emf_bytes_per_gpu_per_cycle"] > 0
    assert figures["billed_series_per_node"] > 0
