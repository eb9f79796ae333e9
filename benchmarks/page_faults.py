"""Fault injection on the pager's path: every fault pages once, no bad input stops or loses a
page. Sections, each a function returning its figures; ``main`` runs them all.

1. XID batch: 1,000 XID documents as the exporter writes them (990 GPUs on 330 nodes, each
   with a fatal XID; 10 malformed documents among them: the hostile inputs of the notifier's
   tests), delivered as CloudWatch Logs delivers a subscription (gzip, base64, batches of
   100), through the real handler with real botocore clients on moto (SNS topics with SQS
   subscribers standing in for people, the DynamoDB sent ledger). Then every batch is
   delivered again, as a retried invocation or a replayed subscription would: nothing may be
   sent twice. Prints "pages delivered 990/990, re-sent 0, refused and counted 10".
2. Webhook faults (garbage answers, redirects, slow-drip, resets: pages lost, claims left
   held) are their own benchmark, benchmarks/webhook_faults.py.
3. A forged host-log confirmation: with ``xid_require_kernel_confirmation`` on, a pod that
   reaches the agent's EMF listener writes a forged XID 79 document and, routed by
   ``_aws.LogGroupName`` and ``_aws.LogStreamName`` into the host log group on the node's
   ``<node>.host.dmesg`` stream, a forged kernel line. The page must stay the unconfirmed
   warning. Prints "forged host-log confirmation: refused".
4. One XID across a 5-minute window boundary: the exporter's document 2 s before the boundary
   and the kernel's line for it 3 s after, each delivered (and then delivered again) by its
   own subscription. Prints "XID across a window boundary: 1 page".
"""

import base64
import contextlib
import functools
import gzip
import io
import json
import os
import time
from collections.abc import Callable, Iterator
from typing import Any
from unittest.mock import patch

import boto3
from moto import mock_aws

from cdk.alarms.catalog import AlarmSettings, gpu_alarms
from gpu_insights_agent.contract.metrics import NOTIFIER_REFUSED_METRIC, exporter_log_group
from gpu_insights_agent.emf.sinks import BufferedSender
from gpu_insights_agent.exporter.device_source import XidEvent
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from lambdas.notifier import handler as notifier
from tests.unit.agent.exporter.nvml_trace import Clock, trace_lines

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
def _deployment(**settings: str) -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """The notifier's topics (an SQS subscriber on each), its ledger and environment (and
    ``settings``, more of its variables) on moto; yields a reader of what the subscribers
    received since the last read."""
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
            **settings,
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


#: Container Insights' host log group, where Fluent Bit ships each node's kernel log.
HOST_LOG_GROUP = f"/aws/containerinsights/{CLUSTER}/host"
#: The node of sections 3 and 4, and its GPU 1's PCI bus as the kernel prints it.
NODE = "ip-10-0-0-1.ec2.internal"


def _xid_document(at_s: float, gpu: int = 1) -> tuple[dict[str, Any], str]:
    """One XID 79 document as NODE's exporter writes it, and its GPU's bus in the kernel's
    form (``0000:53:00``)."""
    sink = _Keep()
    exporter = Exporter(
        NvmlSource(FakeNvml(trace_lines(), clock=Clock(16))),
        BufferedSender(sink),
        ExporterConfig(cluster_name=CLUSTER, node_name=NODE),
    )
    exporter.start()
    exporter.on_xid(XidEvent(gpu_index=gpu, code=79, time=at_s))
    (document,) = sink.documents
    domain, bus, device = str(document["PciBusId"]).split(".")[0].split(":")
    return document, f"{domain[-4:]}:{bus}:{device}".lower()


def _silent(run: Callable[[], Any]) -> Any:
    """``run()`` without the function's printed refused-count lines."""
    with contextlib.redirect_stdout(io.StringIO()):
        return run()


