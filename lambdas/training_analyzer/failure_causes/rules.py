"""Which cause one log line names. Each pattern is the text the named program prints; the
corpus in tests/data/failure_logs/ holds a sourced example of each."""

import re
from dataclasses import dataclass, field
from typing import Final

from gpu_insights_agent.contract.xid import (
    XidLineError,
    XidSeverity,
    describe_xid,
    parse_kernel_xid_line,
)
from lambdas.training_analyzer.failure_causes.causes import Cause
from lambdas.training_analyzer.failure_causes.cuda_errors import CudaFault, cuda_error
from lambdas.training_analyzer.failure_causes.lines import LogLine


@dataclass(frozen=True)
class Match:
    cause: Cause
    line: LogLine
    #: For an XID: whether NVIDIA's action for the code is more than restarting the application.
    fatal: bool = False
    detail: dict[str, str] = field(default_factory=dict)


def _any(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns))


#: Checked in this order; the first that matches a line names its cause. Each rule's needles
#: are literal strings at least one of which every line it matches contains.
_RULES: Final[tuple[tuple[Cause, tuple[str, ...], re.Pattern[str]], ...]] = (
    # Karpenter's events (aws/karpenter-provider-aws pkg/controllers/interruption/events:
    # SpotInterrupted "Spot interruption warning was triggered", TerminatingOnInterruption),
    # its controller log's message kinds (SpotInterruptionKind, spot_interrupted), and the AWS
    # Node Termination Handler's SPOT_ITN event ("Spot ITN received. Instance will be ...").
    (
        Cause.SPOT_INTERRUPTION,
        ("Spot", "spot", "SPOT_ITN", "Interruption triggered"),
        _any(
            r"\bSpotInterrupted\b",
            r"[Ss]pot interruption warning was triggered",
            r"Interruption triggered termination for the Node",
            r"\bSpotInterruptionKind\b",
            r'"messageKind": ?"spot_interrupted"',
            r"Spot ITN received",
            r"\bSPOT_ITN\b",
        ),
    ),
    # The node lifecycle controller's NodeNotReady event ("Node is not ready"), the condition
    # message "Kubelet stopped posting node status.", the kubelet's "Node became not ready" and
    # a pod's NodeLost status.
    (
        Cause.NODE_LOST,
        ("NodeNotReady", "Kubelet stopped posting", "Node became not ready", "NodeLost"),
        _any(
            r"\bNodeNotReady\b",
            r"Kubelet stopped posting node status",
            r"Node became not ready",
            r"\bNodeLost\b",
        ),
    ),
    # The kernel's block layer and file systems.
    (
        Cause.IO_ERROR,
        ("EXT4-fs", "I/O error", "Input/output error"),
        _any(
            r"EXT4-fs error",
            r"\bI/O error, dev \S+",
            r"Buffer I/O error on dev",
            r"XFS \([^)]*\): .*I/O error",
            r"EXT4-fs (?:warning )?\([^)]*\):? .*I/O error",
            r"\[Errno 5\] Input/output error",
        ),
    ),
    # The kernel's OOM killer outside any memory cgroup (mm/oom_kill.c prints "Out of memory:
    # Killed process" for the whole system, "Memory cgroup out of memory: ..." for a cgroup).
    (
        Cause.KERNEL_OOM_KILLER,
        ("Out of memory: Kill", "CONSTRAINT_NONE", "global_oom", "System OOM"),
        _any(
            r"(?<!Memory cgroup )\bOut of memory: Kill(?:ed)? process",
            r"oom-kill:constraint=CONSTRAINT_NONE",
            r"\bglobal_oom\b",
            r"System OOM encountered",
        ),
    ),
    # The kubelet's node-pressure eviction (pod status reason Evicted, "The node was low on
    # resource: memory. ...", "The node had condition: [MemoryPressure]."), and the kubelet's
    # own line in the dataplane group: klog.InfoS("Eviction manager: pod is evicted
    # successfully", "pod", klog.KObj(pod)) (kubernetes/kubernetes,
    # pkg/kubelet/eviction/eviction_manager.go, evictPod).
    (
        Cause.EVICTED,
        (
            "The node was low on resource",
            "The node had condition",
            "Evicted",
            "Eviction manager: pod is evicted",
        ),
        _any(
            r"The node was low on resource: [\w-]+",
            r"The node had condition: \[\w+Pressure\]",
            r"\bEvicted\b",
            r"Eviction manager: pod is evicted successfully",
        ),
    ),
    (
        Cause.CONTAINER_MEMORY_LIMIT,
        ("Memory cgroup out of memory", "CONSTRAINT_MEMCG", "OOM", "memory: usage"),
        _any(
            r"Memory cgroup out of memory: Kill(?:ed)? process",
            r"oom-kill:constraint=CONSTRAINT_MEMCG",
            r"\bOOMKilled\b",
            r"\bOOM ?Killed\b",
            # The cgroup's usage at its limit, printed by the OOM killer for a memory cgroup.
            r"memory: usage \d+kB, limit \d+kB, failcnt \d+",
        ),
    ),
    (
        Cause.DISK_FULL,
        ("No space left", "Errno 28", "StorageFull", "Disk quota"),
        _any(
            r"No space left on device",
            r"\[Errno 28\]",
            r"\bStorageFull\b",
            r"Disk quota exceeded",
        ),
    ),
    # PyTorch's caching allocator (torch.OutOfMemoryError, formerly torch.cuda.OutOfMemoryError,
    # before that RuntimeError: CUDA out of memory), CUDA's own error string, and NCCL's.
    (
        Cause.CUDA_OUT_OF_MEMORY,
        ("out of memory", "OutOfMemoryError", "CUBLAS_STATUS_ALLOC_FAILED"),
        _any(
            r"CUDA out of memory",
            r"\bOutOfMemoryError\b",
            r"CUDA error: out of memory",
            r"Cuda failure 'out of memory'",
            r"CUBLAS_STATUS_ALLOC_FAILED",
        ),
    ),
    # aws-ofi-nccl's warnings ("NCCL WARN NET/OFI ..."), libfabric's EFA provider, NCCL's
    # InfiniBand transport.
    (
        Cause.NETWORK_ERROR,
        ("NET/OFI", "libfabric", "fi_getinfo", "NET/IB"),
        _any(
            r"NCCL WARN NET/OFI",
            r"libfabric:.*:efa:.*<(?:warn|error)>",
            r"fi_getinfo: provider efa output empty list",
            r"NCCL WARN NET/IB",
        ),
    ),
    (
        Cause.NCCL_ERROR,
        ("nccl", "NCCL"),
        _any(
            r"\bnccl(?:Internal|System|Remote|UnhandledCuda|InvalidUsage|InvalidArgument)Error\b",
            r"NCCL error in: ",
            r"NCCL communicator was aborted",
            r"NCCL WARN .*(?:Connection closed|Connection reset|Broken pipe|failed)",
        ),
    ),
    # PyTorch's ProcessGroupNCCL watchdog.
    (
        Cause.NCCL_TIMEOUT,
        ("Watchdog caught", "timed out in blocking wait", "collective operation timeout"),
        _any(
            r"Watchdog caught collective operation timeout",
            r"timed out in blocking wait",
            r"collective operation timeout",
        ),
    ),
)

