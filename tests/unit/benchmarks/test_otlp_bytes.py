"""``benchmarks/otlp_bytes.py`` with five exporter cycles."""

import pytest

from benchmarks import otlp_bytes


def test_bytes_per_datapoint_are_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(otlp_bytes, "CYCLES", 5)
    monkeypatch.setattr(otlp_bytes.exporter_node, "__defaults__", (5,))
    figures = otlp_bytes.main()
    for side in ("exporter", "emitter"):
        assert figures[side]["wire_bytes_per_datapoint"] > 0
        assert figures[side]["billed_bytes_per_datapoint"] > 0