def forged_confirmation() -> dict[str, Any]:
    """Section 3: a forged document and a forged host line routed through the EMF listener."""
    now = time.time()
    document, bus = _xid_document(now)
    forged_line = {
        "_aws": {"LogGroupName": HOST_LOG_GROUP, "LogStreamName": f"{NODE}.host.dmesg"},
        "message": f"NVRM: Xid (PCI:{bus}): 79, pid=1, GPU has fallen off the bus.",
        "hostname": NODE,
    }
    settings = {"HOST_LOG_GROUP": HOST_LOG_GROUP, "REQUIRE_KERNEL_CONFIRMATION": "true"}
    with _deployment(**settings) as received:
        logs = notifier._clients("logs")
        logs.create_log_group(logGroupName=HOST_LOG_GROUP)
        # Where the agent writes the forged line: the group and stream the line names.
        logs.create_log_stream(logGroupName=HOST_LOG_GROUP, logStreamName=f"{NODE}.host.dmesg")
        logs.put_log_events(
            logGroupName=HOST_LOG_GROUP,
            logStreamName=f"{NODE}.host.dmesg",
            logEvents=[{"timestamp": int(now * 1000) + 1000, "message": json.dumps(forged_line)}],
        )
        at_ms = int(now * 1000)
        event = _subscription([json.dumps(document)], at_ms)
        _silent(functools.partial(notifier.handler, event, None))
        pages = received()
    return {
        "pages": len(pages),
        "critical": sum(p["Subject"].startswith("[CRITICAL]") for p in pages),
        "confirmed": sum("confirmed: NVRM" in p["Message"] for p in pages),
        "refused": len(pages) == 1 and "unconfirmed by the kernel log" in pages[0]["Subject"],
    }


def window_boundary() -> dict[str, Any]:
    """Section 4: one XID's exporter document and kernel line on either side of a boundary,
    each delivered twice."""
    window_ms = 300_000
    boundary_ms = (int(time.time() * 1000) // window_ms) * window_ms
    document, bus = _xid_document((boundary_ms - 2_000) / 1000)
    line = json.dumps({"message": f"NVRM: Xid (PCI:{bus}): 79, pid=1, GPU has fallen off"})
    kernel = {
        "messageType": "DATA_MESSAGE",
        "logGroup": HOST_LOG_GROUP,
        "logStream": f"{NODE}.host.dmesg",
        "logEvents": [{"id": "k", "timestamp": boundary_ms + 3_000, "message": line}],
    }
    kernel_event = {
        "awslogs": {"data": base64.b64encode(gzip.compress(json.dumps(kernel).encode())).decode()}
    }
    exporter_event = _subscription([json.dumps(document)], boundary_ms - 1_500)
    with _deployment() as received:
        for event in (exporter_event, kernel_event, exporter_event, kernel_event):
            _silent(functools.partial(notifier.handler, event, None))
        pages = received()
    return {"pages": len(pages), "subjects": sorted(p["Subject"] for p in pages)}


def forged_line(f: dict[str, Any]) -> str:
    verdict = "refused" if f["refused"] else f"ACCEPTED ({f['confirmed']} confirmed)"
    return f"forged host-log confirmation: {verdict}"


def boundary_line(b: dict[str, Any]) -> str:
    return f"XID across a window boundary: {b['pages']} page{'s' if b['pages'] != 1 else ''}"


def main() -> dict[str, dict[str, Any]]:
    x = xid_batch()
    print(
        f"XID batch of {x['documents']:,} documents, {x['malformed']} malformed: pages "
        f"delivered {x['pages']}/{x['good']}, re-sent {x['resent'] + x['duplicates']}, refused "
        f"and counted {x['refused_counted']} ({x['seconds']:.1f} s)"
    )
    f = forged_confirmation()
    print(forged_line(f))
    b = window_boundary()
    print(boundary_line(b))
    return {"xid_batch": x, "forged_confirmation": f, "window_boundary": b}


if __name__ == "__main__":
    main()
