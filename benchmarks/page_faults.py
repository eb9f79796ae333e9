"""Fault injection on the pager's path: every fault pages once, no bad input stops or loses a
page. Sections, each a function returning its figures; ``main`` runs them all.

1. XID batch: 1,000 XID documents as the exporter writes them (990 GPUs on 330 nodes, each
   with a fatal XID; 10 malformed documents among them: the hostile inputs of the notifier's
   tests), delivered as CloudWatch Logs delivers a subscription (gzip, base64, batches of
   100), through the real handler with real botocore clients on moto (SNS topics with SQS
   subscribers standing in for people, the DynamoDB sent ledger). Then every batch is
   delivered again, as a retried invocation or a replayed subscription would: nothing may be
   sent twice. Prints "pages delivered 990/990, re-sent 0, refused and counted 10".
2. The XID line in OTel mode: one node's exporter (``XidEventLog``: the real OTLP sink, the
   real TCP sink to a local EMF listener) through 10 XID 79s while the OTLP endpoint answers
   400, 404 or 503, or not within the sink's timeout: the XID lines the listener reads, and
   the batches sent again after a status OTLP says not to retry.
3. A webhook that takes each request and never answers, and the SNS pages of the same batch:
   XID 79 on 8 GPUs of a node through the real send loop (SNS on moto, the webhook on
   127.0.0.1), one invocation of the function's timeout.
4. A forged XID 79 written 10 minutes before the real one and dated at the real one's time,
   then the real one, through the real handler: the real page delivered.
5. A webhook that answers 200 after 6 s (past the 5 s deadline), with Lambda's three attempts:
   how many times the chat shows the page, and whether the event is dead-lettered
   (``notifier-failing``).
The webhook's other faults (garbage answers, redirects, slow drip, resets) are
``benchmarks/webhook_faults.py``.
"""

import base64
import contextlib
import gzip
import io
import json
import logging
import os
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from unittest.mock import patch

import boto3
from moto import mock_aws

from benchmarks.webhook_faults import ATTEMPTS, xid_79
from cdk.alarms.catalog import AlarmSettings, gpu_alarms
from gpu_insights_agent.contract.metrics import (
    NOTIFIER_REFUSED_METRIC,
    PROP_XID_SOURCE,
    exporter_log_group,
)
from gpu_insights_agent.emf.sinks import BufferedSender, TcpEmfSink
from gpu_insights_agent.exporter.device_source import XidEvent
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from gpu_insights_agent.exporter.otlp_sink import OtlpSink
from gpu_insights_agent.exporter.xid_event_log import XidEventLog
from lambdas.notifier import handler as notifier
from lambdas.notifier.config import FUNCTION_TIMEOUT_S
from lambdas.notifier.sent_ledger import SentLedger
from lambdas.notifier.sns_channel import SnsChannel
from lambdas.notifier.webhook import DEADLINE_S, WebhookChannel
from tests.unit.agent.exporter.nvml_trace import Clock, trace_lines
from tests.unit.lambdas.notifier.webhook_server import webhook_server

CLUSTER = "train"
NODES, GPUS_PER_NODE = 330, 3  # the NVML trace's three GPUs on each node
BATCH = 100
TABLE = "gpu-insights-train-sent"


class _Keep:
    def __init__(self) -> None:
        self.documents: list[dict[str, Any]] = []

    def send(self, documents: Any) -> None:
        self.documents.extend(documents)


def _good_documents(at_s: float) -> list[str]:
    """One XID 79 per GPU, each written by its node's exporter."""
    lines = []
    for n in range(NODES):
        sink = _Keep()
        exporter = Exporter(
            NvmlSource(FakeNvml(trace_lines(), clock=Clock(16))),
            BufferedSender(sink),
            ExporterConfig(
                cluster_name=CLUSTER, node_name=f"ip-10-0-{n // 250}-{n % 250}.ec2.internal"
            ),
        )
        exporter.start()
        for gpu in range(GPUS_PER_NODE):
            exporter.on_xid(XidEvent(gpu_index=gpu, code=79, time=at_s))
        lines += [json.dumps(d) for d in sink.documents]
    return lines


def _malformed(good: str) -> list[str]:
    """Ten documents that must be refused, each one field broken as the tests break it."""
    document = json.loads(good)

    def with_field(key: str, value: Any) -> str:
        return json.dumps({**document, key: value})

    return [
        json.dumps(document).replace('"XidCode": "79"', '"XidCode": 1e400'),  # infinity
        with_field("NodeName", "n" * 3000),  # a ledger key DynamoDB refuses
        with_field("XidCode", "abc"),
        with_field("GpuIndex", {"a": 1}),
        with_field("ClusterName", "someone-else"),
        with_field("PodUids", "not-a-list"),
        with_field("Pods", ["<!channel>/x"]),
        with_field("PciBusId", "53:00"),
        "[" * 50_000 + '"_aws"',  # nested past the parser's stack
        json.dumps(["_aws", 79]),  # an EMF line that is no object
    ]


