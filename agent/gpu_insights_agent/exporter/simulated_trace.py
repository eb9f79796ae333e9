"""Deterministic NVML traces of a GPU node, for the demo and the benchmarks.

Each GPU follows a role: ``busy`` (a training job near its power limit), ``idle`` (allocated
but waiting, drawing little power), ``thermal`` (busy, throttling in the afternoons),
``failing`` (busy, then an uncorrectable ECC error, an XID 48 and off the bus ten minutes
later), ``braked`` (busy, its hardware power brake engaged for a stretch in the middle of the
trace: ``BRAKE_FROM`` to ``BRAKE_TO`` of its duration) or ``unallocated`` (no pod asked for it:
no process, none of a job's memory, idle power, as NVML reads every GPU of a node whether or
not the device plugin gave it to a pod). A double-bit error is one event in NVML: the
uncorrected counter rises by one as the driver logs its XID 48 ("XID 48: DBE (Double Bit
Error) ECC Error", NVIDIA's XID catalog, https://docs.nvidia.com/deploy/xid-errors/), so the
trace has both at one instant. Thermal throttling happens from 13:00 to 16:00, counted from
``start_hour`` at the trace's start.
The same seed gives the same trace, so the demo's numbers are stable.
"""

import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

GIB = 2**30


@dataclass(frozen=True)
class SimulatedGpu:
    role: str
    name: str = "NVIDIA H100 80GB HBM3"
    power_limit_w: float = 700.0
    gpm: bool = True


ROLES = ("busy", "idle", "thermal", "failing", "braked", "unallocated")
#: The braked GPU's power brake, as shares of the trace's duration: engaged from 35% to 75%
#: (48 minutes of a two-hour trace, longer than the throttling alarms' 30-minute window).
BRAKE_FROM = 0.35
BRAKE_TO = 0.75
#: NVML's ``nvmlClocksThrottleReasonHwPowerBrakeSlowdown`` (0x0000000000000080, reported as
#: ``nvmlClocksEventReasonHwPowerBrakeSlowdown`` since the clocks-event rename): "HW Power Brake
#: Slowdown (reducing the core clocks by a factor of 2 or more) is engaged" (NVML API Reference,
#: NvmlClocksEventReasons, https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html).
#: The clocks at half or less, a busy GPU draws under half its power; its kernels still hold
#: the SMs, so its utilization and SM activity stay a busy GPU's.
BRAKED_POWER_SHARE = 0.45


def _throttle(share: float, *, hot: bool, braked: bool) -> list[str]:
    """The sample's clocks-event reasons (exporter.fake_nvml's names): thermal when hot, the
    power brake when braked, else the SW power cap of a GPU at its limit."""
    if hot:
        return ["thermal"]
    if braked:
        return ["power_brake"]
    return ["power"] if share > 0.94 else []


def node_trace(
    gpus: Sequence[SimulatedGpu],
    *,
    duration_s: float,
    step_s: float = 60.0,
    seed: int = 7,
    node: str = "node",
    start_hour: float = 0.0,
) -> list[str]:
    """JSON lines for exporter.fake_nvml.FakeNvml."""
    for gpu in gpus:
        if gpu.role not in ROLES:
            raise ValueError(f"unknown GPU role {gpu.role!r}; one of {', '.join(ROLES)}")
    rng = random.Random(f"{seed}-{node}")
    lines = []
    for index, gpu in enumerate(gpus):
        lines.append(
            json.dumps(
                {
                    "kind": "gpu",
                    "index": index,
                    "name": gpu.name,
                    "uuid": f"GPU-{node}-{index}",
                    "pci_bus_id": f"00000000:{0x10 + index:02x}:00.0",
                    "power_limit_w": gpu.power_limit_w,
                    "gpm": gpu.gpm,
                }
            )
        )
    steps = int(duration_s // step_s)
    for index, gpu in enumerate(gpus):
        failed_at = duration_s * 0.8 if gpu.role == "failing" else math.inf
        double_bit_at = failed_at - 600
        ecc = 0
        for step in range(steps):
            t = step * step_s
            if t >= failed_at:
                break
            hour = (start_hour + t / 3600) % 24
            busy = gpu.role not in ("idle", "unallocated")
            share = rng.uniform(0.82, 0.95) if busy else rng.uniform(0.09, 0.15)
            hot = gpu.role == "thermal" and 13 <= hour < 16
            if hot:
                share *= 0.85
            braked = gpu.role == "braked" and BRAKE_FROM * duration_s <= t < BRAKE_TO * duration_s
            if braked:
                share *= BRAKED_POWER_SHARE
            # An unallocated GPU holds no process's memory; an idle one its pod's context.
            idle_memory = 0 if gpu.role == "unallocated" else 2
            if gpu.role == "failing" and t >= double_bit_at:
                ecc = 1
            sample = {
                "kind": "sample",
                "t": t,
                "index": index,
                "power_w": round(share * gpu.power_limit_w, 1),
                "utilization": rng.randint(92, 100) if busy else rng.randint(0, 3),
                "memory_util": rng.randint(40, 70) if busy else 0,
                "memory_used_bytes": (rng.randint(55, 75) if busy else idle_memory) * GIB,
                "temperature_c": rng.randint(84, 88)
                if hot
                else rng.randint(60, 75)
                if busy
                else 34,
                "throttle": _throttle(share, hot=hot, braked=braked),
                "ecc_uncorrected_total": ecc,
                "remap_pending": ecc > 0,
                "pids": [1000 + index] if busy else [],
            }
            if gpu.gpm:
                sample.update(
                    {
                        "sm_active": round(rng.uniform(80, 92) if busy else rng.uniform(0, 2), 1),
                        "sm_occupancy": round(rng.uniform(35, 50) if busy else 0.0, 1),
                        "tensor_active": round(rng.uniform(55, 70) if busy else 0.0, 1),
                    }
                )
            lines.append(json.dumps(sample))
        if gpu.role == "failing":
            lines.append(
                json.dumps({"kind": "xid", "t": double_bit_at, "index": index, "code": 48})
            )
            lines.append(json.dumps({"kind": "lost", "t": failed_at, "index": index}))
        elif gpu.role == "busy" and index == 0:
            lines.append(
                json.dumps({"kind": "xid", "t": duration_s * 0.3, "index": index, "code": 13})
            )
    return lines
