"""The notifier end to end with moto, as its synthesized role: log subscription payloads and
EventBridge alarm events in, one SNS message per incident out, never twice."""

import base64
import gzip
import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from cdk.alarms.catalog import (
    AlarmSettings,
    deployed_alarms,
    gpu_alarms,
    low_power_alarm,
    promql_alarms,
)
from gpu_insights_agent.contract.metrics import exporter_log_group
from gpu_insights_agent.emf.sinks import BufferedSender
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from gpu_insights_agent.exporter.xid_watcher import XidEvent
from lambdas.notifier import handler as notifier
from lambdas.notifier.channels import ChannelError
from lambdas.notifier.config import NotifierConfig
from lambdas.notifier.sent_ledger import LedgerError
from lambdas.notifier.webhook import WEBHOOK, WebhookChannel, url_from_parameter
from tests.functional.lambdas.iam import Principal, resolve, role_statements, run_as_role, without
from tests.unit.agent.exporter.nvml_trace import Clock, trace_lines
from tests.unit.lambdas.notifier.events import (
    AWS_CONTRIBUTOR_EXAMPLE,
    NODE,
    alarm_level,
    as_promql_contributor,
    low_power_contributor,
)
from tests.unit.lambdas.notifier.webhook_server import webhook_server

HANDLER = "lambdas.notifier.handler.handler"
TABLE = "gpu-insights-train-sent"
SPECS = gpu_alarms(AlarmSettings(cluster_name="train"))


class Keep:
    def __init__(self) -> None:
        self.documents: list[dict[str, Any]] = []

    def send(self, documents: Any) -> None:
        self.documents.extend(documents)


def _subscription_event(
    messages: list[str], stream: str = "node-a", at_ms: int | None = None
) -> dict[str, Any]:
    at = at_ms if at_ms is not None else int(time.time() * 1000)
    payload = {
        "messageType": "DATA_MESSAGE",
        "logGroup": "/aws/gpu-insights/train/exporter",
        "logStream": stream,
        "logEvents": [
            {"id": str(i), "timestamp": at + i, "message": m} for i, m in enumerate(messages)
        ],
    }
    data = base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()
    return {"awslogs": {"data": data}}


def _kernel(bus: str, code: int, text: str = "something") -> str:
    return json.dumps({"message": f"NVRM: Xid (PCI:0000:{bus}:00): {code}, {text}"})


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    with mock_aws():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        sns, sqs = session.client("sns"), session.client("sqs")
        queues, arns = {}, {}
        for name in ("critical", "warning"):
            arns[name] = sns.create_topic(Name=f"gpu-insights-train-{name}")["TopicArn"]
            queues[name] = sqs.create_queue(QueueName=name)["QueueUrl"]
            queue_arn = sqs.get_queue_attributes(
                QueueUrl=queues[name], AttributeNames=["QueueArn"]
            )["Attributes"]["QueueArn"]
            sns.subscribe(TopicArn=arns[name], Protocol="sqs", Endpoint=queue_arn)
        table = session.client("dynamodb").create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "incident", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "incident", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )["TableDescription"]
        session.client("logs").create_log_group(logGroupName=exporter_log_group("train"))
        monkeypatch.setenv("CLUSTER_NAME", "train")
        monkeypatch.setenv("AWS_REGION", "us-east-1")
        monkeypatch.setenv("CRITICAL_TOPIC_ARN", arns["critical"])
        monkeypatch.setenv("WARNING_TOPIC_ARN", arns["warning"])
        monkeypatch.setenv("SENT_TABLE", TABLE)
        monkeypatch.setenv("GPU_DASHBOARD", "gpu-insights-train-gpu-node")
        monkeypatch.setenv("EXPORTER_LOG_GROUP", exporter_log_group("train"))
        kinds = {s.key: [str(s.severity), s.title] for s in SPECS}
        monkeypatch.setenv("ALARM_KINDS", json.dumps(kinds))
        for service in ("sns", "dynamodb", "logs"):
            monkeypatch.setitem(notifier._clients, service, session.client(service))
        physical = {
            **{f"Topics{n.title()}": {"Ref": arn} for n, arn in arns.items()},
            "XidNotifierSent": {"Ref": TABLE, "Arn": table["TableArn"]},
        }
        yield {"session": session, "queues": queues, "sqs": sqs, "physical": physical}


def _as_role(aws: dict[str, Any], templates: Any, monkeypatch: Any, drop: Any = None) -> Principal:
    """Switch the handler's clients to the notifier's role, moto's IAM enforcement on."""
    statements = list(resolve(role_statements(templates, HANDLER), aws["physical"]))
    if drop is not None:
        statements = without(statements, drop)
    principal = run_as_role(statements, monkeypatch, "notifier")
    for service in ("sns", "dynamodb", "logs"):
        monkeypatch.setitem(notifier._clients, service, principal.role(service))
    aws["sqs"] = principal.admin("sqs")
    return principal


def _messages(aws: dict[str, Any], queue: str) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    while True:
        response = aws["sqs"].receive_message(QueueUrl=aws["queues"][queue], MaxNumberOfMessages=10)
        batch = response.get("Messages", [])
        if not batch:
            return out
        for message in batch:
            out.append(json.loads(message["Body"]))
            aws["sqs"].delete_message(
                QueueUrl=aws["queues"][queue], ReceiptHandle=message["ReceiptHandle"]
            )


