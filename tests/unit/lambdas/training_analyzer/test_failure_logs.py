"""A failed job's cause from the Container Insights log groups, read by stream-name prefix with
a real botocore client (moto): its pods' container logs and its nodes' host logs in the window
around the failure, nothing of other pods, other nodes or other hours."""

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from lambdas.shared.findings import Kind, Severity
from lambdas.training_analyzer.failure_logs import (
    MAX_EVENTS,
    FailedPod,
    explain_job_failure,
    failure_window,
    node_names,
    stream_prefixes,
)
from tests.unit.reference_data import failure_log_corpus

SAMPLES = {s.id: s for s in failure_log_corpus()}
NODE = "ip-10-0-7-41.us-west-2.compute.internal"
OTHER_NODE = "ip-10-0-9-12.us-west-2.compute.internal"
GROUPS = "/aws/containerinsights/train"
FAILED_AT = time.time() - 3600
CONTAINER_ID = "0f32894de86edf3d3832702af794874ef8d400b4969acdea4976b12040756e0d"


def app_stream(node: str, pod: str, container_id: str = CONTAINER_ID) -> str:
    return f"{node}-application.var.log.containers.{pod}_ml_pytorch-{container_id}.log"


def app_record(line: str) -> str:
    """An application log event as Fluent Bit's kubernetes filter sends it."""
    return json.dumps(
        {"log": line + "\n", "stream": "stderr", "kubernetes": {"pod_name": "p", "host": NODE}}
    )


def host_record(line: str) -> str:
    return json.dumps({"message": line, "ec2_instance_id": "i-0abc1234def567890"})