_NEEDLES: Final = re.compile(
    "|".join(sorted({re.escape(n) for _, needles, _ in _RULES for n in needles}, key=len)[::-1])
)

#: Newer drivers print the bus loss without an XID line (NVIDIA/NVSentinel#155): "NVRM: The
#: NVIDIA GPU 0000:b3:00.0 ... has fallen off the bus"; it is XID 79's meaning.
_GPU_BUS: Final = re.compile(
    r"GPU (?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?)"
)
_XID_FALLEN_OFF_BUS: Final = 79


def _xid(line: LogLine) -> Match | None:
    try:
        xid = parse_kernel_xid_line(line.text)
    except XidLineError:
        return None
    if xid is not None:
        code, pci = xid.code, xid.pci_bus_id
    else:
        if "NVRM: " not in line.text or "fallen off the bus" not in line.text:
            return None
        bus = _GPU_BUS.search(line.text)
        code, pci = _XID_FALLEN_OFF_BUS, (bus["pci"].lower() if bus else "")
    row = describe_xid(code)
    return Match(
        cause=Cause.GPU_XID,
        line=line,
        fatal=row.severity is XidSeverity.FATAL,
        detail={
            "xid": str(code),
            "pci_bus_id": pci,
            "meaning": row.meaning,
            "nvidia_action": row.nvidia_action,
        },
    )


#: Whose fault a CUDA error is (cuda_errors.py), as the cause it names.
_CUDA_CAUSES: Final = {
    CudaFault.DEVICE: Cause.GPU_FAULT,
    CudaFault.UNAVAILABLE: Cause.GPU_UNAVAILABLE,
    CudaFault.ILLEGAL_ADDRESS: Cause.CUDA_ILLEGAL_MEMORY_ACCESS,
    CudaFault.APPLICATION: Cause.APPLICATION_EXCEPTION,
}


def _cuda(line: LogLine) -> Match | None:
    error = cuda_error(line.text)
    if error is None:
        return None
    detail = {
        "cuda_error": error.name,
        "cuda_code": str(error.code),
        "cuda_message": error.messages[0],
    }
    return Match(cause=_CUDA_CAUSES[error.fault], line=line, detail=detail)


def match_line(line: LogLine) -> Match | None:
    """The cause the line names, or None."""
    xid = _xid(line)
    if xid is not None:
        return xid
    cuda = _cuda(line)
    if cuda is not None:
        return cuda
    text = line.text
    # One scan for every rule's needles first: most lines of a log name no cause.
    found = set(_NEEDLES.findall(text))
    if not found:
        return None
    for cause, needles, pattern in _RULES:
        if not found.isdisjoint(needles) and pattern.search(text):
            return Match(cause=cause, line=line)
    return None
