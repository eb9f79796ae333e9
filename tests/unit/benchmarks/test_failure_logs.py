"""``benchmarks/failure_logs.py`` with 200 jobs in the analysis time."""

import pytest

from benchmarks import failure_logs


def test_reads_alarms_and_a_small_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(failure_logs, "JOBS", 200)
    result = failure_logs.main()
    assert result.reads
    assert all(r.read_bytes_per_job > 0 for r in result.reads)
    assert all(a.insights_alarms <= a.quota for a in result.alarms)
    assert (result.analysis.jobs, result.analysis.failed > 0) == (200, True)
