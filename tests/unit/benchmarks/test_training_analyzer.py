"""``benchmarks/training_analyzer.py`` on 8 jobs, and a shard of 8."""

import pytest

from benchmarks import training_analyzer


def test_both_plans_and_the_shard_read_a_small_fleet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(training_analyzer, "JOBS", 8)
    monkeypatch.setattr(training_analyzer, "TRAINING_SHARD_JOBS", 8)
    runs = training_analyzer.main()
    assert runs["floor"]["calls"] <= runs["today"]["calls"]
    assert runs["floor"]["findings"] == runs["today"]["findings"]
    assert runs["shard"]["datapoints"] > 0
