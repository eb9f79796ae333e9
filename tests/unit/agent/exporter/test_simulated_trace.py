import json

import pytest

from gpu_insights_agent.exporter.simulated_trace import SimulatedGpu, node_trace


def test_same_seed_same_trace_and_roles_behave() -> None:
    gpus = [SimulatedGpu("busy"), SimulatedGpu("idle"), SimulatedGpu("failing")]
    first = node_trace(gpus, duration_s=3600, step_s=60)
    assert first == node_trace(gpus, duration_s=3600, step_s=60)
    records = [json.loads(line) for line in first]
    power = {
        i: [r["power_w"] for r in records if r["kind"] == "sample" and r["index"] == i]
        for i in range(3)
    }
    assert min(power[0]) > 0.8 * 700
    assert max(power[1]) < 0.16 * 700
    kinds = [(r["kind"], r.get("code")) for r in records if r["kind"] in {"xid", "lost"}]
    assert ("xid", 48) in kinds
    assert ("lost", None) in kinds
    # The double-bit error and its XID 48 are one event: the counter rises by one, at the
    # instant the XID is logged, and stays there until the GPU falls off the bus.
    (xid,) = [r for r in records if r["kind"] == "xid" and r["code"] == 48]
    ecc = [
        (r["t"], r["ecc_uncorrected_total"])
        for r in records
        if r["kind"] == "sample" and r["index"] == 2
    ]
    first = next(t for t, n in ecc if n > 0)
    assert first == xid["t"] == 0.8 * 3600 - 600
    assert {n for t, n in ecc if t >= first} == {1}


def test_unknown_role_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown GPU role 'lazy'"):
        node_trace([SimulatedGpu("lazy")], duration_s=60)
