"""The root cause among several, what is cited, and what each diagnosis says."""

import pytest

from gpu_insights_agent.contract.xid import XID_CODES
from lambdas.training_analyzer.failure_causes import ADVICE, Cause, classify_text
from lambdas.training_analyzer.failure_causes.classify import MAX_CITED

# Sourced lines, reused from tests/data/failure_logs/corpus.json.
XID_79 = "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus"
XID_45 = (
    "[14370.688139] NVRM: Xid (PCI:0000:0a:00): 45, pid='<unknown>', name=<unknown>, Ch 00000008"
)
XID_13 = (
    "[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, "
    "Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter"
)
TIMEOUT = (
    "[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, "
    "NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out."
)
GLOBAL_OOM = (
    "May 15 23:09:30 host kernel: [  518.050606] Out of memory: Killed process 15784 (python3) "
    "total-vm:11964kB, anon-rss:4288kB, file-rss:3028kB, shmem-rss:0kB"
)
MEMCG_OOM = (
    "[18026.221140] Memory cgroup out of memory: Killed process 140339 (python3) "
    "total-vm:120832kB, anon-rss:15596kB, file-rss:8924kB, shmem-rss:0kB"
)
CUDA_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.78 GiB. GPU 0 has a total "
    "capacity of 31.47 GiB of which 12.73 GiB is free."
)
NCCL_REMOTE = (
    "ncclRemoteError: A call failed possibly due to a network error or a remote process "
    "exiting prematurely."
)
SPOT = (
    "49m         Warning   SpotInterrupted               node/ip-10-1-3-41.ec2.internal    "
    "Spot interruption warning was triggered"
)


