"""The XID notifier end to end with moto: a log subscription payload in, SNS messages out."""

import base64
import gzip
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from agent.exporter import Exporter, ExporterConfig
from agent.fake_nvml import FakeNvml
from agent.sinks import BufferedSender
from lambdas.xid_notifier import handler as xid_handler
from tests.functional.lambdas.iam import resolve, role_statements, run_as_role, without
from tests.unit.agent.nvml_trace import Clock, trace_lines

HANDLER = "lambdas.xid_notifier.handler.handler"


class Keep:
    def __init__(self) -> None:
        self.documents: list[dict[str, Any]] = []

    def send(self, documents: Any) -> None:
        self.documents.extend(documents)


def _subscription_event(messages: list[str], stream: str = "node-a") -> dict[str, Any]:
    payload = {
        "messageType": "DATA_MESSAGE",
        "logGroup": "/aws/gpu-insights/train/exporter",
        "logStream": stream,
        "logEvents": [{"id": str(i), "timestamp": 0, "message": m} for i, m in enumerate(messages)],
    }
    data = base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()
    return {"awslogs": {"data": data}}


@pytest.fixture
def topics(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any, dict[str, str]]]:
    with mock_aws():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        sns, sqs = session.client("sns"), session.client("sqs")
        queues = {}
        arns = {}
        for name in ("critical", "warning"):
            arns[name] = sns.create_topic(Name=f"gpu-insights-train-{name}")["TopicArn"]
            queues[name] = sqs.create_queue(QueueName=name)["QueueUrl"]
            queue_arn = sqs.get_queue_attributes(
                QueueUrl=queues[name], AttributeNames=["QueueArn"]
            )["Attributes"]["QueueArn"]
            sns.subscribe(TopicArn=arns[name], Protocol="sqs", Endpoint=queue_arn)
        monkeypatch.setenv("CLUSTER_NAME", "train")
        monkeypatch.setenv("CRITICAL_TOPIC_ARN", arns["critical"])
        monkeypatch.setenv("WARNING_TOPIC_ARN", arns["warning"])
        monkeypatch.setitem(xid_handler._clients, "sns", sns)
        yield sns, sqs, queues


def _messages(sqs: Any, queue: str) -> list[dict[str, str]]:
    response = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)
    return [json.loads(m["Body"]) for m in response.get("Messages", [])]


def _statements(templates: list[dict[str, Any]], physical: dict[str, Any]) -> list[Any]:
    return list(resolve(role_statements(templates, HANDLER), physical))


def test_without_its_publish_statement_the_notifier_is_denied(
    topics: Any, templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    statements = without(_statements(templates, {}), lambda s: s["Action"] == "sns:Publish")
    principal = run_as_role(statements, monkeypatch, "xid-notifier")
    monkeypatch.setitem(xid_handler._clients, "sns", principal.role("sns"))
    line = json.dumps({"message": "NVRM: Xid (PCI:0000:53:00): 79, GPU has fallen off the bus."})
    with pytest.raises(xid_handler.PublishError, match="AccessDenied"):
        xid_handler.handler(_subscription_event([line]), None)


def test_exporter_xids_reach_the_topic_their_severity_names(
    topics: Any, templates: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run as the notifier's role, with moto's IAM authorization on (limits:
    tests/functional/lambdas/iam.py: sns:Publish is enforced, the topic ARNs are not)."""
    sns, _, queues = topics
    physical = {
        f"Topics{name.title()}": {
            "Ref": sns.create_topic(Name=f"gpu-insights-train-{name}")["TopicArn"]
        }
        for name in ("critical", "warning")
    }  # create_topic answers the existing topic's ARN
    principal = run_as_role(_statements(templates, physical), monkeypatch, "xid-notifier")
    monkeypatch.setitem(xid_handler._clients, "sns", principal.role("sns"))
    sqs = principal.admin("sqs")
    sink = Keep()
    exporter = Exporter(
        FakeNvml(trace_lines(), clock=Clock(16)),
        BufferedSender(sink),
        ExporterConfig(cluster_name="train", node_name="node-a"),
    )
    exporter.start()
    assert exporter.watcher is not None
    exporter.watcher.drain()  # XID 13 on GPU 0 and XID 48 on GPU 2
    event = _subscription_event([json.dumps(d) for d in sink.documents])
    assert xid_handler.handler(event, None) == {"published": 2, "unreadable": 0}
    (critical,) = _messages(sqs, queues["critical"])
    assert critical["Subject"] == "[FATAL] XID 48 on node-a GPU 2"
    body = critical["Message"]
    for line in (
        "Cluster:  train",
        "Node:     node-a",
        "GPU:      2",
        "XID code: 48 (fatal)",
        "Meaning:  Double-bit ECC error: uncorrectable memory error",
        "cordon and drain",
    ):
        assert line in body  # fmt: skip
    (warning,) = _messages(sqs, queues["warning"])
    assert warning["Subject"] == "[INFO] XID 13 on node-a GPU 0"


def test_kernel_log_lines_are_the_fallback_and_bad_lines_are_counted(topics: Any) -> None:
    _, sqs, queues = topics
    lines = [
        json.dumps({"message": "NVRM: Xid (PCI:0000:53:00): 79, pid=1, GPU has fallen off the bus.",
                    "hostname": "ip-10-0-0-9.ec2.internal"}),
        json.dumps({"message": "NVRM: Xid (PCI:0000:53:00): garbled"}),
        json.dumps({"message": "eth0: link up"}),
    ]  # fmt: skip
    result = xid_handler.handler(_subscription_event(lines, stream="i-0abc"), None)
    assert result == {"published": 1, "unreadable": 1}
    (critical,) = _messages(sqs, queues["critical"])
    assert critical["Subject"] == "[FATAL] XID 79 on ip-10-0-0-9.ec2.internal GPU PCI 0000:53:00"
    assert "GPU has fallen off the bus" in critical["Message"]


def test_sns_failure_raises_so_lambda_retries(topics: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRITICAL_TOPIC_ARN", "arn:aws:sns:us-east-1:123456789012:missing")
    line = json.dumps({"message": "NVRM: Xid (PCI:0000:53:00): 79, GPU has fallen off the bus."})
    with pytest.raises(xid_handler.PublishError, match="publishing XID 79"):
        xid_handler.handler(_subscription_event([line]), None)