@pytest.fixture
def logs() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client(
            "logs", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        for kind in ("application", "host"):  # no dataplane group: read as missing
            client.create_log_group(logGroupName=f"{GROUPS}/{kind}")
        yield client


def put(client: Any, group: str, stream: str, *events: tuple[float, str]) -> None:
    client.create_log_stream(logGroupName=f"{GROUPS}/{group}", logStreamName=stream)
    client.put_log_events(
        logGroupName=f"{GROUPS}/{group}",
        logStreamName=stream,
        logEvents=[{"timestamp": int(t * 1000), "message": m} for t, m in events],
    )


def test_the_xid_on_the_jobs_node_is_named_from_the_host_log(logs: Any) -> None:
    timeout = SAMPLES["nccl-timeout-allreduce-2025"].lines[0]
    xid = SAMPLES["xid-79-nvsentinel"].lines[0]
    put(
        logs,
        "application",
        app_stream(NODE, "train-worker-1"),
        (FAILED_AT - 60, app_record(timeout)),
    )
    # Another pod on the same node, another node's host log, and the job's node an hour
    # earlier: none of them is the job's failure.
    put(logs, "application", app_stream(NODE, "train-worker-10"),
        (FAILED_AT - 50, app_record(SAMPLES["cuda-oom-torch-2x"].lines[0])))  # fmt: skip
    put(logs, "host", f"{OTHER_NODE}.host.dmesg",
        (FAILED_AT - 40, host_record(SAMPLES["xid-48-64-journal"].lines[1])))  # fmt: skip
    put(logs, "host", f"{NODE}.host.dmesg",
        (FAILED_AT - 7200, host_record(SAMPLES["global-oom-dmesg-T"].lines[1])),
        (FAILED_AT - 30, host_record(xid)))  # fmt: skip

    finding = explain_job_failure(
        logs,
        "train",
        "llm-7b",
        [FailedPod("train-worker-1", NODE)],
        window=failure_window(FAILED_AT),
    )
    assert finding.kind is Kind.TRAINING_FAILURE_CAUSE
    assert finding.resource == "job/llm-7b"
    assert finding.severity is Severity.CRITICAL
    assert finding.summary == "llm-7b failed: XID 79 on GPU 0000:44:00: GPU has fallen off the bus."
    evidence = finding.evidence
    assert evidence["cause"] == "gpu_xid"
    assert [line["text"] for line in evidence["lines"]] == [xid]
    assert evidence["also_seen"] == ["nccl_timeout"]
    assert evidence["lines_read"] == 2
    assert evidence["pods"] == ["train-worker-1"]
    assert evidence["nodes"] == [NODE]
    assert evidence["log_groups_missing"] == [f"{GROUPS}/dataplane"]


def test_a_nodes_host_log_is_read_once_for_all_the_jobs_pods_on_it(logs: Any) -> None:
    """Four ranks on one node: its XID line is one line read and one cited, not four."""
    xid = SAMPLES["xid-79-nvsentinel"].lines[0]
    pods = [FailedPod(f"train-worker-{rank}", NODE) for rank in range(4)]
    for pod in pods:
        put(logs, "application", app_stream(NODE, pod.pod), (FAILED_AT - 60, app_record("step")))
    put(logs, "host", f"{NODE}.host.dmesg", (FAILED_AT - 30, host_record(xid)))

    finding = explain_job_failure(logs, "train", "llm-7b", pods, window=failure_window(FAILED_AT))
    assert finding.evidence["cause"] == "gpu_xid"
    assert [line["text"] for line in finding.evidence["lines"]] == [xid]
    assert finding.evidence["lines_read"] == 5


def test_a_pod_restarted_many_times_is_read_whole(logs: Any) -> None:
    """Each restart of a container is a stream of its own: every one is read."""
    restarts = 120
    for n in range(restarts):
        line = "step 10 loss 2.5" if n < restarts - 1 else SAMPLES["cuda-oom-torch-2x"].lines[0]
        put(logs, "application", app_stream(NODE, "train-worker-1", f"{n:064x}"),
            (FAILED_AT - restarts + n, app_record(line)))  # fmt: skip
    finding = explain_job_failure(
        logs,
        "train",
        "llm-7b",
        [FailedPod("train-worker-1", NODE)],
        window=failure_window(FAILED_AT),
    )
    assert finding.evidence["cause"] == "cuda_out_of_memory"
    assert finding.evidence["lines_read"] == restarts
    assert finding.severity is Severity.WARNING


def test_no_logs_is_an_info_finding_that_says_what_was_read(logs: Any) -> None:
    finding = explain_job_failure(
        logs,
        "train",
        "llm-7b",
        [FailedPod("train-worker-1", NODE)],
        window=failure_window(FAILED_AT),
    )
    assert finding.severity is Severity.INFO
    assert finding.summary == "llm-7b failed; the 0 log lines read name no cause."
    assert finding.evidence["cause"] == "unknown"


def test_stream_prefixes_follow_fluent_bits_names() -> None:
    assert stream_prefixes("train", FailedPod("w-1", NODE)) == [
        (f"{GROUPS}/application", f"{NODE}-application.var.log.containers.w-1_"),
        (f"{GROUPS}/host", f"{NODE}.host."),
        (f"{GROUPS}/dataplane", f"{NODE}-dataplane."),
    ]


def test_the_window_spans_the_failed_hour_with_margins() -> None:
    assert failure_window(7200.0, 10800.0) == (7200.0 - 1800, 10800.0 + 600)
    assert failure_window(7200.0) == (7200.0 - 1800, 7200.0 + 600)


def _calls(client: Any) -> list[str]:
    """The operations the client sends, as botocore names them."""
    sent: list[str] = []
    client.meta.events.register(
        "before-call.cloudwatch-logs.*", lambda model, **_: sent.append(model.name)
    )
    return sent


def test_a_crash_loops_lines_are_read_from_the_end_up_to_the_cap_only(logs: Any) -> None:
    """25,000 lines in the window, the OOM last: two pages from the end (10,000 events a
    page) hold the cap's 20,000 newest; the 5,000 oldest are never read."""
    stream = app_stream(NODE, "train-worker-1")
    logs.create_log_stream(logGroupName=f"{GROUPS}/application", logStreamName=stream)
    count = MAX_EVENTS + 5_000
    lines = [app_record(f"step {n} loss 2.5") for n in range(count - 1)]
    lines.append(app_record(SAMPLES["cuda-oom-torch-2x"].lines[0]))
    first = FAILED_AT - 1500
    for i in range(0, count, 10_000):
        logs.put_log_events(
            logGroupName=f"{GROUPS}/application",
            logStreamName=stream,
            logEvents=[
                {"timestamp": int((first + (i + n) / 100) * 1000), "message": m}
                for n, m in enumerate(lines[i : i + 10_000])
            ],
        )
    sent = _calls(logs)
    finding = explain_job_failure(
        logs, "train", "llm-7b", [FailedPod("train-worker-1", NODE)],
        window=failure_window(FAILED_AT),
    )  # fmt: skip
    assert finding.evidence["cause"] == "cuda_out_of_memory"
    assert finding.evidence["lines_read"] == MAX_EVENTS
    assert finding.evidence["lines"][0]["number"] == MAX_EVENTS
    reads = [op for op in sent if op in ("GetLogEvents", "FilterLogEvents")]
    assert reads == ["GetLogEvents", "GetLogEvents"]


def _syslog(line: str) -> str:
    """A /var/log/messages record as Fluent Bit's syslog parser makes it: the kernel's line,
    its ident, the node's short name."""
    return json.dumps({"host": NODE.partition(".")[0], "ident": "kernel", "message": line})


def test_a_kernel_line_in_both_dmesg_and_messages_is_read_once(logs: Any) -> None:
    """The driver's XID reaches /var/log/dmesg and /var/log/messages: one line read, one cited.
    A line the kernel printed twice stays twice; /var/log/secure's logins are not read."""
    xid = SAMPLES["xid-79-nvsentinel"].lines[0]
    oom = "Out of memory: Killed process 15784 (python3) total-vm:11964kB, anon-rss:4288kB"
    put(logs, "host", f"{NODE}.host.dmesg",
        (FAILED_AT - 40, host_record(f"[ 1843.308145] {xid}")),
        (FAILED_AT - 30, host_record(f"[ 1850.100000] {oom}")),
        (FAILED_AT - 20, host_record(f"[ 1860.100000] {oom}")))  # fmt: skip
    put(logs, "host", f"{NODE}.host.messages",
        (FAILED_AT - 39, _syslog(xid)), (FAILED_AT - 29, _syslog(oom)))  # fmt: skip
    put(logs, "host", f"{NODE}.host.secure",
        (FAILED_AT - 35, _syslog("Accepted publickey for ec2-user from 10.0.0.5")))  # fmt: skip

    finding = explain_job_failure(
        logs, "train", "llm-7b", [FailedPod("train-worker-1", NODE)],
        window=failure_window(FAILED_AT),
    )  # fmt: skip
    assert finding.evidence["cause"] == "gpu_xid"
    assert [line["text"] for line in finding.evidence["lines"]] == [xid]
    # The XID once, the OOM twice (printed twice): 3 lines, not 5, and no login.
    assert finding.evidence["lines_read"] == 3


def test_a_host_logs_short_hostname_is_the_node_named_in_full() -> None:
    """Container Insights' host logs name the host (``ip-10-0-5-21``), Kubernetes the node
    (``ip-10-0-5-21.ec2.internal``): one node, named once, in full."""
    names = {"ip-10-0-5-21.ec2.internal", "ip-10-0-5-21", "ip-10-0-5-20.ec2.internal", ""}
    assert node_names(names) == ["ip-10-0-5-20.ec2.internal", "ip-10-0-5-21.ec2.internal"]
    # A short name with no full one is kept; a name that merely starts alike is another node.
    assert node_names(["ip-10-0-5-2", "ip-10-0-5-21.ec2.internal"]) == [
        "ip-10-0-5-2",
        "ip-10-0-5-21.ec2.internal",
    ]
