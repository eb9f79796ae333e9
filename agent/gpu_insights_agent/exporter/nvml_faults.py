"""What an NVML error code says about a GPU, and when a GPU that keeps failing is unhealthy.

Every code of ``nvmlReturn_t`` is classed by its meaning in NVIDIA's NVML API Reference
(4.2 Device Enums, ``nvmlReturn_t``:
https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceEnumvs.html, the same text as the
comments of ``nvml.h``); the numbers are pynvml's ``NVML_ERROR_*`` (a test compares them):

- ``absent``: the GPU or driver lacks the reading (NOT_SUPPORTED and its kind). Not a fault: the
  field is left out and said once in the log.
- ``device``: the GPU itself is broken (lost, needs a reset, interrupt or infoROM fault).
- ``driver``: the driver or NVML cannot serve any GPU (not loaded, version mismatch, blocked).
- ``transient``: a busy or out-of-resources answer that a later call may not repeat.
- ``access``: the exporter's own call or rights are wrong (a bug or a missing permission).

A cycle is faulted when a call fails with a ``device`` or ``driver`` code, or when no call of
the cycle answered and at least one failed with any other fault code. A GPU is reported
unhealthy, with the code as its reason, once :data:`FAULT_CYCLES` cycles in a row are faulted
(``GPU_IS_LOST`` at once: a lost GPU never comes back without a reset), and healthy again after
the first cycle that is not.
"""

from dataclasses import dataclass
from enum import StrEnum

from gpu_insights_agent.exporter.device_source import DeviceFault


class FaultClass(StrEnum):
    ABSENT = "absent"
    DEVICE = "device"
    DRIVER = "driver"
    TRANSIENT = "transient"
    ACCESS = "access"


@dataclass(frozen=True)
class NvmlCode:
    name: str
    fault_class: FaultClass
    #: NVIDIA's words for the code (nvmlReturn_t).
    meaning: str


_A, _D, _R, _T, _X = (
    FaultClass.ABSENT,
    FaultClass.DEVICE,
    FaultClass.DRIVER,
    FaultClass.TRANSIENT,
    FaultClass.ACCESS,
)

#: nvmlReturn_t, code -> (name, class, meaning); NVML API Reference, 4.2 Device Enums.
NVML_CODES: dict[int, NvmlCode] = {
    1: NvmlCode("NVML_ERROR_UNINITIALIZED", _R, "NVML was not first initialized with nvmlInit()"),
    2: NvmlCode("NVML_ERROR_INVALID_ARGUMENT", _X, "A supplied argument is invalid"),
    3: NvmlCode(
        "NVML_ERROR_NOT_SUPPORTED", _A, "The requested operation is not available on target device"
    ),
    4: NvmlCode(
        "NVML_ERROR_NO_PERMISSION", _X, "The current user does not have permission for operation"
    ),
    5: NvmlCode("NVML_ERROR_ALREADY_INITIALIZED", _T, "Multiple initializations (deprecated)"),
    6: NvmlCode("NVML_ERROR_NOT_FOUND", _X, "A query to find an object was unsuccessful"),
    7: NvmlCode("NVML_ERROR_INSUFFICIENT_SIZE", _X, "An input argument is not large enough"),
    8: NvmlCode(
        "NVML_ERROR_INSUFFICIENT_POWER",
        _D,
        "A device's external power cables are not properly attached",
    ),
    9: NvmlCode("NVML_ERROR_DRIVER_NOT_LOADED", _R, "NVIDIA driver is not loaded"),
    10: NvmlCode("NVML_ERROR_TIMEOUT", _T, "User provided timeout passed"),
    11: NvmlCode(
        "NVML_ERROR_IRQ_ISSUE", _D, "NVIDIA Kernel detected an interrupt issue with a GPU"
    ),
    12: NvmlCode(
        "NVML_ERROR_LIBRARY_NOT_FOUND", _R, "NVML Shared Library couldn't be found or loaded"
    ),
    13: NvmlCode(
        "NVML_ERROR_FUNCTION_NOT_FOUND", _A, "Local version of NVML doesn't implement this function"
    ),
    14: NvmlCode("NVML_ERROR_CORRUPTED_INFOROM", _D, "infoROM is corrupted"),
    15: NvmlCode(
        "NVML_ERROR_GPU_IS_LOST",
        _D,
        "The GPU has fallen off the bus or has otherwise become inaccessible",
    ),
    16: NvmlCode(
        "NVML_ERROR_RESET_REQUIRED", _D, "The GPU requires a reset before it can be used again"
    ),
    17: NvmlCode(
        "NVML_ERROR_OPERATING_SYSTEM",
        _R,
        "The GPU control device has been blocked by the operating system/cgroups",
    ),
    18: NvmlCode(
        "NVML_ERROR_LIB_RM_VERSION_MISMATCH", _R, "RM detects a driver/library version mismatch"
    ),
    19: NvmlCode(
        "NVML_ERROR_IN_USE",
        _T,
        "An operation cannot be performed because the GPU is currently in use",
    ),
    20: NvmlCode("NVML_ERROR_MEMORY", _T, "Insufficient memory"),
    21: NvmlCode("NVML_ERROR_NO_DATA", _T, "No data"),
    22: NvmlCode(
        "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED",
        _A,
        "The requested vgpu operation is not available on target device, because ECC is enabled",
    ),
    23: NvmlCode(
        "NVML_ERROR_INSUFFICIENT_RESOURCES", _T, "Ran out of critical resources, other than memory"
    ),
    24: NvmlCode("NVML_ERROR_FREQ_NOT_SUPPORTED", _A, "The requested frequency is not supported"),
    25: NvmlCode(
        "NVML_ERROR_ARGUMENT_VERSION_MISMATCH", _A, "The provided version is invalid/unsupported"
    ),
    26: NvmlCode("NVML_ERROR_DEPRECATED", _A, "The requested functionality has been deprecated"),
    27: NvmlCode("NVML_ERROR_NOT_READY", _T, "The system is not ready for the request"),
    28: NvmlCode("NVML_ERROR_GPU_NOT_FOUND", _R, "No GPUs were found"),
    29: NvmlCode(
        "NVML_ERROR_INVALID_STATE",
        _T,
        "Resource not in correct state to perform requested operation",
    ),
    30: NvmlCode(
        "NVML_ERROR_RESET_TYPE_NOT_SUPPORTED",
        _A,
        "Reset not supported for given device/parameters",
    ),
    999: NvmlCode("NVML_ERROR_UNKNOWN", _R, "An internal driver error occurred"),
}