def text(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def test_an_xid_on_a_ranks_gpu_explains_the_timeout_and_names_gpu_code_and_meaning() -> None:
    diagnosis = classify_text(text(TIMEOUT, TIMEOUT, XID_79))
    assert diagnosis.cause is Cause.GPU_XID
    assert [(c.number, c.text) for c in diagnosis.lines] == [(3, XID_79)]
    assert diagnosis.detail == {
        "xid": "79",
        "pci_bus_id": "0000:44:00",
        "meaning": XID_CODES[79].meaning,
        "nvidia_action": "RESTART_BM",
    }
    assert diagnosis.title == f"XID 79 on GPU 0000:44:00: {XID_CODES[79].meaning}"
    assert diagnosis.recommendation.endswith("NVIDIA's action for XID 79: RESTART_BM.")
    assert diagnosis.also_seen == [Cause.NCCL_TIMEOUT]


def test_the_xid_after_every_killed_process_does_not_hide_the_oom_killer() -> None:
    diagnosis = classify_text(text(GLOBAL_OOM, XID_45))
    assert diagnosis.cause is Cause.KERNEL_OOM_KILLER
    assert diagnosis.also_seen == [Cause.GPU_XID]


def test_an_application_fault_xid_ranks_below_cuda_oom_but_above_nccl() -> None:
    assert classify_text(text(XID_13, CUDA_OOM)).cause is Cause.CUDA_OUT_OF_MEMORY
    assert classify_text(text(NCCL_REMOTE, XID_13)).cause is Cause.GPU_XID


@pytest.mark.parametrize(
    ("lines", "cause"),
    [
        ((TIMEOUT, CUDA_OOM), Cause.CUDA_OUT_OF_MEMORY),
        ((TIMEOUT, NCCL_REMOTE), Cause.NCCL_ERROR),
        ((NCCL_REMOTE, SPOT), Cause.SPOT_INTERRUPTION),
        ((MEMCG_OOM, GLOBAL_OOM), Cause.KERNEL_OOM_KILLER),
        ((CUDA_OOM, MEMCG_OOM), Cause.CONTAINER_MEMORY_LIMIT),
        ((SPOT, XID_79), Cause.GPU_XID),
    ],
)
def test_the_cause_nearer_the_root_wins_in_either_order(
    lines: tuple[str, str], cause: Cause
) -> None:
    assert classify_text(text(*lines)).cause is cause
    assert classify_text(text(*reversed(lines))).cause is cause


def test_an_exception_names_its_type_and_last_frame_and_cites_both() -> None:
    log = text(
        "Traceback (most recent call last):",
        '  File "/app/train.py", line 55, in <module>',
        "    main()",
        '  File "/app/data.py", line 118, in collate',
        "    padded = torch.stack(batch, dim=0)",
        "RuntimeError: stack expects each tensor to be equal size, but got [24, 32, 64] at entry 0",
    )
    diagnosis = classify_text(log)
    assert diagnosis.cause is Cause.APPLICATION_EXCEPTION
    assert diagnosis.title == "Application exception: RuntimeError in collate"
    assert [c.number for c in diagnosis.lines] == [4, 6]
    assert diagnosis.detail["last_frame"] == 'File "/app/data.py", line 118, in collate'
    assert diagnosis.signature == (
        "RuntimeError: stack expects each tensor to be equal size, but got [<n>, <n>, <n>] at "
        "entry <n> in collate"
    )


def test_the_launchers_wrapper_does_not_hide_the_childs_exception() -> None:
    log = text(
        '  File "/app/train.py", line 9, in step',
        "ValueError: loss is nan",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    )
    diagnosis = classify_text(log)
    assert diagnosis.detail["exception"] == "ValueError"


def test_unknown_cites_nothing_and_counts_what_it_read() -> None:
    diagnosis = classify_text(text("step 1 loss 2.5", "step 2 loss 2.4", "done"))
    assert diagnosis.cause is Cause.UNKNOWN
    assert diagnosis.lines == []
    assert diagnosis.lines_read == 3
    assert diagnosis.recommendation == ADVICE[Cause.UNKNOWN].what_to_do


def test_citations_stop_at_the_cap() -> None:
    diagnosis = classify_text(text(*[TIMEOUT] * (MAX_CITED + 3)))
    assert [c.number for c in diagnosis.lines] == list(range(1, MAX_CITED + 1))


def test_every_cause_has_advice() -> None:
    assert set(ADVICE) == set(Cause)
    assert all(a.title and a.what_to_do for a in ADVICE.values())


def test_the_kubelets_own_eviction_line_names_the_eviction() -> None:
    """What the dataplane group holds of an eviction: the kubelet's klog line
    (kubernetes/kubernetes pkg/kubelet/eviction/eviction_manager.go), as journald prints it."""
    line = (
        "Oct 12 19:34:45 ip-10-0-7-41 kubelet[2480]: I1012 19:34:45.445172    2480 "
        'eviction_manager.go:595] "Eviction manager: pod is evicted successfully" '
        'pod="ml/trainer-0"'
    )
    diagnosis = classify_text(line)
    assert diagnosis.cause is Cause.EVICTED
    # Cited without journald's prefix, as every line is.
    assert [c.text for c in diagnosis.lines] == [line.split("kubelet[2480]: ")[1]]


def test_a_json_line_nested_deeper_than_the_stack_costs_nothing_but_its_own_reading() -> None:
    """``json.loads`` raises RecursionError on such a line; the training analyzer classifies
    every failed job of the cluster with this, so the line is read as plain text."""
    deep = "[" * 100_000 + "]" * 100_000
    found = classify_text('{"log": ' + deep + "}\nRuntimeError: CUDA error: out of memory\n")
    assert (found.cause, found.lines_read) == (Cause.CUDA_OUT_OF_MEMORY, 2)
    assert classify_text('{"events": ' + deep + "}").cause is Cause.UNKNOWN


ILLEGAL_ACCESS = [
    "Traceback (most recent call last):",
    '  File "/opt/conda/lib/python3.10/site-packages/torch/_tensor.py", line 522, in backward',
    "    torch.autograd.backward(",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
]


def test_an_illegal_memory_access_is_its_own_cause_not_the_frame_inside_torch() -> None:
    """Before: "Application exception: RuntimeError in backward ... Fix it at the frame
    cited", citing a frame inside torch that the log itself says may be wrong."""
    found = classify_text("\n".join(ILLEGAL_ACCESS))
    assert found.cause is Cause.CUDA_ILLEGAL_MEMORY_ACCESS
    assert [c.number for c in found.lines] == [4]
    assert found.title == (
        "Illegal memory access in a CUDA kernel (reported asynchronously): an illegal memory "
        "access was encountered (cudaErrorIllegalAddress, 700)"
    )
    assert "CUDA_LAUNCH_BLOCKING=1" in found.recommendation
    assert "XID 13 or XID 31 in the same minute" in found.recommendation
    assert "Fix it at the frame cited" not in found.recommendation


@pytest.mark.parametrize("code", [13, 31])
def test_the_gpus_xid_in_the_same_lines_outranks_the_illegal_access(code: int) -> None:
    xid = f"NVRM: Xid (PCI:0000:53:00): {code}, pid=4123, name=python, Ch 00000008"
    found = classify_text("\n".join([xid, *ILLEGAL_ACCESS]))
    assert (found.cause, found.detail["xid"]) == (Cause.GPU_XID, str(code))
    assert Cause.CUDA_ILLEGAL_MEMORY_ACCESS in found.also_seen
