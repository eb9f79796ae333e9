"""``benchmarks/alarms.py`` on 20 nodes: every injected fault is named on its GPU."""

import pytest

from benchmarks import alarms


def test_every_fault_is_named_on_its_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(alarms, "NODES", 20)
    monkeypatch.setattr(alarms, "FAULTS", {(17, 3): "low", (5, 0): "lost", (9, 5): "thermal"})
    figures = alarms.main()
    assert figures["gpus"] == 20 * alarms.GPUS_PER_NODE
    assert (figures["faults_named"], figures["faults"]) == (3, 3)
    assert figures["partial"] == 0
