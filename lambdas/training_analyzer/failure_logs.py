"""What Container Insights collected around a failed job's pods, and the finding that names
the failure's cause from it.

Fluent Bit, as Container Insights deploys it, names each log stream by its node and source
(aws-samples/amazon-cloudwatch-container-insights, .../fluent-bit/fluent-bit.yaml: the output's
``log_stream_prefix`` is ``${HOST_NAME}-`` for the application and dataplane groups and
``${HOST_NAME}.`` for the host group, and the record's tag follows it: ``application.var.log.
containers.<pod>_<namespace>_<container>-<id>.log``, ``dataplane.systemd.<unit>``,
``host.dmesg``). So a pod's container logs and its node's kernel and kubelet logs are found by
stream-name prefix: listed with DescribeLogStreams (paged), then each stream read from its end
with GetLogEvents up to the event cap, and the node's kernel lines, which its dmesg and
messages streams both carry, read once. GetLogEvents has no per-byte charge, unlike a Logs
Insights query over the whole group."""

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from gpu_insights_agent.contract.metrics import container_insights_log_group_prefix
from lambdas.shared.findings import Finding, Kind, Severity
from lambdas.training_analyzer.analysis import ANALYZER
from lambdas.training_analyzer.failure_causes import Cause, Diagnosis, classify_text, read_lines

#: The host group's streams that carry the kernel's lines: Fluent Bit's tail inputs tagged
#: ``host.dmesg`` (/var/log/dmesg) and ``host.messages`` (/var/log/messages); its third,
#: ``host.secure`` (/var/log/secure), holds logins (fluent-bit.yaml, ``host-log.conf``).
KERNEL_STREAMS: Final = ("dmesg", "messages")
#: Events read per failed job at most: the classifier cites a handful, and a crash loop can
#: print millions. The newest are kept (a failure is printed last).
MAX_EVENTS: Final = 20_000
#: Pages read of one stream at most, empty ones included: a bound that a server's answers
#: cannot stretch (the cap is two full pages of 10,000 events).
MAX_PAGES: Final = 50
#: The window read around the failure: the minutes before it, and a few after (the kubelet's
#: and the node's lines about a pod's end follow its last line).
BEFORE_S: Final = 30 * 60
AFTER_S: Final = 10 * 60

#: The causes that take a node or GPU out of service: the finding is critical.
_CRITICAL: Final = frozenset(
    {Cause.GPU_XID, Cause.GPU_FAULT, Cause.NODE_LOST, Cause.IO_ERROR, Cause.KERNEL_OOM_KILLER}
)


@dataclass(frozen=True)
class FailedPod:
    pod: str
    node: str


def node_names(names: Iterable[str]) -> list[str]:
    """Each node once: a host log's short hostname (``ip-10-0-5-21``) is the node named in full
    (``ip-10-0-5-21.ec2.internal``, the Kubernetes node name) where that is known too."""
    found = {n for n in names if n}
    return sorted(n for n in found if not any(f.startswith(n + ".") for f in found))


def stream_prefixes(cluster: str, failed: FailedPod) -> list[tuple[str, str]]:
    """(log group, stream-name prefix) of the pod's containers and its node's host and
    dataplane logs."""
    groups = container_insights_log_group_prefix(cluster)
    node = failed.node
    return [
        (f"{groups}/application", f"{node}-application.var.log.containers.{failed.pod}_"),
        (f"{groups}/host", f"{node}.host."),
        (f"{groups}/dataplane", f"{node}-dataplane."),
    ]


def _streams(logs: Any, group: str, prefix: str) -> Iterator[str]:
    token: dict[str, str] = {}
    while True:
        page = logs.describe_log_streams(logGroupName=group, logStreamNamePrefix=prefix, **token)
        yield from (s["logStreamName"] for s in page.get("logStreams", []))
        if not page.get("nextToken"):
            return
        token = {"nextToken": page["nextToken"]}


def _newest(
    logs: Any, group: str, stream: str, start_ms: int, end_ms: int, cap: int
) -> list[tuple[int, str, str]]:
    """The stream's newest events in the window, at most ``cap``, oldest first: GetLogEvents
    from the stream's end (``startFromHead`` false: "the latest log events are returned
    first"), paged backward with ``nextBackwardToken`` until it "returns the same token you
    passed in" at the stream's start; a page may be empty "while there are more log events
    available through the token" (CloudWatch Logs API Reference, GetLogEvents). Paging stops
    at the cap: a crash loop's millions of lines cost a page or two, not all of them."""
    pages: list[list[dict[str, Any]]] = []
    token: str | None = None
    read = 0
    for _ in range(MAX_PAGES):
        page = logs.get_log_events(
            logGroupName=group, logStreamName=stream, startTime=start_ms, endTime=end_ms,
            startFromHead=False, **({"nextToken": token} if token else {}),
        )  # fmt: skip
        events = page.get("events", [])
        pages.append(events)
        read += len(events)
        backward = page.get("nextBackwardToken")
        if read >= cap or not backward or backward == token:
            break
        token = backward
    newest = [(e["timestamp"], e["message"], stream) for page in reversed(pages) for e in page]
    return newest[-cap:]


