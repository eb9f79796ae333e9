"""``benchmarks/failure_causes.py`` with a 2,000-line log: the corpus is classified as its
sources say, and lines are read per CPU second."""

import pytest

from benchmarks import failure_causes


def test_the_corpus_is_classified_as_sourced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(failure_causes, "THROUGHPUT_LINES", 2_000)
    result = failure_causes.main()
    right = sum(r for r, _ in result.accuracy.values())
    total = sum(t for _, t in result.accuracy.values())
    assert right == total > 0
    assert result.lines_per_s_failures > 0
    assert result.lines_per_s_quiet > 0
