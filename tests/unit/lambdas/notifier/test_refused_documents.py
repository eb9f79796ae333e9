"""One bad log event never stops its batch: each XID document is read and checked on its own,
a bad one is refused with a reason naming its field, and the good ones page."""

import json
from typing import Any

import boto3
import pytest

from gpu_insights_agent.emf.sinks import BufferedSender
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from gpu_insights_agent.exporter.xid_watcher import XidEvent
from lambdas.notifier.messages import group_xids, parse_log_events
from lambdas.notifier.refused import refused_line
from lambdas.notifier.sent_ledger import MAX_KEY_BYTES, LedgerError, SentLedger
from lambdas.notifier.xid_fields import MAX_AHEAD_MS, same_pci_device
from tests.unit.agent.exporter.nvml_trace import Clock, trace_lines
from tests.unit.lambdas.notifier.events import NODE

T0 = 1_772_460_000.0  # 2026-03-02 14:00:00 UTC
KERNEL_79 = "NVRM: Xid (PCI:0000:53:00): 79, x"


class Keep:
    def __init__(self) -> None:
        self.documents: list[dict[str, Any]] = []

    def send(self, documents: Any) -> None:
        self.documents.extend(documents)


def exporter_xid(code: int = 79, gpu: int = 3, at: float = T0) -> dict[str, Any]:
    """An XID document exactly as the exporter writes it."""
    exporter = Exporter(
        NvmlSource(FakeNvml(trace_lines(), clock=Clock(16))),
        BufferedSender(Keep()),
        ExporterConfig(cluster_name="train", node_name=NODE),
    )
    return exporter.xid_document(XidEvent(gpu_index=gpu, code=code, time=at), [])


def _payload(messages: list[str]) -> dict[str, Any]:
    at = int(T0 * 1000)
    return {
        "logStream": NODE,
        "logEvents": [
            {"id": str(i), "timestamp": at + i, "message": m} for i, m in enumerate(messages)
        ],
    }


def test_an_infinite_xid_code_is_refused_and_the_fatal_xid_beside_it_still_read() -> None:
    """Before: ``int(inf)`` raised OverflowError out of the batch, and XID 79 never paged."""
    bad = json.dumps(exporter_xid(), separators=(",", ":")).replace(
        '"XidCode":"79"', '"XidCode":1e400'
    )
    assert '"XidCode":1e400' in bad
    parsed = parse_log_events(_payload([bad, json.dumps(exporter_xid())]), cluster="train")
    assert [(n.code, n.node, n.gpu) for n in parsed.notices] == [(79, NODE, "3")]
    (refusal,) = parsed.refused
    assert refusal.event_id == "0"
    assert refusal.reason == "XidCode inf is not a whole number"


def test_a_node_name_over_2048_bytes_is_refused_before_it_reaches_the_ledger() -> None:
    """Before: read, and its ledger key (over 2,048 bytes) refused by DynamoDB."""
    document = exporter_xid()
    document["NodeName"] = "n" * 3000
    parsed = parse_log_events(_payload([json.dumps(document)]), cluster="train")
    assert parsed.notices == []
    assert parsed.refused[0].reason.startswith("NodeName 'nnnn")
    assert "is not a Kubernetes node name" in parsed.refused[0].reason
    assert len(parsed.refused[0].reason) < 200  # one short log line, not the whole field


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("XidCode", "abc", "XidCode 'abc' is not a whole number"),
        ("XidCode", 0, "XidCode 0 is not an XID code"),
        ("XidCode", "10000", "XidCode '10000' is not a whole number"),
        ("XidCode", True, "XidCode True is not a whole number"),
        ("XidCode", [79], "XidCode [79] is not a whole number"),
        ("XidCode", 79.5, "XidCode 79.5 is not a whole number"),
        ("NodeName", "", "NodeName '' is not a Kubernetes node name"),
        ("NodeName", "Node A", "NodeName 'Node A' is not a Kubernetes node name"),
        ("NodeName", 7, "NodeName 7 is not a Kubernetes node name"),
        ("NodeName", None, "NodeName None is not"),
        ("ClusterName", "prod", "ClusterName 'prod' is not this deployment's (train)"),
        ("ClusterName", "a b", "ClusterName 'a b' is not an EKS cluster name"),
        ("GpuIndex", "x", "GpuIndex 'x' is not a GPU index"),
        ("GpuIndex", None, "GpuIndex None is not a GPU index"),
        ("PodUids", "ccee30b7", "PodUids 'ccee30b7' is not a list"),
        ("PodUids", [1], "PodUids has 1, which is not a pod UID"),
        ("PodUids", ["u"] * 111, "is not a list of at most 110 UIDs"),
        ("XidSource", "<b>", "XidSource '<b>' is not a source name"),
        ("PciBusId", "53:00", "PciBusId '53:00' is not a PCI bus id"),
        ("PodsLastSeenMs", "13:59", "PodsLastSeenMs '13:59' is not epoch milliseconds"),
        ("PodsLastSeenMs", 1e400, "PodsLastSeenMs inf is not epoch milliseconds"),
        ("PodsLastSeenMs", 5, "PodsLastSeenMs 5 is not in 2000 to 2199"),
    ],
)
def test_each_field_of_an_xid_document_is_checked(field: str, value: Any, named: str) -> None:
    document = exporter_xid()
    document[field] = value
    parsed = parse_log_events(_payload([json.dumps(document)]), cluster="train")
    assert parsed.notices == []
    (refusal,) = parsed.refused
    assert named in refusal.reason


