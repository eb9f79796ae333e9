"""``benchmarks/training_emitter.py`` with 2,000 steps, and its faults with 500."""

import pytest

from benchmarks import training_emitter


def test_the_overhead_and_the_faults_are_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(training_emitter, "STEPS", 2_000)
    monkeypatch.setattr(training_emitter, "FAULT_STEPS", 500)
    figures = training_emitter.main()
    assert figures["documents"] >= 1
    faults = training_emitter.faults()
    for fault in ("bare", "dns_hangs", "agent_refuses", "agent_never_reads"):
        assert faults[f"{fault}_worst_ms"] >= faults[f"{fault}_p999_ms"] >= 0
