import io
import json

from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.record_trace import record
from tests.unit.agent.exporter.nvml_trace import Clock, trace_lines


def test_a_recorded_trace_replays_as_the_gpus_it_recorded() -> None:
    clock = Clock(0)
    source = FakeNvml(trace_lines(), clock=clock, sleep=lambda _: None)

    def sleep(seconds: float) -> None:
        clock.now += seconds

    out = io.StringIO()
    written = record(source, out, seconds=25, interval_s=10, clock=clock, sleep=sleep)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    gpus = [r for r in records if r["kind"] == "gpu"]
    assert [(g["name"], g["power_limit_w"], g["gpm"], g["ecc"]) for g in gpus] == [
        ("NVIDIA H100 80GB HBM3", 700.0, True, True),
        ("NVIDIA A10G", 300.0, False, False),
        ("NVIDIA H100 80GB HBM3", 700.0, True, True),
    ]
    # Three cycles (0, 10, 20 s) of three GPUs; GPU 2 falls off the bus at 20 s.
    assert written == 9
    assert [r for r in records if r["kind"] == "lost"] == [{"kind": "lost", "t": 20, "index": 2}]
    at_10 = {r["index"]: r for r in records if r["kind"] == "sample" and r["t"] == 10}
    assert at_10[0]["power_w"] == 630.0
    assert at_10[0]["throttle"] == ["power", "power_brake"]
    assert at_10[0]["ecc_uncorrected_total"] == 5
    assert at_10[0]["sm_active"] == 85.0
    assert at_10[0]["pids"] == [4242]
    assert "ecc_uncorrected_total" not in at_10[1]  # the A10G has no ECC counters
    assert "sm_active" not in at_10[1]  # nor GPM

    # The recording replays: the fake reads back what it recorded.
    clock.now = 10
    replay = FakeNvml(out.getvalue().splitlines(), clock=clock, sleep=lambda _: None)
    replay.nvmlInit()
    handle = replay.nvmlDeviceGetHandleByIndex(0)
    assert replay.nvmlDeviceGetPowerUsage(handle) == 630_000
    assert replay.malformed_lines == 0


def test_the_fail_slow_evidence_is_recorded_raw_and_replays() -> None:
    """The SM clock as read, the PCIe replay and each NVLink link's error totals as NVML gives
    them (the fake needs them raw); a GPU without NVLink records no link."""
    gpus = [
        {"kind": "gpu", "index": 0, "name": "NVIDIA H100 80GB HBM3", "power_limit_w": 700,
         "nvlinks": 2},
        {"kind": "gpu", "index": 1, "name": "NVIDIA A10G", "power_limit_w": 300},
        {"kind": "sample", "t": 0, "index": 0, "power_w": 500, "sm_clock_mhz": 1755,
         "pcie_replay_total": 9, "nvlink_errors_total": {"1": {"crc_flit": 4}}},
        {"kind": "sample", "t": 0, "index": 1, "power_w": 100},
    ]  # fmt: skip
    clock = Clock(0)
    source = FakeNvml([json.dumps(g) for g in gpus], clock=clock, sleep=lambda _: None)
    out = io.StringIO()
    record(source, out, seconds=1, interval_s=10, clock=clock, sleep=lambda _: None)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [g.get("nvlinks") for g in records if g["kind"] == "gpu"] == [2, 0]
    h100, a10g = [r for r in records if r["kind"] == "sample"]
    assert (h100["sm_clock_mhz"], h100["pcie_replay_total"]) == (1755, 9)
    zero = {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0}
    assert h100["nvlink_errors_total"] == {"0": zero, "1": {**zero, "crc_flit": 4}}
    assert "nvlink_errors_total" not in a10g
    replay = FakeNvml(out.getvalue().splitlines(), clock=clock, sleep=lambda _: None)
    assert replay.malformed_lines == 0
    replay.nvmlInit()
    handle = replay.nvmlDeviceGetHandleByIndex(0)
    assert (
        replay.nvmlDeviceGetNvLinkErrorCounter(handle, 1, replay.NVML_NVLINK_ERROR_DL_CRC_FLIT) == 4
    )
