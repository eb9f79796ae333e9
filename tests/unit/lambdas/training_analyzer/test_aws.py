"""The rank query against a real Logs client (botocore's Stubber checks every request against
the service model and every response against its output shape; moto, with the rank rows put in
and cut as Logs Insights cuts them, for a fleet larger than one page)."""

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from moto import mock_aws

from cli.service_answers import (
    LogsInsightsLimitError,
    insights_bounds,
    insights_limit,
    insights_page,
    logs_insights_stats,
)
from lambdas.training_analyzer.aws import (
    RANK_QUERY,
    QueryTimeoutError,
    RankQueryError,
    gpu_series,
    rank_query,
    rank_stats,
)


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
                        # The allocated reading is an alarm metric: the exporter adds its Shard.
                        *([{"Name": "Shard", "Value": "00"}] if "allocated" in metric else []),
                    ],
                }
                for node, gpu in gpus
            ]
        }

    twice = [("n1", "0"), ("n1", "0"), ("n1", "1"), ("n2", "0"), ("n1", "1")]
    with Stubber(cloudwatch) as stubber:
        for metric in ("gpu_allocated_power_utilization", "gpu_sm_active"):
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


#: 2,500 jobs of five ranks: 12,500 rank rows, more than one Logs Insights page (10,000).
JOBS, RANKS = 2_500, 5


def _table(jobs: int = JOBS, ranks: int = RANKS) -> list[list[dict[str, str]]]:
    return [
        _row(f"job-{j:05d}", str(r), "100", f"{1 + r / 10:.1f}", f"node-{j % 300}")
        for j in range(jobs)
        for r in range(ranks)
    ]


@pytest.fixture
def insights() -> Iterator[tuple[Any, list[str]]]:
    """moto's Logs answering the rank query with ``_table()``'s rows, cut and paged as Logs
    Insights cuts and pages them (cli/service_answers.logs_insights_stats); the queries sent."""
    with mock_aws():
        client = boto3.client(
            "logs", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        client.create_log_group(logGroupName="/aws/gpu-insights/train/training")
        sent: list[str] = []
        table = _table()

        def rows(params: dict[str, Any]) -> list[list[dict[str, str]]]:
            sent.append(params["queryString"])
            return table

        logs_insights_stats(client, rows)
        yield client, sent


def test_every_rank_of_2500_jobs_is_read_past_the_first_page(
    insights: tuple[Any, list[str]],
) -> None:
    client, sent = insights
    ranks = rank_stats(client, "train", start=0, end=3600)
    assert len(ranks) == JOBS  # 2,000 when one page of 10,000 rows was read
    assert {len(rs) for rs in ranks.values()} == {RANKS}
    assert [r.mean_step_time for r in ranks["job-02499"]] == [1.0, 1.1, 1.2, 1.3, 1.4]
    assert sent == [RANK_QUERY]


def test_a_full_query_is_split_by_job_name_until_no_part_is_full(
    insights: tuple[Any, list[str]],
) -> None:
    """At a cap of 1,000 rows (200 jobs) every part that returns 1,000 is cut in two at a job
    name and asked again; no job is lost, none is read twice."""
    client, sent = insights
    ranks = rank_stats(client, "train", start=0, end=3600, limit=1_000)
    assert len(ranks) == JOBS
    assert sum(len(rs) for rs in ranks.values()) == JOBS * RANKS
    sizes = [len(insights_bounds(q, _table())) for q in sent]
    assert sum(size for size in sizes if size < 1_000) == JOBS * RANKS  # the parts kept
    print(f"{len(sent)} queries for {JOBS:,} jobs at a cap of 1,000 rows")


def test_a_part_of_one_job_that_fills_the_cap_is_a_named_error() -> None:
    with mock_aws():
        client = boto3.client(
            "logs", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        client.create_log_group(logGroupName="/aws/gpu-insights/train/training")
        logs_insights_stats(client, lambda _: _table(jobs=1, ranks=20))
        with pytest.raises(RankQueryError, match="cannot split"):
            rank_stats(client, "train", start=0, end=3600, limit=10)


def test_the_fake_refuses_a_limit_logs_insights_refuses() -> None:
    assert insights_limit("fields @message") == 10_000
    assert insights_limit(rank_query(limit=100_000)) == 100_000
    with pytest.raises(LogsInsightsLimitError, match="100,000"):
        insights_limit(rank_query(limit=100_001))


def test_the_fake_pages_10000_rows_at_a_time() -> None:
    table = _table()
    first = insights_page(table, {"queryId": "q"})
    assert len(first["results"]) == 10_000
    second = insights_page(table, {"queryId": "q", "nextToken": first["nextToken"]})
    assert len(second["results"]) == 2_500
    assert "nextToken" not in second


def test_a_page_without_its_next_token_is_split_not_taken_as_complete(
    insights: tuple[Any, list[str]],
) -> None:
    """An SDK whose GetQueryResults predates paging parses no nextToken: each part then
    returns one page of 10,000 rows, which is split like a full part, and no job is lost."""
    client, sent = insights

    def drop_next_token(parsed: dict[str, Any], **_: Any) -> None:
        parsed.pop("nextToken", None)

    client.meta.events.register("after-call.logs.GetQueryResults", drop_next_token)
    ranks = rank_stats(client, "train", start=0, end=3600)
    assert len(ranks) == JOBS  # 2,000 when the first page was taken as all there is
    assert sum(len(rs) for rs in ranks.values()) == JOBS * RANKS
    assert len(sent) == 3  # the whole range, then its two halves