#: Faulted cycles in a row before a GPU is reported unhealthy: 30 s at the default 10 s
#: interval, so one slow answer (a TIMEOUT) never pages, and the 2-minute ``gpu-lost`` alarm
#: pages within about 3 minutes of a fault that persists. docs/metrics.md states it.
FAULT_CYCLES = 3

#: The code of a GPU fallen off the bus: unhealthy at once.
GPU_IS_LOST = 15

_SEVERITY = (FaultClass.DEVICE, FaultClass.DRIVER, FaultClass.TRANSIENT, FaultClass.ACCESS)


def describe_code(code: int) -> NvmlCode:
    """The code's row; a code the table lacks (a newer driver's) is a fault of unknown kind."""
    row = NVML_CODES.get(code)
    if row is not None:
        return row
    return NvmlCode(f"NVML_ERROR_{code}", FaultClass.DRIVER, "a code this exporter does not know")


def device_fault(code: int) -> DeviceFault:
    """The reason a GPU failing with ``code`` is unhealthy, as its document carries it."""
    row = describe_code(code)
    return DeviceFault(reason=row.name, detail=f"{row.fault_class}: {row.meaning}")


def is_fault(code: int) -> bool:
    return describe_code(code).fault_class is not FaultClass.ABSENT


def cycle_fault(failed: list[int], answered: int) -> int | None:
    """The code that makes a cycle faulted (the worst by class, first seen on a tie), or None.

    ``failed``: the fault codes of the cycle's failed calls in call order (absent ones left
    out); ``answered``: how many calls returned a value."""
    ranked = sorted(
        enumerate(failed),
        key=lambda item: (_SEVERITY.index(describe_code(item[1]).fault_class), item[0]),
    )
    if not ranked:
        return None
    code = ranked[0][1]
    if describe_code(code).fault_class in (FaultClass.DEVICE, FaultClass.DRIVER) or answered == 0:
        return code
    return None


class FaultRun:
    """Faulted cycles in a row of one GPU: the code once it has lasted :data:`FAULT_CYCLES`."""

    def __init__(self, cycles: int = FAULT_CYCLES) -> None:
        self.cycles = cycles
        self.count = 0

    def observe(self, code: int | None) -> int | None:
        if code is None:
            self.count = 0
            return None
        self.count += 1
        return code if self.count >= self.cycles else None