def _subscription(messages: list[str], at_ms: int) -> dict[str, Any]:
    payload = {
        "messageType": "DATA_MESSAGE",
        "owner": "123456789012",
        "logGroup": exporter_log_group(CLUSTER),
        "logStream": "cloudwatch-agent",
        "subscriptionFilters": ["ExporterXids"],
        "logEvents": [
            {"id": str(i), "timestamp": at_ms + i, "message": m} for i, m in enumerate(messages)
        ],
    }
    data = base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()
    return {"awslogs": {"data": data}}


@contextlib.contextmanager
def _deployment() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """The notifier's topics (an SQS subscriber on each), its ledger and environment on moto;
    yields a reader of what the subscribers received since the last read."""
    with mock_aws():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        sns, sqs = session.client("sns"), session.client("sqs")
        queues, env = [], {}
        for name in ("critical", "warning"):
            arn = sns.create_topic(Name=f"gpu-insights-{CLUSTER}-{name}")["TopicArn"]
            url = sqs.create_queue(QueueName=name)["QueueUrl"]
            queue_arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
                "Attributes"
            ]["QueueArn"]
            sns.subscribe(TopicArn=arn, Protocol="sqs", Endpoint=queue_arn)
            queues.append(url)
            env[f"{name.upper()}_TOPIC_ARN"] = arn
        session.client("dynamodb").create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "incident", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "incident", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        kinds = {
            s.key: [str(s.severity), s.title]
            for s in gpu_alarms(AlarmSettings(cluster_name=CLUSTER))
        }
        env |= {
            "CLUSTER_NAME": CLUSTER,
            "AWS_REGION": "us-east-1",
            "SENT_TABLE": TABLE,
            "GPU_DASHBOARD": f"gpu-insights-{CLUSTER}-gpu-node",
            "EXPORTER_LOG_GROUP": exporter_log_group(CLUSTER),
            "ALARM_KINDS": json.dumps(kinds),
        }
        clients = {s: session.client(s) for s in ("sns", "dynamodb", "logs")}

        def received() -> list[dict[str, Any]]:
            out = []
            for url in queues:
                while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get(
                    "Messages", []
                ):
                    for message in batch:
                        out.append(json.loads(message["Body"]))
                        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
            return out

        with patch.dict(os.environ, env), patch.dict(notifier._clients, clients):
            yield received


def xid_batch() -> dict[str, Any]:
    """Section 1: 1,000 XID documents, 1% malformed, delivered twice."""
    now = time.time()
    good = _good_documents(now)
    bad = _malformed(good[0])
    lines = list(good)
    for i, line in enumerate(bad):  # one malformed document in each batch of 100
        lines.insert(i * BATCH + 37, line)
    batches = [lines[i : i + BATCH] for i in range(0, len(lines), BATCH)]
    at_ms = int(now * 1000)
    refused_counted = 0
    started = time.perf_counter()
    with _deployment() as received:
        printed, replay_printed = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(printed):
            first = [notifier.handler(_subscription(b, at_ms), None) for b in batches]
        pages = received()
        with contextlib.redirect_stdout(replay_printed):
            replayed = [notifier.handler(_subscription(b, at_ms), None) for b in batches]
        again = received()
    for line in printed.getvalue().splitlines():  # the first delivery's refused-count lines
        if NOTIFIER_REFUSED_METRIC in line:
            refused_counted += int(json.loads(line)[NOTIFIER_REFUSED_METRIC])
    subjects = {p["Subject"] for p in pages}
    return {
        "documents": len(lines),
        "good": len(good),
        "malformed": len(bad),
        "pages": len(subjects),
        "duplicates": len(pages) - len(subjects),
        "resent": len(again) + sum(r["published"] for r in replayed),
        "refused_counted": refused_counted,
        "refused_returned": sum(r["unreadable"] for r in first),
        "seconds": time.perf_counter() - started,
    }


# Section 2: the XID line in OTel mode while the OTLP endpoint fails.

#: The OTLP endpoint's faults: an answer of these statuses, or none within the sink's timeout.
OTLP_FAULTS: Final[tuple[int | str, ...]] = (400, 404, 503, "timeout")
XIDS: Final = 10
NODE: Final = "ip-10-0-1-7.ec2.internal"
#: The injected XIDs' source (``XidSource``), which tells them from the trace's own.
SOURCE: Final = "injected"


