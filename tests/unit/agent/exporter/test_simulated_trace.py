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


def test_braked_gpu_has_its_power_brake_engaged_for_the_middle_of_the_trace() -> None:
    """The braked GPU: NVML's HW power brake reason from 35% to 75% of the trace (48 of 120
    minutes), drawing under half its limit then while its kernels keep it busy; outside it a
    busy GPU's draw and no brake."""
    records = [
        json.loads(line)
        for line in node_trace([SimulatedGpu("braked")], duration_s=7200, step_s=60)
    ]
    samples = [r for r in records if r["kind"] == "sample"]
    braked = [r for r in samples if "power_brake" in r["throttle"]]
    assert [r["t"] for r in braked] == [60.0 * m for m in range(42, 90)]
    assert max(r["power_w"] for r in braked) < 0.5 * 700
    assert min(r["utilization"] for r in braked) >= 92
    assert min(r["power_w"] for r in samples if r not in braked) > 0.8 * 700


def test_unallocated_gpu_runs_no_process_and_holds_no_memory() -> None:
    records = [
        json.loads(line)
        for line in node_trace([SimulatedGpu("unallocated")], duration_s=3600, step_s=60)
    ]
    samples = [r for r in records if r["kind"] == "sample"]
    assert len(samples) == 60
    assert {(tuple(r["pids"]), r["memory_used_bytes"], r["utilization"]) for r in samples} <= {
        ((), 0, u) for u in range(4)
    }
    assert max(r["power_w"] for r in samples) < 0.16 * 700
