"""A small NVML trace: an H100 at work, an A10G without GPM, an H100 that falls off the bus."""

from __future__ import annotations

import json
from typing import Any

#: The wall-clock time of the trace's start.
EPOCH = 1_764_000_000.0

GIB = 2**30

RECORDS: list[dict[str, Any]] = [
    {
        "kind": "gpu",
        "index": 0,
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": "GPU-h100-0",
        "pci_bus_id": "00000000:53:00.0",
        "power_limit_w": 700,
        "gpm": True,
    },
    {
        "kind": "gpu",
        "index": 1,
        "name": "NVIDIA A10G",
        "uuid": "GPU-a10g-1",
        "power_limit_w": 300,
        "gpm": False,
        "ecc": False,
    },
    {
        "kind": "gpu",
        "index": 2,
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": "GPU-h100-2",
        "power_limit_w": 700,
        "gpm": True,
    },
    {
        "kind": "sample",
        "t": 0,
        "index": 0,
        "power_w": 350.0,
        "utilization": 97,
        "memory_used_bytes": 60 * GIB,
        "temperature_c": 71,
        "throttle": ["power"],
        "ecc_uncorrected_total": 2,
        "remap_pending": False,
        "sm_active": 40.0,
        "sm_occupancy": 20.0,
        "tensor_active": 10.0,
        "pids": [4242],
    },
    {
        "kind": "sample",
        "t": 0,
        "index": 1,
        "power_w": 60.0,
        "utilization": 0,
        "memory_used_bytes": GIB // 2,
        "temperature_c": 35,
        "throttle": [],
    },
    {
        "kind": "sample",
        "t": 0,
        "index": 2,
        "power_w": 650.0,
        "utilization": 100,
        "memory_used_bytes": 70 * GIB,
        "temperature_c": 80,
        "throttle": ["thermal"],
        "sm_active": 90.0,
        "sm_occupancy": 45.0,
        "tensor_active": 70.0,
    },
    {
        "kind": "sample",
        "t": 10,
        "index": 0,
        "power_w": 630.0,
        "throttle": ["power", "power_brake"],
        "ecc_uncorrected_total": 5,
        "sm_active": 85.0,
        "sm_occupancy": 42.0,
        "tensor_active": 66.0,
    },
    {"kind": "xid", "t": 12, "index": 0, "code": 13},
    {"kind": "xid", "t": 15, "index": 2, "code": 48},
    {"kind": "lost", "t": 20, "index": 2},
]


def trace_lines(extra: list[str] | None = None) -> list[str]:
    return [json.dumps(record) for record in RECORDS] + (extra or [])


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
