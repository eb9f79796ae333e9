"""The causes a failed training job's logs can name, the order that picks the root cause when
several appear, and what to do about each: one table, read by the classifier, the command line
and the findings."""

from dataclasses import dataclass
from enum import StrEnum
from typing import Final


class Cause(StrEnum):
    GPU_XID = "gpu_xid"
    GPU_FAULT = "gpu_fault"
    GPU_UNAVAILABLE = "gpu_unavailable"
    SPOT_INTERRUPTION = "spot_interruption"
    NODE_LOST = "node_lost"
    IO_ERROR = "io_error"
    KERNEL_OOM_KILLER = "kernel_oom_killer"
    EVICTED = "evicted"
    CONTAINER_MEMORY_LIMIT = "container_memory_limit"
    DISK_FULL = "disk_full"
    CUDA_OUT_OF_MEMORY = "cuda_out_of_memory"
    CUDA_ILLEGAL_MEMORY_ACCESS = "cuda_illegal_memory_access"
    NETWORK_ERROR = "network_error"
    NCCL_ERROR = "nccl_error"
    NCCL_TIMEOUT = "nccl_timeout"
    APPLICATION_EXCEPTION = "application_exception"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Advice:
    title: str
    what_to_do: str


#: Cause -> (title, what to do). An XID's advice adds NVIDIA's action for its code.
ADVICE: Final[dict[Cause, Advice]] = {
    Cause.GPU_XID: Advice(
        "XID error on one of the job's GPUs",
        "Act on the GPU as NVIDIA's catalogue says for the code (reset the GPU, or drain and "
        "replace the node for a fatal code); resubmit the job from its last checkpoint on "
        "healthy GPUs. The other ranks' NCCL errors and timeouts follow from this GPU.",
    ),
    Cause.GPU_FAULT: Advice(
        "GPU fault reported by CUDA",
        "CUDA reported a fault of the GPU itself (its memory's uncorrectable ECC error, or its "
        "NVLink's), not of the code. Find the GPU in the node's kernel log (its XID) and "
        "nvidia-smi -q (ECC errors, retired pages or remapped rows); drain the node and reset "
        "or replace the GPU, then resume the job from its last checkpoint on healthy GPUs.",
    ),
    Cause.GPU_UNAVAILABLE: Advice(
        "No usable GPU for the job",
        "CUDA found the job's GPU busy, missing or not ready (another process holding it in "
        "exclusive compute mode, a GPU in a bad state, Fabric Manager not running, a driver "
        "older than the image's CUDA). Check the node: nvidia-smi (processes, compute mode), "
        "its kernel log's XIDs, the NVIDIA device plugin and driver; cordon it if it recurs.",
    ),
    Cause.SPOT_INTERRUPTION: Advice(
        "Spot interruption of the node",
        "EC2 reclaimed the Spot instance (two minutes' notice). Checkpoint more often than the "
        "interruption rate, resume from the last checkpoint, or run long jobs on On-Demand or "
        "reserved capacity (Capacity Blocks).",
    ),
    Cause.NODE_LOST: Advice(
        "Node not ready or lost",
        "The kubelet stopped reporting, so the job's pods on that node were lost. Read the "
        "node's host and dataplane logs for the reason (hardware, kernel, network); cordon it "
        "if it recurs, then resume from the last checkpoint.",
    ),
    Cause.IO_ERROR: Advice(
        "I/O error on a disk",
        "The kernel reported failed reads or writes on a block device or file system. Check "
        "the volume (EBS status checks, instance store health); replace the node or volume if "
        "errors repeat, and keep checkpoints off the failing device.",
    ),
    Cause.KERNEL_OOM_KILLER: Advice(
        "Kernel OOM killer (the node ran out of memory)",
        "The node's memory ran out and the kernel killed a process. Set memory requests equal "
        "to limits for training pods so the scheduler does not overcommit the node, and lower "
        "host-memory use (data loader workers, pinned memory, prefetch).",
    ),
    Cause.EVICTED: Advice(
        "Pod evicted by the kubelet",
        "The kubelet evicted the pod under node pressure (memory, disk). Give training pods "
        "Guaranteed QoS (requests equal to limits) and enough ephemeral storage; see which "
        "resource the eviction message names.",
    ),
    Cause.CONTAINER_MEMORY_LIMIT: Advice(
        "Container over its memory limit (OOMKilled)",
        "The container used more host memory than its limit and was killed. Raise the "
        "container's memory limit, or lower host-memory use (data loader workers, prefetch "
        "factor, pinned buffers, dataset caching).",
    ),
    Cause.DISK_FULL: Advice(
        "Disk full",
        "A write failed with no space left. Free or enlarge the volume the job writes to "
        "(checkpoints, caches, /tmp, /dev/shm), and keep fewer checkpoints on local disk.",
    ),
    Cause.CUDA_OUT_OF_MEMORY: Advice(
        "CUDA out of memory",
        "The GPU's memory ran out. Lower the micro-batch size (keep the global batch with "
        "gradient accumulation), use activation checkpointing or sharding (FSDP/ZeRO), or set "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True where fragmentation is reported.",
    ),
    # cudaErrorIllegalAddress: "The device encountered a load or store instruction on an
    # invalid memory address. This leaves the process in an inconsistent state and any further
    # CUDA work will return the same error. To continue using CUDA, the process must be
    # terminated and relaunched." (CUDA Runtime API, enum cudaError). Kernel launches are
    # asynchronous, so the error surfaces at a later call: PyTorch prints "CUDA kernel errors
    # might be asynchronously reported at some other API call, so the stacktrace below might
    # be incorrect. For debugging consider passing CUDA_LAUNCH_BLOCKING=1.", and CUDA's
    # programming guide: setting CUDA_LAUNCH_BLOCKING to 1 disables the asynchronicity of
    # kernel launches. XID 13 (Graphics Engine Exception) and 31 (GPU memory page fault) are
    # the driver's record of such a fault on the GPU (the XID table, contract/xid.py).
    Cause.CUDA_ILLEGAL_MEMORY_ACCESS: Advice(
        "Illegal memory access in a CUDA kernel (reported asynchronously)",
        "A CUDA kernel read or wrote an invalid device address. Kernel errors are reported at "
        "a later CUDA call, so the stack trace may point at the wrong line (often a frame "
        "inside the framework): rerun with CUDA_LAUNCH_BLOCKING=1 to get the call that failed. "
        "Check the node's kernel log for XID 13 or XID 31 in the same minute: one there is the "
        "GPU's record of the fault, and a GPU that logs them across jobs is the fault's cause. "
        "The process cannot use CUDA after this error: restart it from its last checkpoint.",
    ),
    Cause.NETWORK_ERROR: Advice(
        "EFA or network error",
        "The network under NCCL failed (EFA, libfabric, aws-ofi-nccl). Check the EFA devices "
        "and security group (all traffic within the group), the aws-ofi-nccl and libfabric "
        "versions, and the node's network counters; rerun nccl-tests on the nodes involved.",
    ),
    Cause.NCCL_ERROR: Advice(
        "NCCL error",
        "A collective failed. A remote rank exiting is the usual reason: find the first rank "
        "that failed (its own log names the cause); otherwise rerun with NCCL_DEBUG=WARN.",
    ),
    Cause.NCCL_TIMEOUT: Advice(
        "NCCL collective timeout",
        "A collective waited past its timeout: one rank stalled or died. Look for the rank "
        "that did not reach the collective (its GPU, node or data loader); rerun with "
        "TORCH_NCCL_TRACE_BUFFER_SIZE set to get the flight recorder's dump.",
    ),
    Cause.APPLICATION_EXCEPTION: Advice(
        "Application exception",
        "The training code raised an exception. Fix it at the frame cited; if the same "
        "signature recurs across nodes, suspect the code or the data it reads.",
    ),
    Cause.UNKNOWN: Advice(
        "No known cause in the lines read",
        "Nothing in these lines names a cause. Read the pod's previous container log "
        "(kubectl logs --previous), its events (kubectl describe pod), and the node's host "
        "log (journalctl -k) around the time it failed.",
    ),
}