@contextlib.contextmanager
def _otlp_endpoint(fault: int | str, answer_after_s: float) -> Iterator[tuple[str, list[bytes]]]:
    """An OTLP/HTTP endpoint on 127.0.0.1 answering ``fault`` (for "timeout": 200, after
    ``answer_after_s``); yields its URL and the request bodies it received, in order."""
    bodies: list[bytes] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
            if fault == "timeout":
                time.sleep(answer_after_s)
            with contextlib.suppress(OSError):  # the sink gave up waiting
                self.send_response(200 if fault == "timeout" else int(fault))
                self.send_header("Content-Length", "0")
                self.end_headers()

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/metrics", bodies
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def _emf_listener() -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """The agent's EMF listener (newline-delimited JSON over TCP) on 127.0.0.1: yields its port
    and the documents it read, each of which the agent writes to the log group it names."""
    lines: list[dict[str, Any]] = []

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            for line in self.rfile:
                lines.append(json.loads(line))

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1], lines
    finally:
        server.shutdown()
        server.server_close()


@dataclass(frozen=True)
class OtlpFaultRun:
    fault: int | str
    xids: int
    #: XIDs whose line the listener read (each XID once: by GPU and running count).
    delivered: int
    #: Batches the endpoint received again after refusing them with a status OTLP says not to
    #: retry (400, 404); None for a retryable fault, retried by design.
    resent_after_refusal: int | None


def otlp_fault(fault: int | str, *, xids: int = XIDS, timeout_s: float = 1.0) -> OtlpFaultRun:
    """One node's exporter in OTLP mode (``XidEventLog``: the real OTLP sink, the real TCP sink
    to the listener) through ``xids`` XID 79s, each after a cycle, while the OTLP endpoint
    meets every request with ``fault``."""
    with _emf_listener() as (port, lines), _otlp_endpoint(fault, 2 * timeout_s) as (url, bodies):
        clock = Clock(16)
        exporter = Exporter(
            NvmlSource(FakeNvml(trace_lines(), clock=clock, sleep=lambda _: None)),
            XidEventLog(OtlpSink(url, timeout_s=timeout_s), TcpEmfSink("127.0.0.1", port)),
            ExporterConfig(cluster_name=CLUSTER, node_name=NODE),
        )
        exporter.start()
        for n in range(xids):
            clock.now += 10
            exporter.collect_once()
            exporter.on_xid(
                XidEvent(gpu_index=n % GPUS_PER_NODE, code=79, time=time.time(), source=SOURCE)
            )
        deadline = time.monotonic() + 5  # the listener reads on its own thread

        def seen() -> set[tuple[str, int]]:
            return {
                (line["GpuIndex"], line["XidCount"])
                for line in list(lines)
                if line.get(PROP_XID_SOURCE) == SOURCE  # the trace's own XIDs aside
            }

        while len(seen()) < xids and time.monotonic() < deadline:
            time.sleep(0.05)
        resent = len(bodies) - len(set(bodies)) if fault in (400, 404) else None
    return OtlpFaultRun(fault, xids, len(seen()), resent)


def otlp_line(runs: list[OtlpFaultRun]) -> str:
    """Section 2's figures as printed (docs/paging.md quotes them)."""
    each = {f"{r.delivered}/{r.xids}" for r in runs}
    delivered = f"{next(iter(each))} each" if len(each) == 1 else ", ".join(sorted(each))
    resent = sum(r.resent_after_refusal or 0 for r in runs)
    return (
        "XID pages delivered to the log group while the OTLP endpoint answers 400, 404, 503 "
        f"and times out: {delivered}, batches retried after a non-retryable status {resent}"
    )


# Section 3: a webhook that hangs, and the SNS pages of the same batch.


@dataclass(frozen=True)
class HangRun:
    pages: int
    #: SNS pages the first invocation delivered.
    sns_first: int
    webhook_posts: int
    #: The first invocation's error (it must count the chat deliveries it never tried).
    error: str


def _sns_channel() -> SnsChannel:
    return SnsChannel(
        notifier._clients("sns"),
        critical_topic_arn=os.environ["CRITICAL_TOPIC_ARN"],
        warning_topic_arn=os.environ["WARNING_TOPIC_ARN"],
    )


def _left(started: float) -> Callable[[], float]:
    """An invocation's time left: the function's timeout from ``started``."""
    return lambda: FUNCTION_TIMEOUT_S - (time.monotonic() - started)


def webhook_hang(*, gpus: int = 8, deadline_s: float = DEADLINE_S) -> HangRun:
    """XID 79 on ``gpus`` GPUs of one node, delivered on SNS and a webhook that takes each
    request and never answers, in one invocation of the function's timeout."""
    incidents = [xid_79(NODE, gpu, CLUSTER) for gpu in range(gpus)]
    with _deployment() as received, webhook_server() as hook:
        hook.delay_s = 3600.0
        ledger = SentLedger(notifier._clients("dynamodb"), TABLE)
        webhook = WebhookChannel(lambda: hook.url, deadline_s=deadline_s)
        try:
            notifier.send(
                [_sns_channel(), webhook],
                ledger,
                incidents,
                time.time(),
                time_left_s=_left(time.monotonic()),
            )
            error = ""
        except notifier.PublishError as err:
            error = str(err)
        return HangRun(gpus, len(received()), len(hook.posts), error)