def _kernel_stream(stream: str) -> tuple[str, str] | None:
    """(node, kind) of a node's kernel-log stream (``<node>.host.dmesg`` or
    ``<node>.host.messages``), else None."""
    node, _, kind = stream.rpartition(".host.")
    return (node, kind) if node and kind in KERNEL_STREAMS else None


def kernel_lines_once(events: Iterable[tuple[int, str, str]]) -> list[tuple[int, str, str]]:
    """The events, in time order, with each kernel line of a node read once: the kernel
    prints to both /var/log/dmesg and /var/log/messages (rsyslog's kern facility), which
    Fluent Bit ships as two streams, so a line in one that the other already holds (the same
    text once prefixes and records are read away) is dropped; a line printed twice in one
    stream stays twice."""
    counts: dict[tuple[str, str, str], int] = defaultdict(int)
    kept = []
    for event in sorted(events, key=lambda e: e[0]):
        kernel = _kernel_stream(event[2])
        if kernel is None:
            kept.append(event)
            continue
        node, kind = kernel
        text = "\n".join(line.text for line in read_lines(event[1]))
        other = next(k for k in KERNEL_STREAMS if k != kind)
        counts[(node, kind, text)] += 1
        if counts[(node, kind, text)] > counts[(node, other, text)]:
            kept.append(event)
    return kept


def failure_window(failed_from: float, failed_to: float | None = None) -> tuple[float, float]:
    """The seconds read around a failure known to lie between two times (the hour whose
    ``job_failed`` count rose), or at one."""
    return failed_from - BEFORE_S, (failed_from if failed_to is None else failed_to) + AFTER_S


def read_failure_log(
    logs: Any, cluster: str, pods: Iterable[FailedPod], *, start: float, end: float
) -> tuple[str, list[str]]:
    """The events from ``start`` to ``end`` (epoch seconds) in time order as one log, and the
    log groups that do not exist (Container Insights' logs not turned on): read as absent."""
    start_ms, end_ms = int(start * 1000), int(end * 1000)
    events: list[tuple[int, str, str]] = []
    missing: list[str] = []
    # A node's host and dataplane streams are read once, however many of the job's pods it ran.
    wanted = dict.fromkeys(pair for failed in pods for pair in stream_prefixes(cluster, failed))
    for group, prefix in wanted:
        if group in missing:
            continue
        try:
            names = list(_streams(logs, group, prefix))
        except logs.exceptions.ResourceNotFoundException:
            missing.append(group)
            continue
        if group.endswith("/host"):  # the kernel's lines; not /var/log/secure's logins
            names = [name for name in names if _kernel_stream(name)]
        for name in names:
            events += _newest(logs, group, name, start_ms, end_ms, MAX_EVENTS)
    events = kernel_lines_once(events)
    return "\n".join(message for _, message, _ in events[-MAX_EVENTS:]), missing


def failure_cause_finding(
    job: str, diagnosis: Diagnosis, pods: Iterable[FailedPod], *, missing: Iterable[str] = ()
) -> Finding:
    """The ``training_failure_cause`` finding of one failed job: the cause, the lines that
    decided it, the signature that groups it with others, and what to do."""
    pods = list(pods)
    named = diagnosis.cause is not Cause.UNKNOWN
    severity = (
        Severity.CRITICAL
        if diagnosis.cause in _CRITICAL
        else (Severity.WARNING if named else Severity.INFO)
    )
    summary = (
        f"{job} failed: {diagnosis.title}."
        if named
        else f"{job} failed; the {diagnosis.lines_read:,} log lines read name no cause."
    )
    return Finding(
        kind=Kind.TRAINING_FAILURE_CAUSE,
        resource=f"job/{job}",
        severity=severity,
        summary=summary,
        evidence={
            **diagnosis.to_json(),
            "pods": sorted(p.pod for p in pods),
            "nodes": node_names({p.node for p in pods} | set(diagnosis.nodes)),
            "log_groups_missing": sorted(set(missing)),
        },
        recommendation=diagnosis.recommendation,
        analyzer=ANALYZER,
    )


def explain_job_failure(
    logs: Any, cluster: str, job: str, pods: Iterable[FailedPod], *, window: tuple[float, float]
) -> Finding:
    """Read the logs of a failed job's pods and nodes in ``window`` (see ``failure_window``)
    and name the cause in a finding."""
    pods = list(pods)
    text, missing = read_failure_log(logs, cluster, pods, start=window[0], end=window[1])
    return failure_cause_finding(job, classify_text(text), pods, missing=missing)
