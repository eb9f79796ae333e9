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