def hang_line(r: HangRun) -> str:
    return (
        f"SNS pages delivered in the first invocation while the webhook hangs: "
        f"{r.sns_first}/{r.pages}, webhook posts {r.webhook_posts}"
    )


# Section 4: a forged document dated ahead, and the real XID of the window it aimed at.


def _xid_document(at_ms: int) -> str:
    """XID 79 on GPU 0 of ``NODE`` as the exporter writes it, dated ``at_ms``."""
    sink = _Keep()
    exporter = Exporter(
        NvmlSource(FakeNvml(trace_lines(), clock=Clock(16))),
        BufferedSender(sink),
        ExporterConfig(cluster_name=CLUSTER, node_name=NODE),
    )
    exporter.start()
    exporter.on_xid(XidEvent(gpu_index=0, code=79, time=at_ms / 1000))
    return json.dumps(sink.documents[-1])


def forgery(ahead_s: float = 600.0) -> dict[str, int]:
    """A forged XID 79 written ``ahead_s`` before the real one and dated at the real one's
    time (aiming at its window); then the real XID, delivered at its time."""
    now_ms = int(time.time() * 1000)
    aimed = _xid_document(now_ms)
    with _deployment() as received, contextlib.redirect_stdout(io.StringIO()):
        written_ms = now_ms - int(ahead_s * 1000)
        notifier.handler(_subscription([aimed], written_ms), None)
        forged_pages = len(received())
        notifier.handler(_subscription([_xid_document(now_ms)], now_ms), None)
        real_pages = len(received())
    return {"forged_pages": forged_pages, "real_pages": real_pages}


def forgery_line(f: dict[str, int]) -> str:
    return (
        "a future-dated forgery: real page delivered "
        f"{f['real_pages']}/1, forged pages {f['forged_pages']}"
    )


# Section 5: a webhook that answers 200 late.


@dataclass(frozen=True)
class LateRun:
    answer_s: float
    #: How many times the chat showed the page (posts the webhook answered 200).
    shown: int
    invocations: int
    #: 1 when every attempt failed: the event is dead-lettered and notifier-failing pages.
    notifier_failing: int


def late_answer(*, answer_s: float = 6.0, deadline_s: float = DEADLINE_S) -> LateRun:
    """One page through the real send loop to a webhook that answers 200 after ``answer_s``
    (past the delivery's deadline), with Lambda's three attempts."""
    with _deployment(), webhook_server() as hook:
        hook.delay_s = answer_s
        ledger = SentLedger(notifier._clients("dynamodb"), TABLE)
        invocations, failed = 0, True
        for _ in range(ATTEMPTS):
            invocations += 1
            channel = WebhookChannel(lambda: hook.url, deadline_s=deadline_s)
            try:
                notifier.send(
                    [channel],
                    ledger,
                    [xid_79(NODE, 0, CLUSTER)],
                    time.time(),
                    time_left_s=_left(time.monotonic()),
                )
            except notifier.PublishError:
                continue
            failed = False
            break
        time.sleep(max(0.0, answer_s - deadline_s) + 0.2)  # the last post's late answer
        return LateRun(answer_s, len(hook.shown), invocations, int(failed))


def late_line(r: LateRun) -> str:
    return (
        f"webhook answering 200 after {r.answer_s:g} s: shown {r.shown} times (at most 2), "
        f"notifier-failing {r.notifier_failing}"
    )


def main() -> dict[str, Any]:
    before = logging.root.manager.disable
    logging.disable(logging.ERROR)  # each refused delivery is logged: the counts say it
    x = xid_batch()
    print(
        f"XID batch of {x['documents']:,} documents, {x['malformed']} malformed: pages "
        f"delivered {x['pages']}/{x['good']}, re-sent {x['resent'] + x['duplicates']}, refused "
        f"and counted {x['refused_counted']} ({x['seconds']:.1f} s)"
    )
    otlp = [otlp_fault(fault) for fault in OTLP_FAULTS]
    print(otlp_line(otlp))
    hang = webhook_hang()
    print(hang_line(hang))
    forged = forgery()
    print(forgery_line(forged))
    late = late_answer()
    print(late_line(late))
    logging.disable(before)
    return {"xid_batch": x, "otlp": otlp, "hang": hang, "forgery": forged, "late": late}


if __name__ == "__main__":
    main()