def test_without_its_publish_statement_the_notifier_is_denied(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    _as_role(aws, templates, monkeypatch, drop=lambda s: s["Action"] == "sns:Publish")
    with pytest.raises(notifier.PublishError, match="AccessDenied"):
        notifier.handler(_subscription_event([_kernel("53", 79)]), None)


def test_without_its_ledger_statement_the_notifier_sends_nothing(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    _as_role(aws, templates, monkeypatch, drop="SentLedger")
    with pytest.raises(notifier.PublishError, match="AccessDenied") as raised:
        notifier.handler(_subscription_event([_kernel("53", 79)]), None)
    assert isinstance(raised.value.__cause__, LedgerError)
    assert _messages(aws, "critical") == []


def test_exporter_xids_reach_the_topic_their_severity_names(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run as the notifier's role, with moto's IAM authorization on (limits:
    tests/functional/lambdas/iam.py: actions are enforced, the ARNs are not)."""
    _as_role(aws, templates, monkeypatch)
    sink = Keep()
    exporter = Exporter(
        NvmlSource(FakeNvml(trace_lines(), clock=Clock(16))),
        BufferedSender(sink),
        ExporterConfig(cluster_name="train", node_name="node-a"),
    )
    exporter.start()
    assert exporter.watcher is not None
    exporter.watcher.drain()  # XID 13 on GPU 0 and XID 48 on GPU 2
    event = _subscription_event([json.dumps(d) for d in sink.documents])
    assert notifier.handler(event, None) == {
        "incidents": 2,
        "published": 2,
        "unreadable": 0,
    }
    (critical,) = _messages(aws, "critical")
    assert critical["Subject"] == "[CRITICAL] XID 48 on node-a GPU 2"
    for line in (
        "Cluster:       train",
        "Node:          node-a",
        "GPU:           2",
        "XID:           48 (fatal)",
        "Double-bit ECC error: uncorrectable memory error",
        "Cordon and drain",
        "#dashboards/dashboard/gpu-insights-train-gpu-node?var-node=node-a",
    ):
        assert line in critical["Message"]
    (warning,) = _messages(aws, "warning")
    assert warning["Subject"] == "[WARNING] XID 13 on node-a GPU 0"


def test_kernel_log_lines_are_the_fallback_and_bad_lines_are_counted(aws: dict[str, Any]) -> None:
    lines = [
        json.dumps({"message": "NVRM: Xid (PCI:0000:53:00): 79, pid=1, GPU has fallen off the bus.",
                    "hostname": "ip-10-0-0-9.ec2.internal"}),
        json.dumps({"message": "NVRM: Xid (PCI:0000:53:00): garbled"}),
        json.dumps({"message": "eth0: link up"}),
    ]  # fmt: skip
    result = notifier.handler(_subscription_event(lines, stream="i-0abc"), None)
    assert result == {"incidents": 1, "published": 1, "unreadable": 1}
    (critical,) = _messages(aws, "critical")
    assert critical["Subject"] == "[CRITICAL] XID 79 on ip-10-0-0-9.ec2.internal GPU PCI 0000:53:00"
    assert "GPU has fallen off the bus" in critical["Message"]


def test_one_bad_document_is_refused_and_counted_and_the_fatal_xid_beside_it_pages(
    aws: dict[str, Any],
    templates: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """XidCode 1e400 (infinity to JSON) and a NodeName over 2,048 bytes beside a real XID 79
    from the exporter. Before: OverflowError, the whole batch retried into the dead letters."""
    _as_role(aws, templates, monkeypatch)
    sink = Keep()
    exporter = Exporter(
        NvmlSource(FakeNvml(trace_lines(), clock=Clock(16))),
        BufferedSender(sink),
        ExporterConfig(cluster_name="train", node_name="node-a"),
    )
    exporter.start()
    exporter.on_xid(XidEvent(gpu_index=1, code=79, time=time.time()))
    (fatal,) = sink.documents
    infinite = json.dumps(fatal).replace('"XidCode": "79"', '"XidCode": 1e400')
    long_node = json.dumps({**fatal, "NodeName": "n" * 2100})
    event = _subscription_event([infinite, json.dumps(fatal), long_node])
    assert notifier.handler(event, None) == {"incidents": 1, "published": 1, "unreadable": 2}
    (critical,) = _messages(aws, "critical")
    assert critical["Subject"] == "[CRITICAL] XID 79 on node-a GPU 1"
    (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if '"_aws"' in x]
    assert line["notifier_refused_documents"] == 2.0
    assert line["ClusterName"] == "train"


def test_a_ledger_error_on_one_incident_does_not_stop_the_others(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """DynamoDB refuses the claim of one incident's key: the three others of the batch page
    now, and the retry pages the fourth once. Before: the first refusal ended the batch."""
    _as_role(aws, templates, monkeypatch)
    dynamodb = notifier._clients("dynamodb")

    def refuse_bus_52(params: dict[str, Any], **_: Any) -> None:
        if "0000:52:00" in params["Item"]["incident"]["S"]:
            raise ClientError(
                {"Error": {"Code": "InternalServerError", "Message": "try again"}}, "PutItem"
            )

    dynamodb.meta.events.register("provide-client-params.dynamodb.PutItem", refuse_bus_52)
    batch = _subscription_event([_kernel(bus, 13) for bus in ("51", "52", "53", "54")])
    with pytest.raises(notifier.PublishError, match="InternalServerError"):
        notifier.handler(batch, None)
    first = sorted(m["Subject"] for m in _messages(aws, "warning"))
    assert first == [f"[WARNING] XID 13 on node-a GPU PCI 0000:{b}:00" for b in ("51", "53", "54")]
    dynamodb.meta.events.unregister("provide-client-params.dynamodb.PutItem", refuse_bus_52)
    assert notifier.handler(batch, None)["published"] == 1
    (retried,) = _messages(aws, "warning")
    assert retried["Subject"] == "[WARNING] XID 13 on node-a GPU PCI 0000:52:00"


def _exporter_xid(code: int, gpu: int, at_s: float) -> tuple[str, str]:
    """One exporter XID document (as the agent writes it to the log group), and its GPU's
    PCI bus id as the kernel prints it (``0000:53:00``)."""
    sink = Keep()
    exporter = Exporter(
        NvmlSource(FakeNvml(trace_lines(), clock=Clock(16))),
        BufferedSender(sink),
        ExporterConfig(cluster_name="train", node_name="node-a"),
    )
    exporter.start()
    exporter.on_xid(XidEvent(gpu_index=gpu, code=code, time=at_s))
    (document,) = sink.documents
    domain, bus, device = document["PciBusId"].split(".")[0].split(":")
    return json.dumps(document), f"{domain[-4:]}:{bus}:{device}".lower()


#: node-a's instance id, as Fluent Bit's aws filter adds it to every host record.
INSTANCE = "i-0abc1234def567890"
HOST_STREAMS = ("node-a.host.dmesg", "node-a.host.messages")


def _host_record(stream: str, line: str) -> str:
    """A kernel line as Container Insights' Fluent Bit ships it (host-log.conf): /var/log/dmesg
    read with ``Key message``, /var/log/messages through the syslog parser (whose ``host`` is
    the syslog host), each with the aws filter's ``az`` and ``ec2_instance_id`` and no node
    name; the node is the stream's, ``<node>.host.<file>``."""
    record: dict[str, Any] = {"message": line, "az": "us-east-1a", "ec2_instance_id": INSTANCE}
    if stream.endswith(".messages"):
        record.update(host="ip-10-0-1-2", ident="kernel")
    return json.dumps(record)


def _kernel_log(
    aws: dict[str, Any], lines: list[tuple[int, str]], streams: tuple[str, ...] = HOST_STREAMS[:1]
) -> str:
    """Container Insights' host log group with these kernel lines in node-a's host streams."""
    logs = aws["session"].client("logs")
    group = "/aws/containerinsights/train/host"
    logs.create_log_group(logGroupName=group)
    for stream in streams:
        logs.create_log_stream(logGroupName=group, logStreamName=stream)
        if lines:
            logs.put_log_events(
                logGroupName=group,
                logStreamName=stream,
                logEvents=[{"timestamp": t, "message": _host_record(stream, m)} for t, m in lines],
            )
    return group


@pytest.mark.parametrize("required", [False, True])
def test_an_exporter_xid_the_kernel_log_confirms_pages_critical_and_says_so(
    aws: dict[str, Any],
    templates: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    required: bool,
) -> None:
    now = time.time()
    document, bus = _exporter_xid(79, 1, now)
    line = f"[ 812.4] NVRM: Xid (PCI:{bus}): 79, pid=4123, GPU has fallen off the bus."
    monkeypatch.setenv("HOST_LOG_GROUP", _kernel_log(aws, [(int(now * 1000) + 3000, line)]))
    monkeypatch.setenv("REQUIRE_KERNEL_CONFIRMATION", "true" if required else "false")
    _as_role(aws, templates, monkeypatch)
    assert notifier.handler(_subscription_event([document]), None)["published"] == 1
    (page,) = _messages(aws, "critical")
    assert page["Subject"] == "[CRITICAL] XID 79 on node-a GPU 1"
    assert f"Kernel log:    confirmed: NVRM: Xid (PCI:{bus}): 79" in page["Message"]


def _host_event(stream: str, lines: list[tuple[int, str]]) -> dict[str, Any]:
    """The host log group's subscription (``xid_host_log_filter``) delivering these lines."""
    payload = {
        "messageType": "DATA_MESSAGE",
        "logGroup": "/aws/containerinsights/train/host",
        "logStream": stream,
        "logEvents": [
            {"id": f"{stream}-{t}", "timestamp": t, "message": _host_record(stream, m)}
            for t, m in lines
        ],
    }
    data = base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()
    return {"awslogs": {"data": data}}


def test_one_xid_from_the_exporter_and_both_host_streams_pages_once(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``xid_host_log_filter`` the kernel's line reaches the notifier from host.dmesg and
    host.messages as well as the exporter's document: all three key one incident (cluster,
    node, PCI bus in one form, code, window), so the sent ledger pages it once, with the GPU
    index the exporter gave."""
    now = (time.time() // 300) * 300 + 60  # a minute into a grouping window
    at_ms = int(now * 1000)
    document, bus = _exporter_xid(79, 1, now)
    line = f"[ 812.4] NVRM: Xid (PCI:{bus}): 79, pid=4123, GPU has fallen off the bus."
    monkeypatch.setenv("HOST_LOG_GROUP", _kernel_log(aws, [(at_ms + 3000, line)], HOST_STREAMS))
    _as_role(aws, templates, monkeypatch)
    assert notifier.handler(_subscription_event([document], at_ms=at_ms), None)["published"] == 1
    for stream in HOST_STREAMS:
        result = notifier.handler(_host_event(stream, [(at_ms + 3000, line)]), None)
        assert (result["incidents"], result["published"]) == (1, 0)
    (page,) = _messages(aws, "critical")
    assert page["Subject"] == "[CRITICAL] XID 79 on node-a GPU 1"
    assert f"Kernel log:    confirmed: NVRM: Xid (PCI:{bus}): 79" in page["Message"]
    assert _messages(aws, "warning") == []


def test_a_backdated_document_is_not_checked_and_the_real_xid_beside_it_is_confirmed(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A document dated three hours back (its ``_aws.Timestamp`` is whatever its writer chose)
    neither widens the batch's kernel read nor hides the real XID beside it."""
    now = time.time()
    real, bus = _exporter_xid(79, 1, now)
    forged, _ = _exporter_xid(79, 2, now - 3 * 3600)
    line = f"NVRM: Xid (PCI:{bus}): 79, pid=4123, GPU has fallen off the bus."
    monkeypatch.setenv("HOST_LOG_GROUP", _kernel_log(aws, [(int(now * 1000) + 3000, line)]))
    _as_role(aws, templates, monkeypatch)
    assert notifier.handler(_subscription_event([forged, real]), None)["published"] == 2
    pages = {p["Subject"]: p["Message"] for p in _messages(aws, "critical")}
    assert (
        f"Kernel log:    confirmed: NVRM: Xid (PCI:{bus}): 79"
        in (pages["[CRITICAL] XID 79 on node-a GPU 1"])
    )
    assert (
        "Kernel log:    not checked: too old (dated 180 minutes before now"
        in (pages["[CRITICAL] XID 79 on node-a GPU 2"])
    )


def test_an_unconfirmed_fatal_xid_is_a_warning_that_says_so_where_confirmation_is_required(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A document any pod could have written to the agent's EMF listener: the node's kernel
    logged XID 79 on another GPU's bus, and an XID 13 on this one, but not 79 on this one."""
    now = time.time()
    document, bus = _exporter_xid(79, 1, now)
    other = "0000:ff:00"
    lines = [
        (int(now * 1000), f"NVRM: Xid (PCI:{other}): 79, pid=1, GPU has fallen off the bus."),
        (int(now * 1000), f"NVRM: Xid (PCI:{bus}): 13, Graphics SM Warp Exception"),
    ]
    monkeypatch.setenv("HOST_LOG_GROUP", _kernel_log(aws, lines))
    monkeypatch.setenv("REQUIRE_KERNEL_CONFIRMATION", "true")
    _as_role(aws, templates, monkeypatch)
    assert notifier.handler(_subscription_event([document]), None)["published"] == 1
    assert _messages(aws, "critical") == []
    (page,) = _messages(aws, "warning")
    assert page["Subject"] == "[WARNING] XID 79 on node-a GPU 1 (unconfirmed by the kernel log)"
    text = page["Message"]
    assert "Unconfirmed by the kernel log, so sent as a warning" in text
    assert "Kernel log:    unconfirmed by the kernel log: no NVRM: Xid 79 on PCI 00000000:" in text
    # Not required: the same XID on another GPU pages critical, and says what the kernel log
    # shows. (Its own incident: a document dated ahead of the notifier's time is refused.)
    monkeypatch.setenv("REQUIRE_KERNEL_CONFIRMATION", "false")
    another = _subscription_event([_exporter_xid(79, 2, now)[0]])
    assert notifier.handler(another, None)["published"] == 1
    (critical,) = _messages(aws, "critical")
    assert "Kernel log:    unconfirmed by the kernel log" in critical["Message"]


def test_an_unreadable_kernel_log_is_said_and_the_page_still_goes(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No host log group (Container Insights' host logs off): the read fails, the page says
    the XID was not checked, and with confirmation required it is a warning, never lost."""
    monkeypatch.setenv("HOST_LOG_GROUP", "/aws/containerinsights/train/host")
    monkeypatch.setenv("REQUIRE_KERNEL_CONFIRMATION", "true")
    _as_role(aws, templates, monkeypatch)
    document, _ = _exporter_xid(79, 1, time.time())
    assert notifier.handler(_subscription_event([document]), None)["published"] == 1
    (page,) = _messages(aws, "warning")
    assert (
        "Kernel log:    not checked: /aws/containerinsights/train/host could not be read"
        in (page["Message"])
    )


def test_a_storm_of_500_xid_lines_is_one_message_and_the_next_batch_none(
    aws: dict[str, Any],
) -> None:
    storm = [_kernel("53", 13, "Graphics SM Warp Exception")] * 500
    at = (int(time.time()) // 300 * 300) * 1000  # the start of a grouping window
    result = notifier.handler(_subscription_event(storm, at_ms=at), None)
    assert result == {"incidents": 1, "published": 1, "unreadable": 0}
    (message,) = _messages(aws, "warning")
    assert "Seen:          500 times at" in message["Message"]
    # The storm goes on in the next batch, in the same window: already told.
    later = notifier.handler(_subscription_event(storm[:50], at_ms=at + 1000), None)
    assert later == {"incidents": 1, "published": 0, "unreadable": 0}
    assert _messages(aws, "warning") == []


def test_sns_failing_on_the_third_publish_then_the_retry_sends_nothing_twice(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four incidents in one batch; SNS refuses the third and still publishes the fourth.
    Lambda retries the invocation
    (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html): the
    retry sends the third alone, and each of the four reaches the topic once."""
    _as_role(aws, templates, monkeypatch)
    sns = notifier._clients("sns")
    calls = []

    def refuse_third(**_: Any) -> None:
        calls.append(1)
        if len(calls) == 3:
            raise ClientError(
                {"Error": {"Code": "InternalError", "Message": "try again"}}, "Publish"
            )

    sns.meta.events.register("before-call.sns.Publish", refuse_third)
    batch = _subscription_event([_kernel(bus, 13) for bus in ("51", "52", "53", "54")])
    with pytest.raises(notifier.PublishError, match="InternalError"):
        notifier.handler(batch, None)
    subjects = [m["Subject"] for m in _messages(aws, "warning")]
    expected = [f"[WARNING] XID 13 on node-a GPU PCI 0000:{b}:00" for b in ("51", "52", "54")]
    assert sorted(subjects) == expected
    sns.meta.events.unregister("before-call.sns.Publish", refuse_third)
    assert notifier.handler(batch, None)["published"] == 1
    assert notifier.handler(batch, None)["published"] == 0  # a third delivery
    subjects = [m["Subject"] for m in _messages(aws, "warning")]
    assert subjects == ["[WARNING] XID 13 on node-a GPU PCI 0000:53:00"]


def test_a_gpu_contributor_in_alarm_is_one_message_naming_its_pods(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = aws["session"].client("logs")
    group = exporter_log_group("train")
    logs.create_log_stream(logGroupName=group, logStreamName=NODE)
    now = int(time.time() * 1000)
    documents = [
        {"NodeName": NODE, "GpuIndex": "5", "PodUids": ["0b7e-old"], "_aws": {}},
        {"NodeName": NODE, "GpuIndex": "4", "PodUids": ["other-gpu"], "_aws": {}},
        {"NodeName": NODE, "GpuIndex": "5", "PodUids": ["3f9a-trainer-7"], "_aws": {}},
    ]
    logs.put_log_events(
        logGroupName=group,
        logStreamName=NODE,
        logEvents=[
            {"timestamp": now - 120_000 + i * 30_000, "message": json.dumps(d)}
            for i, d in enumerate(documents)
        ],
    )
    _as_role(aws, templates, monkeypatch)
    event = low_power_contributor(low_power_alarm(AlarmSettings(cluster_name="train")).description)
    assert notifier.handler(event, None) == {
        "incidents": 1,
        "published": 1,
        "unreadable": 0,
    }
    (message,) = _messages(aws, "warning")
    assert message["Subject"] == f"[WARNING] GPU in use but not working on {NODE} GPU 5"
    assert "Pods:          3f9a-trainer-7 (pod UID)" in message["Message"]
    # EventBridge delivers at least once: the same event again is no second page.
    assert notifier.handler(event, None)["published"] == 0
    assert _messages(aws, "warning") == []


def test_otel_modes_promql_contributor_is_one_message_naming_gpu_node_and_pod(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """OTel mode's low-power PromQL alarm: the contributor's series labels name the pod, so
    the page names it without a read of the exporter's log; the alarm's own event pages
    nothing, and the same event again nothing either."""
    otel = AlarmSettings(cluster_name="train", promql=True, gpu_instance_type="p5.48xlarge")
    kinds = {s.kind: [str(s.severity), s.title] for s in deployed_alarms(otel)}
    monkeypatch.setenv("ALARM_KINDS", json.dumps(kinds))
    monkeypatch.setenv("PROMQL_ALARM_KINDS", "gpu-low-power")
    _as_role(aws, templates, monkeypatch)
    spec, _ = promql_alarms(otel)  # the low-power alarm (and its fleet count)
    event = as_promql_contributor(
        AWS_CONTRIBUTOR_EXAMPLE, "gpu-insights-train-gpu-low-power", spec.description
    )
    assert notifier.handler(alarm_level(event), None)["incidents"] == 0
    assert notifier.handler(event, None) == {"incidents": 1, "published": 1, "unreadable": 0}
    (message,) = _messages(aws, "warning")
    assert message["Subject"] == f"[WARNING] GPU in use but not working on {NODE} GPU 5"
    assert "Pods:          nlp/bert-data-bound-worker-0" in message["Message"]
    assert notifier.handler(event, None)["published"] == 0
    assert _messages(aws, "critical") == []


def test_an_alarm_returning_to_ok_sends_nothing(aws: dict[str, Any]) -> None:
    event = low_power_contributor("desc", state="OK")
    assert notifier.handler(event, None) == {
        "incidents": 0,
        "published": 0,
        "unreadable": 0,
    }


def test_sns_failure_raises_so_lambda_retries(
    aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRITICAL_TOPIC_ARN", "arn:aws:sns:us-east-1:123456789012:missing")
    with pytest.raises(notifier.PublishError, match="publishing xid/train/"):
        notifier.handler(_subscription_event([_kernel("53", 79)]), None)


def test_an_existing_on_call_topic_gets_the_page_as_the_notifier_role(
    aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """``critical_topic_arn``: the app imports the team's topic; the synthesized function is
    told its ARN and its role may publish to it (moto enforces the action; the ARN and the
    key are the policy evaluator's, tests/infra/cdk/test_existing_topics.py)."""
    from aws_cdk import App

    from cdk.app import build
    from cdk.settings import settings_from_context
    from tests.functional.lambdas.conftest import CONTEXT

    oncall = aws["session"].client("sns").list_topics()["Topics"]
    (critical_arn,) = [t["TopicArn"] for t in oncall if t["TopicArn"].endswith("-critical")]
    app = App(outdir=str(tmp_path))
    build(app, settings_from_context({**CONTEXT, "critical_topic_arn": critical_arn}))
    templates = [stack.template for stack in app.synth().stacks]
    (function,) = [
        r["Properties"]
        for t in templates
        for r in t["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function" and r["Properties"].get("Handler") == HANDLER
    ]
    assert function["Environment"]["Variables"]["CRITICAL_TOPIC_ARN"] == critical_arn
    statements = role_statements(templates, HANDLER)
    (publish,) = [s for s in statements if s["Action"] == "sns:Publish"]
    assert critical_arn in publish["Resource"]
    _as_role(aws, templates, monkeypatch)
    result = notifier.handler(_subscription_event([_kernel("53", 79)]), None)
    assert result == {"incidents": 1, "published": 1, "unreadable": 0}
    (page,) = _messages(aws, "critical")
    assert page["Subject"].startswith("[CRITICAL] XID 79")


def test_a_failed_channel_is_retried_alone_and_each_channel_sends_each_incident_once(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SNS and a chat webhook; the webhook refuses its first post. SNS delivers both
    incidents and the webhook the second anyway; the retry posts the refused one to the
    webhook and publishes nothing again; a third delivery sends nothing on either."""
    _as_role(aws, templates, monkeypatch)
    with webhook_server() as hook:
        hook.statuses = [500]
        sns_only = notifier.channels
        monkeypatch.setattr(
            notifier,
            "channels",
            lambda config: [*sns_only(config), WebhookChannel(lambda: hook.url)],
        )
        batch = _subscription_event([_kernel("53", 79), _kernel("54", 13)])
        with pytest.raises(notifier.PublishError, match=r"to webhook .*HTTP 500"):
            notifier.handler(batch, None)
        assert len(_messages(aws, "critical")) == 1
        assert len(_messages(aws, "warning")) == 1
        assert len(hook.posts) == 2  # the first refused, the second delivered
        assert notifier.handler(batch, None)["published"] == 1
        assert _messages(aws, "critical") == _messages(aws, "warning") == []
        assert notifier.handler(batch, None)["published"] == 0
    assert len(hook.posts) == 3
    titles = sorted(post["text"].splitlines()[0] for post in hook.shown)
    assert titles == [
        "[CRITICAL] XID 79 on node-a GPU PCI 0000:53:00",
        "[WARNING] XID 13 on node-a GPU PCI 0000:54:00",
    ]


def test_the_webhook_url_is_read_from_its_secure_string_parameter(
    aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    ssm = aws["session"].client("ssm")
    url = "https://hooks.slack.com/services/T000/B000/XXXX"
    ssm.put_parameter(Name="/gpu-insights/train/webhook", Value=url, Type="SecureString")
    assert url_from_parameter(ssm, "/gpu-insights/train/webhook") == url
    ssm.put_parameter(Name="/plain", Value="http://hooks.example.com/x", Type="SecureString")
    with pytest.raises(ChannelError, match="/plain does not hold an https:// URL"):
        url_from_parameter(ssm, "/plain")
    with pytest.raises(ChannelError, match=r"/missing: .*ParameterNotFound"):
        url_from_parameter(ssm, "/missing")
    monkeypatch.setenv("WEBHOOK_URL_PARAMETER", "/gpu-insights/train/webhook")
    names = [c.name for c in notifier.channels(NotifierConfig.current())]
    assert names == ["sns", WEBHOOK]
    # Read once for a few minutes of invocations, then again (a rotated URL is picked up).
    reads: list[str] = []
    ssm.meta.events.register("before-call.ssm.GetParameter", lambda **_: reads.append("read"))
    monkeypatch.setitem(notifier._clients, "ssm", ssm)
    monkeypatch.setattr(notifier, "_webhook_urls", {})
    for _ in range(3):
        assert notifier._webhook_url("/gpu-insights/train/webhook") == url
    assert len(reads) == 1
    monkeypatch.setattr(notifier, "WEBHOOK_URL_KEEP_S", -1.0)
    notifier._webhook_url("/gpu-insights/train/webhook")
    assert len(reads) == 2


# --- a training job alarm's page (lambdas/notifier/jobs.py) -----------------------------


def _job_hung_event(at: str, key: str = "job-hung-shard-00") -> dict[str, Any]:
    """A job-hung (or ``key``'s) contributor in ALARM, as EventBridge delivers it: the
    contributor's attributes are the query's GROUP BY values (ClusterName, JobName)."""
    (spec,) = [s for s in SPECS if s.key == key]
    name = spec.alarm_name("train")
    return {
        "version": "0",
        "id": "7f3c9e1a-job",
        "detail-type": "CloudWatch Alarm Contributor State Change",
        "source": "aws.cloudwatch",
        "account": "123456789012",
        "time": at,
        "region": "us-east-1",
        "resources": [f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:{name}"],
        "detail": {
            "alarmName": name,
            "alarmContributor": {
                "id": "5c1a2b3d4e5f6a7b",
                "attributes": {"ClusterName": "train", "JobName": "llama-ft"},
            },
            "configuration": {"description": spec.description},
            "state": {
                "value": "ALARM",
                "reason": (
                    "Threshold Crossed: 1 datapoint was greater than or equal to the threshold "
                    f"(600.0). The most recent datapoint which crossed the threshold: [642.0 "
                    f"({at[8:10]}/{at[5:7]}/{at[2:4]} {at[11:19]})]."
                ),
                "timestamp": at,
            },
        },
    }


def _emit_job(session: Any, at_s: float) -> None:
    """Two ranks of llama-ft, as the emitter writes them to the training log group."""
    from gpu_insights_agent.contract.metrics import training_log_group
    from gpu_insights_agent.emf.document import encode
    from gpu_insights_agent.emitter.training import TrainingMetrics

    logs = session.client("logs")
    logs.create_log_group(logGroupName=training_log_group("train"))
    logs.create_log_stream(logGroupName=training_log_group("train"), logStreamName="agent")
    events = []
    for rank in range(2):
        sink = Keep()
        metrics = TrainingMetrics(
            job_name="llama-ft",
            cluster_name="train",
            rank=rank,
            node_name=f"ip-10-0-2-{rank}.ec2.internal",
            pod_name=f"llama-ft-worker-{rank}",
            gpus=f"GPU-{rank}a,GPU-{rank}b",
            sink=sink,
            heartbeat=False,
            wall_clock=lambda: at_s - 120,
        )
        metrics.flush()
        metrics.drain()
        events += [
            {"timestamp": int(at_s * 1000) - 120_000, "message": encode(d)} for d in sink.documents
        ]
    logs.put_log_events(
        logGroupName=training_log_group("train"), logStreamName="agent", logEvents=events
    )


def test_a_hung_job_is_one_message_naming_its_pods_nodes_gpus_and_dashboard(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    now = time.time()
    _emit_job(aws["session"], now)
    # By kind, as the stack declares them (cdk/function_configs.py): job alarms are sharded.
    kinds = {s.kind: [str(s.severity), s.title] for s in SPECS}
    monkeypatch.setenv("ALARM_KINDS", json.dumps(kinds))
    _as_role(aws, templates, monkeypatch)
    at = time.strftime("%Y-%m-%dT%H:%M:%S.000+0000", time.gmtime(now))
    assert notifier.handler(_job_hung_event(at), None)["published"] == 1
    (message,) = _messages(aws, "critical")
    text = message["Message"]
    assert message["Subject"] == (
        "[CRITICAL] Training job hung: job llama-ft on ip-10-0-2-0.ec2.internal, "
        "ip-10-0-2-1.ec2.internal"
    )
    assert "Pods:          llama-ft-worker-0, llama-ft-worker-1" in text, text
    assert "GPU:           GPU-0a,GPU-0b, GPU-1a,GPU-1b" in text
    assert "Job:           llama-ft" in text
    assert "Observed:      642" in text
    assert "Threshold:     600" in text
    assert "read the ranks' last log lines" in text  # what to do
    assert "#dashboards/dashboard/gpu-insights-train-training?var-job=llama-ft" in text, text


def _classic_fail_slow_event(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """A Classic fail-slow alarm's event, the job's GPUs' series planted (GPU 3 of
    ip-10-0-2-1 held by a thermal slowdown), the handler's clients the notifier's role."""
    from datetime import UTC, datetime

    from gpu_insights_agent.contract.metrics import GpuMetric, alarm_shard, gpu_schema

    now = time.time()
    _emit_job(aws["session"], now)
    cloudwatch = aws["session"].client("cloudwatch")
    for rank in range(2):
        node = f"ip-10-0-2-{rank}.ec2.internal"
        for gpu in range(4):
            dims = {"ClusterName": "train", "NodeName": node, "GpuIndex": str(gpu)}
            metrics = [GpuMetric.HEALTHY] + (
                [GpuMetric.THROTTLED_THERMAL] if rank and gpu == 3 else []
            )
            for metric in metrics:
                shard = (
                    {"Shard": alarm_shard(node, gpu, 1)} if "Shard" in gpu_schema(metric) else {}
                )
                cloudwatch.put_metric_data(
                    Namespace="GpuInsights",
                    MetricData=[
                        {
                            "MetricName": str(metric),
                            "Dimensions": [
                                {"Name": k, "Value": v} for k, v in {**dims, **shard}.items()
                            ],
                            "Timestamp": datetime.fromtimestamp(now - 60 * m, UTC),
                            "Value": 1.0,
                        }
                        for m in range(1, 5)
                    ],
                )
    kinds = {s.kind: [str(s.severity), s.title] for s in SPECS}
    monkeypatch.setenv("ALARM_KINDS", json.dumps(kinds))
    principal = _as_role(aws, templates, monkeypatch)
    monkeypatch.setitem(notifier._clients, "cloudwatch", principal.role("cloudwatch"))
    at = time.strftime("%Y-%m-%dT%H:%M:%S.000+0000", time.gmtime(now))
    return _job_hung_event(at, "job-step-time-rise-shard-00")


def test_a_classic_fail_slow_page_names_its_culprit_from_getmetricdata(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Classic (a Metrics Insights job alarm): the page reads the GPUs of the nodes the job's
    ranks name (lambdas/notifier/fail_slow_classic.py) with the role's own ListMetrics and
    GetMetricData, and names the GPU held by the thermal slowdown."""
    event = _classic_fail_slow_event(aws, templates, monkeypatch)
    assert notifier.handler(event, None)["published"] == 1
    (message,) = _messages(aws, "warning")
    assert message["Subject"].startswith("[WARNING] Training job slowed (fail-slow): job llama-ft")
    text = message["Message"]
    assert "Culprit:       node ip-10-0-2-1.ec2.internal, GPU 3" in text, text
    assert "Evidence:      NVML clock event reason: thermal slowdown" in text, text


def _culprit_records(out: str) -> list[dict[str, Any]]:
    """The fail-slow culprit records among what the function printed (its EMF lines)."""
    lines = [json.loads(x) for x in out.splitlines() if '"_aws"' in x]
    return [line for line in lines if "fail_slow_culprits" in line]


def test_a_sent_fail_slow_page_records_its_culprit_node_once(
    aws: dict[str, Any],
    templates: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The page that names a culprit is recorded for the lemon-node score: one EMF line, 1 on
    fail_slow_culprits for its cluster and node (lambdas/notifier/culprit_record.py), printed
    after the page, under the role's own policy (it needs none). The same alarm event again
    (Lambda's retry, a repeated event) sends nothing and records nothing twice."""
    event = _classic_fail_slow_event(aws, templates, monkeypatch)
    capsys.readouterr()
    assert notifier.handler(event, None)["published"] == 1
    assert len(_messages(aws, "warning")) == 1
    (record,) = _culprit_records(capsys.readouterr().out)
    assert record["ClusterName"] == "train"
    assert record["NodeName"] == "ip-10-0-2-1.ec2.internal"
    assert record["fail_slow_culprits"] == 1.0
    assert record["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "GpuInsights"
    assert record["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["ClusterName", "NodeName"]]
    assert notifier.handler(event, None)["published"] == 0
    assert _culprit_records(capsys.readouterr().out) == []
    assert _messages(aws, "warning") == []


def test_a_classic_goodput_page_says_which_badput_grew_from_getmetricdata(
    aws: dict[str, Any], templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Classic (a Metrics Insights job alarm): the goodput page reads the job's emitter series
    with the role's own GetMetricData (lambdas/notifier/fail_slow_classic.py) and says the data
    wait grew: 40% of the alarm's hour against 5% the hour before."""
    from datetime import UTC, datetime

    from gpu_insights_agent.contract.metrics import TrainingMetric

    now = time.time()
    _emit_job(aws["session"], now)
    cloudwatch = aws["session"].client("cloudwatch")
    job = {"ClusterName": "train", "JobName": "llama-ft"}
    # The emitter's time split of its minute windows: the data wait's share of each.
    for hours_ago, wait in ((1, 40.0), (2, 5.0)):
        stamps = [now - 3600 * (hours_ago - 1) - 60 * m - 30 for m in range(0, 60, 6)]
        for metric, dims, value in (
            (TrainingMetric.DATA_WAIT_TIME, job, 0.6 * wait),
            (TrainingMetric.COMPUTE_TIME, job, 60 - 0.6 * wait),
        ):
            cloudwatch.put_metric_data(
                Namespace="GpuInsights/Training",
                MetricData=[
                    {
                        "MetricName": str(metric),
                        "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
                        "Timestamp": datetime.fromtimestamp(stamp, UTC),
                        "Value": value,
                    }
                    for stamp in stamps
                ],
            )
    kinds = {s.kind: [str(s.severity), s.title] for s in SPECS}
    monkeypatch.setenv("ALARM_KINDS", json.dumps(kinds))
    principal = _as_role(aws, templates, monkeypatch)
    monkeypatch.setitem(notifier._clients, "cloudwatch", principal.role("cloudwatch"))
    at = time.strftime("%Y-%m-%dT%H:%M:%S.000+0000", time.gmtime(now))
    event = _job_hung_event(at, "job-goodput-low-shard-00")
    assert notifier.handler(event, None)["published"] == 1
    (message,) = [m for m in _messages(aws, "warning") if "goodput" in m["Subject"].lower()]
    text = message["Message"]
    assert "Badput that grew: data wait: 40% of the hour, 5% the hour before" in " ".join(
        text.split()
    ), text


def _promql_job_page(
    aws: dict[str, Any],
    templates: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
    key: str,
    job: str,
    minute: int,
) -> Any:
    """The notifier's page of ``key``'s PromQL contributor ``job`` at ``minute`` of the demo's
    jobs as OTel mode's emitter sends them, served by a real engine at the Region's monitoring
    host (cli.demo.promql.answering); returns the engine's answered requests."""
    from cli.demo.jobs import promql_samples, simulate
    from cli.demo.promql import answering
    from tests.prometheus import serve, write_openmetrics
    from tests.unit.lambdas.notifier.events import PROMQL_JOB_LABELS

    start = 1_764_000_000.0
    write_openmetrics(tmp_path / "jobs.om", promql_samples(simulate("train", start)))
    otlp = AlarmSettings(cluster_name="train", promql=True, otlp=True)
    kinds = {s.kind: [str(s.severity), s.title] for s in deployed_alarms(otlp)}
    monkeypatch.setenv("ALARM_KINDS", json.dumps(kinds))
    monkeypatch.setenv(
        "PROMQL_ALARM_KINDS", ",".join(sorted({s.kind for s in promql_alarms(otlp)}))
    )
    _as_role(aws, templates, monkeypatch)
    monkeypatch.setitem(notifier._clients, "cloudwatch", aws["session"].client("cloudwatch"))
    (spec,) = [s for s in promql_alarms(otlp) if s.key == key]
    labels = {**PROMQL_JOB_LABELS, "job_name": job}
    event = as_promql_contributor(
        AWS_CONTRIBUTOR_EXAMPLE, f"gpu-insights-train-{key}", spec.description, labels
    )
    at = time.strftime("%Y-%m-%dT%H:%M:%S.000+0000", time.gmtime(start + minute * 60))
    event["detail"]["state"]["timestamp"] = at
    with serve(tmp_path / "jobs.om", tmp_path / "data") as url, answering("us-east-1", url) as api:
        assert notifier.handler(event, None) == {"incidents": 1, "published": 1, "unreadable": 0}
    return api


@pytest.mark.promql_engine
def test_a_promql_job_contributor_is_one_message_naming_its_ranks_pods_and_nodes(
    aws: dict[str, Any],
    templates: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
) -> None:
    """OTel mode with the OTLP sink: job-hung is a PromQL alarm whose contributor is the job
    (cluster, namespace, job_name). The emitter writes no documents there, so the notifier reads
    the job's ranks from CloudWatch's PromQL API, signed with its CloudWatch client's
    credentials: here the demo's jobs as OTel mode's emitter sends them, served by a real engine
    at the Region's monitoring host (cli.demo.promql.answering)."""
    # The replay's page: minute 55 of the demo's hours (tests/functional/cli/backtest/
    # test_job_promql_alarms.py).
    api = _promql_job_page(aws, templates, monkeypatch, tmp_path, "job-hung", "llama-hangs", 55)
    (request,) = api.answered
    assert request.get_header("Authorization", "").startswith("AWS4-HMAC-SHA256 ")
    (message,) = _messages(aws, "critical")
    text = message["Message"]
    assert message["Subject"].startswith("[CRITICAL] Training job hung: job llama-hangs on ")
    for line in (
        "Node:          ip-10-0-4-10.ec2.internal, ip-10-0-4-11.ec2.internal",
        "Pods:          llama-hangs-master-0, llama-hangs-worker-0",
        "Job:           llama-hangs",
        "Namespace:     nlp",
        "GPU:           not named (no label of the job's OTLP series)",
    ):
        assert line in text, text


@pytest.mark.promql_engine
def test_a_promql_fail_slow_page_says_its_culprit_read_at_the_alarms_time(
    aws: dict[str, Any],
    templates: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """OTel mode: the fail-slow page of the demo's slowed job (bert-slows, four times slower
    from minute 50 with no GPU, rank or node standing out) reads its GPUs' and ranks' series at
    the alarm's time (lambdas/notifier/fail_slow_page.py) and says there is no single culprit;
    with the role's own signed PromQL requests."""
    key, job = "job-step-time-rise", "bert-slows"
    api = _promql_job_page(aws, templates, monkeypatch, tmp_path, key, job, 53)
    # The ranks' placement, then the ranks' data wait now and before, the GPUs of their two
    # nodes (seen; the three fault reasons, the SM clock and the three error counts; the
    # error counts before) and the nodes' CPU.
    assert len(api.answered) == 1 + 2 + (1 + 7 + 3) + 1
    assert all(
        r.get_header("Authorization", "").startswith("AWS4-HMAC-SHA256 ") for r in api.answered
    )
    (message,) = _messages(aws, "warning")
    assert message["Subject"].startswith(f"[WARNING] Training job slowed (fail-slow): job {job}")
    assert (
        "Culprit:       none: no GPU, rank or node stands out from the others: the whole job "
        "slowed (its network, its code, or its input)"
    ) in message["Message"], message["Message"]
    # No culprit: no node is recorded for the lemon-node score.
    assert _culprit_records(capsys.readouterr().out) == []
