"""The pods on a GPU an alarm names: the newest exporter document of that node and GPU, by the
document's own time (FilterLogEvents answered by botocore's Stubber with a real client)."""

import json
from typing import Any

import boto3
from botocore.stub import ANY, Stubber

from lambdas.notifier.pods import pods_on_gpu

NODE = "ip-10-0-12-34.ec2.internal"
AT_MS = 1_772_460_600_000  # 2026-03-02 14:10:00 UTC


def _document(gpu: str, uids: list[str], stamp_ms: int | None, **more: Any) -> str:
    meta: dict[str, Any] = {"CloudWatchMetrics": []}
    if stamp_ms is not None:
        meta["Timestamp"] = stamp_ms
    return json.dumps({"NodeName": NODE, "GpuIndex": gpu, "PodUids": uids, "_aws": meta, **more})


def _answer(events: list[tuple[int, str]]) -> tuple[str, ...]:
    logs = boto3.client(
        "logs", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
    )
    with Stubber(logs) as stub:
        stub.add_response(
            "filter_log_events",
            {
                "events": [
                    {"logStreamName": NODE, "timestamp": t, "message": m, "eventId": str(i)}
                    for i, (t, m) in enumerate(events)
                ]
            },
            {"logGroupName": "g", "startTime": ANY, "endTime": ANY, "filterPattern": ANY},
        )
        return pods_on_gpu(logs, "g", NODE, "5", AT_MS)


def test_the_newest_document_is_the_one_the_gpu_wrote_last_not_the_last_to_arrive() -> None:
    # The agent retried an older batch: its events arrived after the newer document's.
    newer = _document("5", ["3f9a-trainer-7"], AT_MS - 60_000)
    older = _document("5", ["0b7e-old"], AT_MS - 300_000)
    assert _answer([(AT_MS - 59_000, newer), (AT_MS - 30_000, older)]) == (
        "3f9a-trainer-7 (pod UID)",
    )


def test_documents_without_a_timestamp_are_ordered_by_their_log_events() -> None:
    first = _document("5", ["0b7e-old"], None)
    second = _document("5", ["3f9a-trainer-7"], None)
    assert _answer([(AT_MS - 90_000, first), (AT_MS - 30_000, second)]) == (
        "3f9a-trainer-7 (pod UID)",
    )


def test_pods_the_exporter_named_are_named_by_namespace_and_name() -> None:
    """Before: "3f9a... (pod UID)" even where the document names the pod."""
    named = _document("5", ["3f9a"], AT_MS - 60_000, Pods=["nlp/bert-data-bound-worker-0"])
    assert _answer([(AT_MS - 59_000, named)]) == ("nlp/bert-data-bound-worker-0",)