@pytest.mark.parametrize(
    ("event", "named"),
    [
        ({"id": "1", "timestamp": 1e400, "message": KERNEL_79}, "timestamp"),
        ({"id": "1", "timestamp": "now", "message": KERNEL_79}, "timestamp"),
        ({"id": "1", "timestamp": 1, "message": KERNEL_79}, "2000 to 2199"),
        ({"id": "1", "timestamp": 1_772_460_000_000, "message": 79}, "message is a int"),
        ({"id": "1", "timestamp": 1_772_460_000_000, "message": '["_aws"]'}, "JSON list"),
        ({"id": "1", "timestamp": 1_772_460_000_000, "message": "[" * 100_000 + '"_aws"'}, "JSON"),
        (
            {"id": "1", "timestamp": 1_772_460_000_000,
             "message": json.dumps({"message": "NVRM: Xid (PCI:0000:53:00): 79, x",
                                    "hostname": "h" * 300})},
            "host name",
        ),
    ],
)  # fmt: skip
def test_a_malformed_log_event_is_refused_with_its_reason(
    event: dict[str, Any], named: str
) -> None:
    """Before: OverflowError, TypeError, RecursionError, or a host name past the ledger's key."""
    good = {"id": "2", "timestamp": 1_772_460_000_000, "message": json.dumps(exporter_xid())}
    parsed = parse_log_events({"logStream": NODE, "logEvents": [event, good]}, cluster="train")
    assert [n.code for n in parsed.notices] == [79]
    (refusal,) = parsed.refused
    assert named in refusal.reason


def test_every_good_document_of_a_batch_with_bad_ones_is_one_incident() -> None:
    documents = [exporter_xid(code=79, gpu=g) for g in range(8)]
    lines = [json.dumps(d) for d in documents]
    lines[2] = lines[2].replace('"XidCode": "79"', '"XidCode": 1e400')
    lines[5] = lines[5].replace(NODE, "x" * 4000)
    parsed = parse_log_events(_payload(lines), cluster="train")
    assert sorted(g.first.gpu for g in group_xids(parsed.notices)) == ["0", "1", "3", "4", "6", "7"]
    assert [r.event_id for r in parsed.refused] == ["2", "5"]


def test_the_refused_count_is_an_emf_line_cloudwatch_reads() -> None:
    line = json.loads(refused_line("train", 10, 1_772_460_000_000))
    assert line["notifier_refused_documents"] == 10.0
    assert line["ClusterName"] == "train"
    (directive,) = line["_aws"]["CloudWatchMetrics"]
    assert directive == {
        "Namespace": "GpuInsights",
        "Dimensions": [["ClusterName"]],
        "Metrics": [{"Name": "notifier_refused_documents", "Unit": "Count"}],
    }


