"""The demo's notifications: the notifier Lambda over what the demo's node did, as the deployed
function gets it (CloudWatch Logs subscription payloads, EventBridge alarm events), with its
topics, sent ledger and the exporter's log group in moto. Prints what people would read."""

import base64
import gzip
import io
import json
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass, field
from datetime import UTC, datetime
from operator import itemgetter
from pathlib import Path
from typing import Any, Final

from cdk.function_configs import notifier_config
from cdk.settings import Settings
from cli.backtest.engine import BacktestResult
from cli.backtest.evaluator import Transition
from cli.demo.exporter import NODE, ExporterReplay, replay_window
from cli.demo.storage import environment
from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_NODE,
    DIM_XID_CODE,
    exporter_log_group,
)
from lambdas.notifier import handler as notifier
from lambdas.notifier.messages import STREAM_INFIX
from lambdas.notifier.xid_fields import pci_device

ACCOUNT = "123456789012"
_TIMESTAMP: Final = itemgetter("timestamp")
STORM_LINES = 500
STORM_LINE = "NVRM: Xid (PCI:0000:53:00): 13, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0)"
TABLE = "demo-sent-incidents"
#: The file of every message the demo's notifier sent, its body as sent.
NOTIFICATIONS = "notifications.txt"

#: The services the demo gives the notifier, as its role gives them in a deployment.
NOTIFIER_SERVICES: Final = ("sns", "dynamodb", "logs", "cloudwatch")


@dataclass
class NotificationsDemo:
    #: (topic, subject, text) of every message the topics received, in order.
    messages: list[tuple[str, str, str]] = field(default_factory=list)
    storm_published: int = 0
    storm_retry_published: int = 0
    path: Path | None = None


def _subscription(messages: list[str], at_ms: int, stream: str = NODE) -> dict[str, Any]:
    payload = {
        "messageType": "DATA_MESSAGE",
        "logStream": stream,
        "logEvents": [
            {"id": str(i), "timestamp": at_ms + i, "message": m} for i, m in enumerate(messages)
        ],
    }
    data = base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()
    return {"awslogs": {"data": data}}


def gpus_in_alarm(result: BacktestResult) -> list[str]:
    """The GPUs of every contributor the backtest put in ALARM: one contributor event each, as
    CloudWatch sends one per contributor of a multi-time-series alarm. Cluster-wide alarms
    (the XID counts) have no GPU contributor: their XIDs are paged from the exporter's
    documents."""
    named = (
        dict(zip(result.contributor_names, g, strict=True)) for g in result.contributors_alarmed
    )
    return [str(n[DIM_GPU_INDEX]) for n in named if DIM_GPU_INDEX in n]


#: How CloudWatch words each comparison in a state reason.
_WORDING = {
    "GreaterThanOrEqualToThreshold": "greater than or equal to",
    "GreaterThanThreshold": "greater than",
    "LessThanThreshold": "less than",
    "LessThanOrEqualToThreshold": "less than or equal to",
}


def cloudwatch_reason(result: BacktestResult, values: list[float], at: datetime) -> str:
    """The backtest's breach in CloudWatch's state-reason sentence for a contributor: how many
    datapoints crossed and the most recent one (the User Guide's "Alarm Contributor Example",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html)."""
    spec = result.spec
    crossed = [v for v in values if spec.comparison.breaches(v, spec.threshold)]
    hits = len(crossed) or spec.datapoints_to_alarm
    latest = f" [{crossed[-1]:g} ({at:%d/%m/%y %H:%M:%S})]" if crossed else ""
    return (
        f"Threshold Crossed: {hits} datapoint{'s were' if hits != 1 else ' was'} "
        f"{_WORDING[str(spec.comparison)]} the threshold ({float(spec.threshold)}). "
        f"The most recent datapoint which crossed the threshold:{latest}."
    )


def contributor_event(
    settings: Settings, result: BacktestResult, gpu: str, region: str
) -> dict[str, Any]:
    """A ``CloudWatch Alarm Contributor State Change`` for one GPU of one raised alarm."""
    first = _first_alarm(result, gpu)
    attributes = {DIM_CLUSTER: settings.cluster_name, DIM_NODE: NODE, DIM_GPU_INDEX: gpu}
    return alarm_contributor_event(
        settings, result, region, first, _values(first.reason),
        name=gpu, contributor_id=f"{result.spec.key[:10]}{gpu}"[:16], attributes=attributes,
    )  # fmt: skip


