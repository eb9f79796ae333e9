"""The kernel-log read is budgeted against the invocation's time: a slow Logs API costs the
pages their kernel line, never the pages. The real handler on moto (SNS topics with SQS
subscribers, the DynamoDB ledger), its Logs client a real botocore client whose answers are
stubbed (``Stubber``: moto's FilterLogEvents pages by no size we can set), each page taking
4.7 s of the invocation's clock."""

import json
import time
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from benchmarks.page_faults import CLUSTER, _deployment, _subscription
from lambdas.notifier import handler as notifier
from lambdas.notifier.budget import CLIENT_CALL_S, RESERVE_S
from lambdas.notifier.config import FUNCTION_TIMEOUT_S
from lambdas.notifier.kernel_log import MAX_PAGES

NODE = "ip-10-0-12-34.ec2.internal"
HOST = f"/aws/containerinsights/{CLUSTER}/host"
PAGE_S = 4.7


def _documents(at_ms: int) -> list[str]:
    """XID 79 on each of the node's 8 GPUs, as the exporter writes the fields the notifier
    reads."""
    return [
        json.dumps(
            {
                "_aws": {"Timestamp": at_ms, "CloudWatchMetrics": [], "LogGroupName": "x"},
                "ClusterName": CLUSTER,
                "NodeName": NODE,
                "GpuIndex": str(gpu),
                "XidCode": "79",
                "PciBusId": f"00000000:{0x53 + gpu:02x}:00.0",
            }
        )
        for gpu in range(8)
    ]


class _Invocation:
    """Lambda's context on a clock that the Logs client's calls move."""

    def __init__(self) -> None:
        self.used_s = 0.0

    def get_remaining_time_in_millis(self) -> int:
        return int((FUNCTION_TIMEOUT_S - self.used_s) * 1000)


@pytest.mark.parametrize("require", [False, True])
def test_a_slow_kernel_log_read_leaves_the_time_for_every_page(
    require: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each page of the read took 4.7 s and every one said there was more: the five pages used
    23.5 s and 0 of 8 pages were sent, on every retry. Now a page is read only while one read
    at its worst (CLIENT_CALL_S) still leaves a delivery's reserve: one page here, and the 8
    pages go out, saying the kernel log was not checked (with the setting on, as warnings)."""
    now = time.time()
    at_ms = int(now * 1000)
    invocation = _Invocation()
    logs = boto3.client(
        "logs", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
    )

    def slow(**_: Any) -> None:
        invocation.used_s += PAGE_S

    logs.meta.events.register("before-parameter-build.cloudwatch-logs.FilterLogEvents", slow)
    with Stubber(logs) as stub, _deployment() as received:
        for _ in range(MAX_PAGES):
            stub.add_response(
                "filter_log_events",
                {"events": [], "nextToken": "more"},
                {
                    "logGroupName": HOST,
                    "startTime": ANY,
                    "endTime": ANY,
                    "filterPattern": ANY,
                    **({"nextToken": ANY} if _ else {}),
                },
            )
        monkeypatch.setitem(notifier._clients, "logs", logs)
        monkeypatch.setenv("HOST_LOG_GROUP", HOST)
        if require:
            monkeypatch.setenv("REQUIRE_KERNEL_CONFIRMATION", "true")
        event = _subscription(_documents(at_ms), at_ms)
        result = notifier.handler(event, invocation)
        pages = received()
    assert result["published"] == 8
    assert len(pages) == 8
    # One page read: a second would have started with under CLIENT_CALL_S + RESERVE_S left.
    assert invocation.used_s == PAGE_S
    assert FUNCTION_TIMEOUT_S - PAGE_S < CLIENT_CALL_S + RESERVE_S
    text = pages[0]["Message"]
    assert "not checked: no time left to read past 1 page" in text
    subjects = {p["Subject"] for p in pages}
    assert all(("unconfirmed" in s) == require for s in subjects), subjects
