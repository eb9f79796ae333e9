"""The CUDA errors a training job's log can print, and whose fault each is: one table.

A CUDA error reaches a log as the runtime's ``cudaGetErrorString`` text after a framework's
prefix (PyTorch's ``CUDA error: ...``, NCCL's ``Cuda failure '...'``, Paddle's ``Cuda Error:``,
TensorFlow's and XLA's driver name ``CUDA_ERROR_ECC_UNCORRECTABLE: ...``, old PyTorch's
``cuda runtime error (46) : ...``), so a line names one by its text or its enum name.

Codes, names and meanings: NVIDIA, CUDA Runtime API, "Data types used by CUDA Runtime",
``enum cudaError`` (https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html),
and the Driver API's ``CUresult`` (https://docs.nvidia.com/cuda/cuda-driver-api/
group__CUDA__TYPES.html). The texts are ``cudaGetErrorString``'s, as the corpus's lines
(tests/data/failure_logs/corpus.json) print them. The class follows NVIDIA's meaning:

- ``DEVICE``: a fault of the GPU itself, whatever the code did: 214 "an uncorrectable ECC error
  was detected during execution" (its memory), 220 "an uncorrectable NVLink error was detected
  during the execution" (its interconnect). The GPU's cause, not the code's.
- ``UNAVAILABLE``: the job was given no usable GPU: 46 "all CUDA devices are busy or
  unavailable" (another process in exclusive compute mode, or a GPU in a bad state), 100 "no
  CUDA-capable devices were detected by the installed CUDA driver", 802 "the system is not yet
  ready to start any CUDA work ... verify ... all required driver daemons are actively running"
  (Fabric Manager on NVSwitch systems), 35 and 803 (driver and runtime do not match). The
  node's or the image's, not the code's.
- ``ILLEGAL_ADDRESS``: 700 illegal address ("The device encountered a load or store
  instruction on an invalid memory address"), a cause of its own: reported asynchronously (at
  a later call, so the traceback may name the wrong frame), a bug usually, a faulty GPU the
  rarer reading, whose XID line (13, 31) then names it first.
- ``APPLICATION``: the kernel the code launched failed: 710 device-side assert, 719
  unspecified launch failure ("Common causes include dereferencing an invalid device pointer
  and accessing out of bounds shared memory"), 702 launch timeout (a watchdog
  only on GPUs with kernel timeouts enabled), 701, 714 ("stack corruption or exceeding the
  stack size limit"), 715, 716, 209 (no kernel built for the GPU's architecture), 101.
2 (out of memory) is not here: rules.py's CUDA out of memory names it, with the allocators'
own texts.

Left out, as no one reading of them holds: 999 "unknown error" and 3 "initialization error"
(a driver not loaded, or a GPU already lost)."""

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Final


class CudaFault(StrEnum):
    DEVICE = "device"
    UNAVAILABLE = "unavailable"
    ILLEGAL_ADDRESS = "illegal_address"
    APPLICATION = "application"


@dataclass(frozen=True)
class CudaError:
    code: int
    #: The runtime's enum name, and the driver API's where it has one.
    name: str
    driver_name: str
    #: What ``cudaGetErrorString`` prints (an older runtime's text too, where it changed).
    messages: tuple[str, ...]
    fault: CudaFault


CUDA_ERRORS: Final = (
    CudaError(214, "cudaErrorECCUncorrectable", "CUDA_ERROR_ECC_UNCORRECTABLE",
              ("uncorrectable ECC error encountered",), CudaFault.DEVICE),
    CudaError(220, "cudaErrorNvlinkUncorrectable", "CUDA_ERROR_NVLINK_UNCORRECTABLE",
              ("uncorrectable NVLink error detected during the execution",), CudaFault.DEVICE),
    CudaError(46, "cudaErrorDevicesUnavailable", "CUDA_ERROR_DEVICE_UNAVAILABLE",
              ("CUDA-capable device(s) is/are busy or unavailable",
               "all CUDA-capable devices are busy or unavailable"), CudaFault.UNAVAILABLE),
    CudaError(100, "cudaErrorNoDevice", "CUDA_ERROR_NO_DEVICE",
              ("no CUDA-capable device is detected",), CudaFault.UNAVAILABLE),
    CudaError(802, "cudaErrorSystemNotReady", "CUDA_ERROR_SYSTEM_NOT_READY",
              ("system not yet initialized",), CudaFault.UNAVAILABLE),
    CudaError(35, "cudaErrorInsufficientDriver", "",
              ("CUDA driver version is insufficient for CUDA runtime version",),
              CudaFault.UNAVAILABLE),
    CudaError(803, "cudaErrorSystemDriverMismatch", "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
              ("system has unsupported display driver / cuda driver combination",),
              CudaFault.UNAVAILABLE),
    CudaError(700, "cudaErrorIllegalAddress", "CUDA_ERROR_ILLEGAL_ADDRESS",
              ("an illegal memory access was encountered",), CudaFault.ILLEGAL_ADDRESS),
    CudaError(710, "cudaErrorAssert", "CUDA_ERROR_ASSERT",
              ("device-side assert triggered",), CudaFault.APPLICATION),
    CudaError(719, "cudaErrorLaunchFailure", "CUDA_ERROR_LAUNCH_FAILED",
              ("unspecified launch failure",), CudaFault.APPLICATION),
    CudaError(702, "cudaErrorLaunchTimeout", "CUDA_ERROR_LAUNCH_TIMEOUT",
              ("the launch timed out and was terminated",), CudaFault.APPLICATION),
    CudaError(701, "cudaErrorLaunchOutOfResources", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
              ("too many resources requested for launch",), CudaFault.APPLICATION),
    CudaError(714, "cudaErrorHardwareStackError", "CUDA_ERROR_HARDWARE_STACK_ERROR",
              ("hardware stack error",), CudaFault.APPLICATION),
    CudaError(715, "cudaErrorIllegalInstruction", "CUDA_ERROR_ILLEGAL_INSTRUCTION",
              ("an illegal instruction was encountered",), CudaFault.APPLICATION),
    CudaError(716, "cudaErrorMisalignedAddress", "CUDA_ERROR_MISALIGNED_ADDRESS",
              ("misaligned address",), CudaFault.APPLICATION),
    CudaError(209, "cudaErrorNoKernelImageForDevice", "CUDA_ERROR_NO_BINARY_FOR_GPU",
              ("no kernel image is available for execution on the device",),
              CudaFault.APPLICATION),
    CudaError(101, "cudaErrorInvalidDevice", "CUDA_ERROR_INVALID_DEVICE",
              ("invalid device ordinal",), CudaFault.APPLICATION),
)  # fmt: skip

_BY_TEXT: Final = {
    key: error
    for error in CUDA_ERRORS
    for key in (*error.messages, error.name, error.driver_name)
    if key
}
_NAMED: Final = re.compile(
    "|".join(
        rf"\b{re.escape(k)}\b" if k[0].isalnum() else re.escape(k)
        for k in sorted(_BY_TEXT, key=len, reverse=True)
    )
)


def cuda_error(text: str) -> CudaError | None:
    """The CUDA error a line names, by its text or enum name, or None."""
    # A line names a CUDA error only where it speaks of CUDA, Cuda or cuda (a plain substring
    # test: most lines of a log name none).
    if "uda" not in text and "UDA" not in text:
        return None
    named = _NAMED.search(text)
    return _BY_TEXT[named[0]] if named else None