def alarm_contributor_event(
    settings: Settings,
    result: BacktestResult,
    region: str,
    first: Transition,
    values: list[float],
    *,
    name: str,
    contributor_id: str,
    attributes: dict[str, str],
) -> dict[str, Any]:
    """The event EventBridge delivers when a contributor (a GPU, a job) of a raised alarm goes
    to ALARM, at its first ALARM transition in the backtest."""
    when = datetime.fromtimestamp(first.time, UTC)
    alarm = result.spec.alarm_name(settings.cluster_name)
    return {
        "version": "0",
        "id": f"demo-{result.spec.key}-{name}",
        "detail-type": "CloudWatch Alarm Contributor State Change",
        "source": "aws.cloudwatch",
        "account": ACCOUNT,
        "time": f"{when:%Y-%m-%dT%H:%M:%SZ}",
        "region": region,
        "resources": [f"arn:aws:cloudwatch:{region}:{ACCOUNT}:alarm:{alarm}"],
        "detail": {
            "alarmName": alarm,
            "alarmContributor": {"id": contributor_id, "attributes": attributes},
            "configuration": {"description": result.spec.description},
            "state": {
                "value": "ALARM",
                "reason": cloudwatch_reason(result, values, when),
                "timestamp": when.isoformat(),
            },
        },
    }


def _first_alarm(result: BacktestResult, gpu: str) -> Transition:
    """The GPU's own first ALARM as a contributor (its reason lists its datapoints), else the
    alarm's."""
    names = result.contributor_names
    for group, transitions in result.contributors.items():
        if dict(zip(names, group, strict=True)).get(DIM_GPU_INDEX) == gpu:
            for transition in transitions:
                if transition.new.value == "ALARM":
                    return transition
    return next(t for t in result.transitions if t.new.value == "ALARM")