#: Root cause first: a lost GPU or node explains the OOMs, NCCL errors and timeouts its peers
#: print after it (a fatal XID names the GPU's fault more exactly than CUDA's error for it,
#: and a GPU CUDA could not use explains what failed after); a concrete resource exhausted
#: explains the collective that then failed; an XID that NVIDIA calls an application fault
#: (13, 31, 43, 45) explains less than an out of memory in the same lines (XID 45 follows
#: every killed process), so it ranks below them; an illegal memory access ranks below any
#: XID (its XID 13 or 31 names the GPU and the fault) and above the NCCL errors its peers
#: print after it.
_ORDER: Final = (
    (Cause.GPU_XID, True),
    (Cause.GPU_FAULT, None),
    (Cause.SPOT_INTERRUPTION, None),
    (Cause.NODE_LOST, None),
    (Cause.GPU_UNAVAILABLE, None),
    (Cause.IO_ERROR, None),
    (Cause.KERNEL_OOM_KILLER, None),
    (Cause.EVICTED, None),
    (Cause.CONTAINER_MEMORY_LIMIT, None),
    (Cause.DISK_FULL, None),
    (Cause.CUDA_OUT_OF_MEMORY, None),
    (Cause.GPU_XID, False),
    (Cause.CUDA_ILLEGAL_MEMORY_ACCESS, None),
    (Cause.NETWORK_ERROR, None),
    (Cause.NCCL_ERROR, None),
    (Cause.NCCL_TIMEOUT, None),
    (Cause.APPLICATION_EXCEPTION, None),
    (Cause.UNKNOWN, None),
)


def precedence(cause: Cause, *, fatal: bool = False) -> int:
    """Lower is nearer the root; ``fatal`` only matters for an XID."""
    key = (cause, fatal if cause is Cause.GPU_XID else None)
    return _ORDER.index(key)
