import json

import boto3
import pytest
from botocore.stub import Stubber

from lambdas.notifier.jobs import (
    NOT_KNOWN,
    Placement,
    PlacementLookupError,
    Rank,
    alarm_time_ms,
    job_incident,
    job_placement,
    ranks_summary,
)
from lambdas.notifier.notification import Incident

INCIDENT = Incident(
    key="alarm/x/1/2026-01-01T10:00:00.000+0000",
    severity="critical",
    kind="job-hung",
    title="Training job hung",
    what="Training job hung: 1 datapoint was greater than or equal to the threshold (600).",
    cluster="train",
    node="not named (a cluster-wide series)",
    gpu="not named (a cluster-wide series)",
    action="read the ranks' last log lines",
    job="llama-ft",
    when="2026-01-01T10:00:00.000+0000",
)


def _logs() -> object:
    return boto3.client(
        "logs", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
    )


def test_the_newest_document_of_each_rank_names_its_pod_node_and_gpus() -> None:
    logs = _logs()
    doc = {"ClusterName": "train", "JobName": "llama-ft", "_aws": {"Timestamp": 0}}
    events = [
        {"timestamp": 1, "message": json.dumps({**doc, "Rank": 1, "NodeName": "old-node",
                                                "_aws": {"Timestamp": 1000}})},
        {"timestamp": 2, "message": json.dumps({**doc, "Rank": 1, "NodeName": "n1",
                                                "PodName": "w-0", "Gpus": "GPU-b",
                                                "JobState": "stalled",
                                                "_aws": {"Timestamp": 2000}})},
        {"timestamp": 3, "message": json.dumps({**doc, "Rank": 0, "NodeName": "n0",
                                                "PodName": "m-0", "Gpus": "GPU-a",
                                                "JobState": "stalled",
                                                "_aws": {"Timestamp": 1500}})},
        {"timestamp": 4, "message": json.dumps({**doc, "JobName": "other", "Rank": 0})},
        {"timestamp": 5, "message": "not json"},
    ]  # fmt: skip
    with Stubber(logs) as stub:  # type: ignore[arg-type]
        stub.add_response(
            "filter_log_events",
            {"events": events},
            {
                "logGroupName": "/aws/gpu-insights/train/training",
                "startTime": 1_000_000 - 600_000,
                "endTime": 1_060_000,
                "filterPattern": '{ $.JobName = "llama-ft" }',
            },
        )
        placement = job_placement(logs, "train", "llama-ft", 1_000_000)
    assert placement == Placement(
        (
            Rank("0", pod="m-0", node="n0", gpus="GPU-a", state="stalled"),
            Rank("1", pod="w-0", node="n1", gpus="GPU-b", state="stalled"),
        )
    )


def test_each_ranks_newest_window_gives_its_data_wait_where_it_stepped() -> None:
    """A Classic fail-slow page weighs each rank's own data wait (fail_slow_classic.py): the
    share its newest document holds; none where the window had no step, or held no number."""
    logs = _logs()
    doc = {"ClusterName": "train", "JobName": "llama-ft", "NodeName": "n0"}
    events = [
        {"timestamp": 1, "message": json.dumps({**doc, "Rank": r, "data_wait_share": share,
                                                "_aws": {"Timestamp": 1000}})}
        for r, share in ((0, 4.5), (1, 38), (2, "NaN"), (3, True))
    ]  # fmt: skip
    no_step = {**doc, "Rank": 4, "_aws": {"Timestamp": 1}}
    events.append({"timestamp": 2, "message": json.dumps(no_step)})
    with Stubber(logs) as stub:  # type: ignore[arg-type]
        stub.add_response("filter_log_events", {"events": events})
        placement = job_placement(logs, "train", "llama-ft", 1_000_000)
    assert [(r.rank, r.data_wait_share) for r in placement.ranks] == [
        ("0", 4.5),
        ("1", 38.0),
        ("2", None),
        ("3", None),
        ("4", None),
    ]


def test_a_log_group_it_may_not_read_is_a_lookup_error_and_the_page_goes_out_unplaced() -> None:
    logs = _logs()
    with Stubber(logs) as stub:  # type: ignore[arg-type]
        stub.add_client_error("filter_log_events", "AccessDeniedException")
        with pytest.raises(PlacementLookupError, match="AccessDenied"):
            job_placement(logs, "train", "llama-ft", 1_000_000)
    page = job_incident(INCIDENT, "us-east-1", Placement())
    assert page.title == "Training job hung: job llama-ft"
    assert (page.node, page.gpu) == (NOT_KNOWN, NOT_KNOWN)
    assert page.dashboard_url == (
        "https://us-east-1.console.aws.amazon.com/cloudwatch/home?region=us-east-1"
        "#dashboards/dashboard/gpu-insights-train-training?var-job=llama-ft"
    )


def test_the_placement_is_read_at_the_time_the_job_went_into_alarm() -> None:
    assert alarm_time_ms(INCIDENT, 5) == 1_767_261_600_000
    from dataclasses import replace

    assert alarm_time_ms(replace(INCIDENT, when="yesterday"), 5) == 5


def test_the_ranks_are_counted_per_state_worst_first_naming_the_worst() -> None:
    states = ["stepping", "checkpointing", "stalled", "stepping", "resharding", "stalled"]
    placement = Placement(tuple(Rank(str(r), state=s) for r, s in enumerate(states)))
    assert ranks_summary(placement) == (
        "6 ranks: 2 stalled (rank 2, 5), 1 checkpointing, 2 stepping, 1 resharding"
    )
    all_stepping = Placement(tuple(Rank(str(r), state="stepping") for r in range(3)))
    assert ranks_summary(all_stepping) == "3 ranks: 3 stepping"


def test_a_job_name_with_a_quote_is_one_term_of_the_filter_pattern() -> None:
    """Before: ``{ $.JobName = "say "hi"" }``, a pattern the name ends early. A term's inner
    double quotes and backslashes are escaped with a backslash (aws/aws-cdk,
    aws-logs/lib/pattern.ts ``quoteTerm``)."""
    logs = _logs()
    job = 'say "hi" C:\\runs'
    document = {"ClusterName": "train", "JobName": job, "Rank": 0, "NodeName": "n0"}
    with Stubber(logs) as stub:  # type: ignore[arg-type]
        stub.add_response(
            "filter_log_events",
            {"events": [{"timestamp": 1, "message": json.dumps(document)}]},
            {
                "logGroupName": "/aws/gpu-insights/train/training",
                "startTime": 1_000_000 - 600_000,
                "endTime": 1_060_000,
                "filterPattern": r'{ $.JobName = "say \"hi\" C:\\runs" }',
            },
        )
        placement = job_placement(logs, "train", job, 1_000_000)
    assert [r.node for r in placement.ranks] == ["n0"]
