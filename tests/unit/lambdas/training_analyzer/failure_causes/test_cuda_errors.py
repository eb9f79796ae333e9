"""Whose fault a CUDA error is: the GPU's (ECC, NVLink), the node's (no usable GPU) or the
code's (a kernel it launched), as NVIDIA's CUDA Runtime API reference defines each code."""

import pytest

from lambdas.training_analyzer.failure_causes import Cause, classify_text
from lambdas.training_analyzer.failure_causes.cuda_errors import (
    CUDA_ERRORS,
    CudaFault,
    cuda_error,
)
from tests.unit.reference_data import failure_log_corpus

SAMPLES = {s.id: s for s in failure_log_corpus()}


def test_an_uncorrectable_ecc_error_is_the_gpus_fault_not_the_codes() -> None:
    """cudaErrorECCUncorrectable (214): "an uncorrectable ECC error was detected during
    execution" — never "fix it at the frame cited"."""
    diagnosis = classify_text(SAMPLES["ecc-uncorrectable-torch"].text)
    assert diagnosis.cause is Cause.GPU_FAULT
    assert diagnosis.title == (
        "GPU fault reported by CUDA: uncorrectable ECC error encountered "
        "(cudaErrorECCUncorrectable, 214)"
    )
    assert "frame cited" not in diagnosis.recommendation
    assert "drain the node" in diagnosis.recommendation
    assert [c.number for c in diagnosis.lines] == [1]
    assert diagnosis.detail["exception"] == "RuntimeError"


@pytest.mark.parametrize(
    ("line", "code", "fault"),
    [
        ("RuntimeError: CUDA error: uncorrectable ECC error encountered", 214, CudaFault.DEVICE),
        ("  what():  CUDA error: uncorrectable NVLink error detected during the execution", 220,
         CudaFault.DEVICE),
        ("failed call to cuDevicePrimaryCtxRetain: CUDA_ERROR_ECC_UNCORRECTABLE", 214,
         CudaFault.DEVICE),
        ("NCCL WARN Cuda failure 'uncorrectable NVLink error detected during the execution'",
         220, CudaFault.DEVICE),
        ("RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable", 46,
         CudaFault.UNAVAILABLE),
        ("RuntimeError: CUDA error: system not yet initialized", 802, CudaFault.UNAVAILABLE),
        ("RuntimeError: CUDA error: an illegal memory access was encountered", 700,
         CudaFault.ILLEGAL_ADDRESS),
        ("RuntimeError: CUDA error: device-side assert triggered", 710, CudaFault.APPLICATION),
        ("RuntimeError: CUDA error: unspecified launch failure", 719, CudaFault.APPLICATION),
        ("RuntimeError: CUDA error: the launch timed out and was terminated", 702,
         CudaFault.APPLICATION),
    ],
)  # fmt: skip
def test_each_cuda_error_is_read_by_its_text_or_its_name(
    line: str, code: int, fault: CudaFault
) -> None:
    error = cuda_error(line)
    assert error is not None
    assert (error.code, error.fault) == (code, fault)


def test_a_phrase_without_cuda_is_no_cuda_error() -> None:
    assert cuda_error("kernel: misaligned address in user code") is None
    assert cuda_error("systemd: system not yet initialized") is None


def test_the_table_names_each_code_once_by_its_runtime_name() -> None:
    codes = [e.code for e in CUDA_ERRORS]
    assert len(codes) == len(set(codes))
    assert all(e.name.startswith("cudaError") for e in CUDA_ERRORS)
    assert all(not e.driver_name or e.driver_name.startswith("CUDA_ERROR_") for e in CUDA_ERRORS)
    messages = [m for e in CUDA_ERRORS for m in e.messages]
    assert len(messages) == len(set(messages))
    device = {e.code for e in CUDA_ERRORS if e.fault is CudaFault.DEVICE}
    assert device == {214, 220}


def test_the_xid_of_the_same_fault_names_it_first() -> None:
    """The driver's XID 48 (a double bit ECC error) and CUDA's 214 in one log: the XID says
    which GPU and what NVIDIA says to do; CUDA's error is seen too."""
    xid = SAMPLES["xid-48-host-log-group"].lines[0]
    diagnosis = classify_text(xid + "\n" + SAMPLES["ecc-uncorrectable-torch"].text)
    assert diagnosis.cause is Cause.GPU_XID
    assert diagnosis.also_seen == [Cause.GPU_FAULT]


def test_a_gpu_fault_outranks_the_nccl_errors_it_causes() -> None:
    text = (
        SAMPLES["nccl-timeout-allreduce-2025"].text + "\n" + SAMPLES["ecc-uncorrectable-torch"].text
    )
    assert classify_text(text).cause is Cause.GPU_FAULT
