"""The rank query against a real Logs client (botocore's Stubber checks every request against
the service model and every response against its output shape)."""

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from lambdas.training_analyzer.aws import RANK_QUERY, QueryTimeoutError, gpu_series, rank_stats


@pytest.fixture
def logs() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client(
        "logs", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
    )
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def _start(stubber: Stubber, end: int) -> None:
    stubber.add_response(
        "start_query",
        {"queryId": "q-1"},
        {
            "logGroupName": "/aws/gpu-insights/train/training",
            "startTime": 0,
            "endTime": end,
            "queryString": RANK_QUERY,
        },
    )


def _row(job: str, rank: str, steps: str, step_time: str, node: str = "") -> list[dict[str, str]]:
    return [
        {"field": "JobName", "value": job},
        {"field": "Rank", "value": rank},
        {"field": "steps", "value": steps},
        {"field": "step_time", "value": step_time},
        {"field": "node", "value": node},
    ]


def test_rank_query_waits_for_completion_and_reads_rows(logs: tuple[Any, Stubber]) -> None:
    client, stubber = logs
    _start(stubber, 3600)
    for status in ("Scheduled", "Running"):
        stubber.add_response(
            "get_query_results", {"status": status, "results": []}, {"queryId": "q-1"}
        )
    rows = [
        _row("llm", "0", "100", "1.5", "n1"),
        _row("llm", "1", "100", "1.6"),
        _row("llm", "2", "n/a", "1.0"),
        [{"field": "steps", "value": "1"}],
    ]
    stubber.add_response(
        "get_query_results", {"status": "Complete", "results": rows}, {"queryId": ANY}
    )
    waits: list[float] = []
    ranks = rank_stats(client, "train", start=0, end=3600, sleep=waits.append)
    assert waits == [1.0, 1.0]
    assert [(r.rank, r.steps, r.mean_step_time, r.node) for r in ranks["llm"]] == [
        ("0", 100.0, 1.5, "n1"),
        ("1", 100.0, 1.6, None),
    ]  # the unreadable rows are left out


@pytest.mark.parametrize(
    ("statuses", "problem"), [(["Failed"], "ended Failed"), (["Running"] * 4, "longer than 3 s")]
)
def test_a_query_that_fails_or_hangs_is_a_named_error(
    logs: tuple[Any, Stubber], statuses: list[str], problem: str
) -> None:
    client, stubber = logs
    _start(stubber, 1)
    for status in statuses:
        stubber.add_response(
            "get_query_results", {"status": status, "results": []}, {"queryId": "q-1"}
        )
    with pytest.raises(QueryTimeoutError, match=problem):
        rank_stats(client, "train", start=0, end=1, sleep=lambda _: None, timeout_s=3)


def test_a_gpu_listed_twice_is_queried_once() -> None:
    # moto lists a multi-dimension metric once per stored datapoint; each GPU's power and SM
    # activity must still be one query, whatever the listing repeats.
    cloudwatch = boto3.client(
        "cloudwatch", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
    )

    def listed(metric: str, gpus: list[tuple[str, str]]) -> dict[str, Any]:
        return {
            "Metrics": [
                {
                    "Namespace": "GpuInsights",
                    "MetricName": metric,
                    "Dimensions": [
                        {"Name": "ClusterName", "Value": "c"},
                        {"Name": "NodeName", "Value": node},
                        {"Name": "GpuIndex", "Value": gpu},
                    ],
                }
                for node, gpu in gpus
            ]
        }

    twice = [("n1", "0"), ("n1", "0"), ("n1", "1"), ("n2", "0"), ("n1", "1")]
    with Stubber(cloudwatch) as stubber:
        for metric in ("gpu_power_utilization", "gpu_sm_active"):
            stubber.add_response("list_metrics", listed(metric, twice), {
                "Namespace": "GpuInsights",
                "MetricName": metric,
                "Dimensions": [{"Name": "ClusterName", "Value": "c"}],
            })  # fmt: skip
        queries = gpu_series(cloudwatch, "c", ["n1"])
    assert sorted(q.key for q in queries) == [
        ("n1", "0", "power"),
        ("n1", "0", "sm"),
        ("n1", "1", "power"),
        ("n1", "1", "sm"),
    ]