def test_a_ledger_key_over_dynamodbs_limit_is_refused_before_the_call() -> None:
    """DynamoDB: "The maximum length of a partition key value is 2048 bytes" (Constraints)."""
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
    )
    calls: list[str] = []
    client.meta.events.register("before-call.dynamodb.PutItem", lambda **_: calls.append("put"))
    ledger = SentLedger(client, "sent")
    with pytest.raises(LedgerError, match=f"is 2049 bytes; DynamoDB takes {MAX_KEY_BYTES}"):
        ledger.claim("k" * (MAX_KEY_BYTES + 1), 0.0)
    assert calls == []


def test_nvml_and_kernel_pci_bus_ids_name_one_device() -> None:
    assert same_pci_device("00000000:53:00.0", "0000:53:00")
    assert same_pci_device("00000000:AB:00.0", "0000:ab:00")
    assert not same_pci_device("00000000:53:00.0", "0000:54:00")
    assert not same_pci_device("00000001:53:00.0", "0000:53:00")
    assert not same_pci_device("garbage", "0000:53:00")


def test_an_xid_page_names_its_pods_by_namespace_and_name() -> None:
    """The exporter's ``Pods`` (namespace/name, from the kubelet's pod log directories) over
    its ``PodUids``. Before: "Pods: 1f2e3d4c-... (pod UID)"."""
    document = exporter_xid()
    document["PodUids"] = ["1f2e3d4c-5b6a-4789-8abc-def012345678"]
    document["Pods"] = ["nlp/bert-data-bound-worker-0"]
    (group,) = group_xids(
        parse_log_events(_payload([json.dumps(document)]), cluster="train").notices
    )
    assert group.pods == ("nlp/bert-data-bound-worker-0",)
    del document["Pods"]
    (group,) = group_xids(
        parse_log_events(_payload([json.dumps(document)]), cluster="train").notices
    )
    assert group.pods == ("1f2e3d4c-5b6a-4789-8abc-def012345678 (pod UID)",)


@pytest.mark.parametrize("pods", ["nlp/x", ["nlp"], ["NLP/x"], ["a_b/x"], [7], ["nlp/x/y"]])
def test_pods_not_as_kubernetes_names_them_are_refused(pods: Any) -> None:
    document = exporter_xid()
    document["Pods"] = pods
    parsed = parse_log_events(_payload([json.dumps(document)]), cluster="train")
    (refusal,) = parsed.refused
    assert refusal.reason.startswith("Pods ")


def test_a_document_dated_ahead_of_its_log_event_is_refused_and_cannot_claim_a_window() -> None:
    """A forged XID 79 dated 10 minutes ahead claimed the ledger key of that window, and the
    real XID of it then paged no one. Past ``MAX_AHEAD_MS`` after its log event's time it is
    refused (counted, never a page); within it, a clock a little ahead still pages."""
    forged = exporter_xid(at=T0 + 600)
    ahead = exporter_xid(at=T0 + MAX_AHEAD_MS / 1000 - 1)
    parsed = parse_log_events(_payload([json.dumps(forged), json.dumps(ahead)]), cluster="train")
    (refusal,) = parsed.refused
    assert refusal.event_id == "0"
    assert "_aws.Timestamp 1772460600000 is 600 s after its log event's time" in refusal.reason
    assert [n.time_ms for n in parsed.notices] == [int(T0 * 1000) + MAX_AHEAD_MS - 1000]


def test_a_document_dated_ahead_of_now_is_refused_whatever_its_log_events_time() -> None:
    """The log event's time is its writer's too (CloudWatch Logs takes events up to 2 hours
    ahead): the invocation's own time bounds the document as well."""
    document = exporter_xid(at=T0 + 600)
    payload = {
        "logStream": NODE,
        "logEvents": [
            {"id": "0", "timestamp": int((T0 + 600) * 1000), "message": json.dumps(document)}
        ],
    }
    assert parse_log_events(payload, cluster="train").notices != []  # no now: the event's time
    parsed = parse_log_events(payload, cluster="train", now_ms=int(T0 * 1000))
    assert parsed.notices == []
    assert "is 600 s after" in parsed.refused[0].reason
