"""``benchmarks/storage_analyzer.py`` on 40 volumes (20 for the baseline), each plan in a
fresh process as the benchmark runs it."""

import pytest

from benchmarks import storage_analyzer


def test_both_plans_read_a_small_fleet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage_analyzer, "VOLUMES", 40)
    monkeypatch.setattr(storage_analyzer, "BASELINE_VOLUMES", 20)
    runs = storage_analyzer.main()
    assert runs["floor"]["volumes"] == 40
    assert runs["floor"]["calls"] <= runs["today"]["calls"]
    assert runs["floor"]["datapoints"] > 0