def _values(reason: str) -> list[float]:
    """The datapoints a backtest reason lists in brackets."""
    inside = re.search(r"\[([^\]]*)\]", reason)
    return [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", inside[1])] if inside else []


@contextmanager
def notifier_at(at_s: float) -> Iterator[None]:
    """The notifier run as at ``at_s``: the demo delivers each event when it would arrive, so
    the notifier's reads near its time (the kernel log's last hour) are of the replayed hours."""
    notifier._clock.now = lambda: at_s
    try:
        yield
    finally:
        notifier._clock.now = time.time


def kernel_record(document: dict[str, Any]) -> str:
    """The driver's own line of an exporter XID document, as Container Insights' Fluent Bit
    ships /var/log/dmesg (``Key message``; its aws filter's fields): ``NVRM: Xid (PCI:<bus>):
    <code>, ...`` with the kernel's form of the GPU's PCI bus id (lambdas/notifier/
    xid_fields.py ``pci_device``), which the notifier's kernel confirmation reads."""
    bus = pci_device(str(document["PciBusId"]))
    line = (
        f"NVRM: Xid (PCI:{bus}): {document['XidCode']}, pid=4123, name=python3, "
        f"{document.get('XidDescription', '')}"
    )
    return json.dumps({"message": line, "az": "us-east-1a", "ec2_instance_id": "i-0demo"})


def _kernel_log(logs: Any, group: str, xid_documents: Sequence[dict[str, Any]]) -> None:
    """The host log group with the kernel's line of each exporter XID on its node's
    ``<node>.host.dmesg`` stream, a second after the exporter saw it."""
    if not logs.describe_log_groups(logGroupNamePrefix=group)["logGroups"]:
        logs.create_log_group(logGroupName=group)
    streams: dict[str, list[dict[str, Any]]] = {}
    for document in xid_documents:
        stream = f"{document[DIM_NODE]}{STREAM_INFIX}dmesg"
        at = int(document["_aws"]["Timestamp"]) + 1_000
        streams.setdefault(stream, []).append({"timestamp": at, "message": kernel_record(document)})
    for stream, events in streams.items():
        found = logs.describe_log_streams(logGroupName=group, logStreamNamePrefix=stream)
        if not found["logStreams"]:
            logs.create_log_stream(logGroupName=group, logStreamName=stream)
        logs.put_log_events(
            logGroupName=group, logStreamName=stream, logEvents=sorted(events, key=_TIMESTAMP)
        )


@contextmanager
def _deployed(
    session: Any, settings: Settings, xid_documents: Sequence[dict[str, Any]] = ()
) -> Iterator[dict[str, str]]:
    """The notifier's topics (each with a queue standing in for an email subscriber), its
    ledger and environment, and its clients; the host log group holds the kernel's line of
    each of ``xid_documents`` (the exporter's), as a node's kernel writes it."""
    sns, sqs = session.client("sns"), session.client("sqs")
    queues, topics = {}, {}
    for purpose in ("critical", "warning"):
        arn = sns.create_topic(Name=f"demo-{purpose}")["TopicArn"]
        url = sqs.create_queue(QueueName=f"demo-notify-{purpose}")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
        sns.subscribe(TopicArn=arn, Protocol="sqs", Endpoint=queue_arn["Attributes"]["QueueArn"])
        topics[purpose] = arn
        queues[purpose] = url
    session.client("dynamodb").create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "incident", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "incident", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    logs = session.client("logs")
    group = exporter_log_group(settings.cluster_name)
    if not logs.describe_log_groups(logGroupNamePrefix=group)["logGroups"]:
        logs.create_log_group(logGroupName=group)
    config = notifier_config(
        settings,
        region=session.region_name,
        critical_topic_arn=topics["critical"],
        warning_topic_arn=topics["warning"],
        sent_table=TABLE,
        exporter_log_group=group,
    )
    if config.host_log_group is not None:
        _kernel_log(logs, config.host_log_group, xid_documents)
    # CloudWatch: a Classic fail-slow page reads its job's series (fail_slow_classic.py).
    for service in NOTIFIER_SERVICES:
        notifier._clients[service] = session.client(service)
    # The demo stands in for Lambda too: AWS_REGION, which Lambda sets, with the rest; and
    # what the function prints (its refused-events EMF line, lambdas/notifier/refused.py) goes
    # where Lambda sends it, the function's own log, not the demo's output.
    with environment(config.environment(runtime=True)), redirect_stdout(io.StringIO()):
        yield queues


def _received(sqs: Any, queues: dict[str, str]) -> list[tuple[str, str, str]]:
    out = []
    for purpose, url in queues.items():
        while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
            for message in batch:
                body = json.loads(message["Body"])
                out.append((purpose, body["Subject"], body["Message"]))
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return out


def run_notifications(
    session: Any,
    settings: Settings,
    replay: ExporterReplay,
    backtest: list[BacktestResult],
    out_dir: Path,
    job_events: Sequence[dict[str, Any]] = (),
) -> NotificationsDemo:
    demo = NotificationsDemo()
    sqs = session.client("sqs")
    xid_lines = []
    if replay.emf_path is not None:
        xid_lines = [
            line for line in replay.emf_path.read_text().splitlines() if DIM_XID_CODE in line
        ]
    xids = [json.loads(line) for line in xid_lines]
    with _deployed(session, settings, xids) as queues:
        # 1. The exporter's XID documents, as the log subscription delivers them.
        if xid_lines:
            # One batch, delivered after the last document was written: each event is stamped
            # when CloudWatch Logs received it, so only the documents say when each XID was.
            received = max(d["_aws"]["Timestamp"] for d in xids) + 5_000
            with notifier_at(received / 1000):
                notifier.handler(_subscription(xid_lines, received), None)
        # 2. Each GPU the raised alarms name, as EventBridge delivers its contributor event.
        for result in backtest:
            for gpu in gpus_in_alarm(result):
                event = contributor_event(settings, result, gpu, session.region_name)
                notifier.handler(event, None)
        # 2b. Each job the raised job alarms name, as its contributor event.
        for event in job_events:
            notifier.handler(event, None)
        # 3. A storm: 500 identical XID 13 lines in one batch, then the same batch retried,
        #    as the host's kernel log delivers them at the end of the replayed hours.
        storm = [json.dumps({"message": STORM_LINE, "hostname": NODE})] * STORM_LINES
        at = int(replay_window()[1] * 1000)
        demo.storm_published = notifier.handler(_subscription(storm, at), None)["published"]
        retried = notifier.handler(_subscription(storm, at), None)
        demo.storm_retry_published = retried["published"]
        demo.messages = _received(sqs, queues)
    for service in NOTIFIER_SERVICES:
        notifier._clients.pop(service, None)
    demo.path = out_dir / NOTIFICATIONS
    demo.path.write_text(messages_text((t, text) for t, _, text in demo.messages))
    return demo


def messages_text(messages: Iterable[tuple[str, str]]) -> str:
    """Each (topic, message) as ``NOTIFICATIONS`` holds it: the message as the notifier sent
    it, under the topic it went to."""
    return "\n\n".join(f"--- to the {topic} topic ---\n{text}" for topic, text in messages) + "\n"


def notifications_summary(demo: NotificationsDemo) -> list[str]:
    lines = [
        f"10. The notifier Lambda sent {len(demo.messages)} messages, one per incident "
        f"(plain text for email, an Amazon Q Developer custom notification for chat); a storm "
        f"of {STORM_LINES} identical XID 13 lines was {demo.storm_published} message, and its "
        f"retried batch sent {demo.storm_retry_published} more:"
    ]
    for topic, subject, text in demo.messages:
        lines.append(f"   [{topic} topic] {subject}")
        lines += [f"      {line}" if line else "" for line in text.splitlines()[2:]]
    return lines
