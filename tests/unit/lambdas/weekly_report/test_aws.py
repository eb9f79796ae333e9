"""The weekly report's reads against real clients (botocore's Stubber validates each request
against the service model, so a parameter the API lacks fails here as it fails in AWS)."""

from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from lambdas.shared.aws_clients import client
from lambdas.shared.s3_objects import ListBucketDeniedError, object_exists
from lambdas.weekly_report.aws import alarms_raised, fail_slow_counts, job_costs

START, END = date(2026, 11, 23), date(2026, 11, 30)


def _client(service: str) -> Any:
    session = boto3.Session(
        region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
    )
    return client(service, session=session)


@pytest.fixture
def cloudwatch() -> Iterator[tuple[Any, Stubber]]:
    client = _client("cloudwatch")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def _item(name: str, state: str, hour: int) -> dict[str, Any]:
    return {
        "AlarmName": name,
        "AlarmType": "MetricAlarm",
        "Timestamp": datetime(2026, 11, 24, hour, tzinfo=UTC),
        "HistoryItemType": "StateUpdate",
        "HistorySummary": f"Alarm updated to {state}",
        "HistoryData": f'{{"newState": {{"stateValue": "{state}"}}}}',
    }


def test_alarm_history_is_read_alarm_by_alarm_by_its_exact_name(
    cloudwatch: tuple[Any, Stubber],
) -> None:
    """DescribeAlarmHistory has no AlarmNamePrefix (botocore's model lists AlarmName,
    AlarmContributorId, AlarmTypes, HistoryItemType, StartDate, EndDate, MaxRecords,
    NextToken, ScanBy) and the report's role may read its own alarms' history only, so each
    alarm is asked for by name, every page of it; what the answer holds of another alarm is
    not this one's."""
    client, stubber = cloudwatch
    sent: list[dict[str, Any]] = []  # recorded after botocore validated them
    client.meta.events.register(
        "after-call.cloudwatch.DescribeAlarmHistory",
        lambda context, **_: sent.append(dict(context["stub_params"])),
    )
    client.meta.events.register(
        "before-parameter-build.cloudwatch.DescribeAlarmHistory",
        lambda params, context, **_: context.update(stub_params=params),
    )
    window = {
        "HistoryItemType": "StateUpdate",
        "StartDate": datetime(2026, 11, 23, tzinfo=UTC),
        "EndDate": datetime(2026, 11, 30, tzinfo=UTC),
    }
    shard = "gpu-insights-train-power-low-shard-03"
    fatal = "gpu-insights-train-xid-fatal"
    stubber.add_response(
        "describe_alarm_history",
        {"AlarmHistoryItems": [_item(shard, "ALARM", 1)], "NextToken": "page-2"},
    )
    stubber.add_response(
        "describe_alarm_history",
        {"AlarmHistoryItems": [_item(shard, "OK", 2), _item(shard, "ALARM", 4)]},
    )
    stubber.add_response(
        "describe_alarm_history",
        {
            "AlarmHistoryItems": [
                _item(fatal, "ALARM", 3),
                _item("gpu-insights-train-eu-xid-fatal", "ALARM", 5),  # not the one asked
            ]
        },
    )
    assert alarms_raised(client, (shard, fatal), START, END) == [
        (shard, "2026-11-24 01:00"),
        (fatal, "2026-11-24 03:00"),
        (shard, "2026-11-24 04:00"),
    ]
    assert sent == [
        {"AlarmName": shard, **window},
        {"AlarmName": shard, **window, "NextToken": "page-2"},
        {"AlarmName": fatal, **window},
    ]


@pytest.mark.parametrize(
    ("read", "code"),
    [
        (
            lambda s3: job_costs(
                s3, "reports", "reports/cluster=c/date=2026-11-29/training-jobs.json"
            ),
            "AccessDenied",
        ),
        (
            lambda s3: object_exists(
                s3, "reports", "reports/cluster=c/date=2026-11-29/training-jobs.json"
            ),
            "403",
        ),
    ],
)
def test_a_403_for_a_report_read_names_the_key_and_the_missing_list_permission(
    read: Any, code: str
) -> None:
    """S3 answers a missing key with 403 where the role may not list it
    (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html, Permissions)."""
    s3 = _client("s3")
    with Stubber(s3) as stubber:
        stubber.add_client_error(
            "get_object" if code == "AccessDenied" else "head_object",
            service_error_code=code,
            http_status_code=403,
        )
        with pytest.raises(ListBucketDeniedError, match=r"training-jobs\.json.*s3:ListBucket"):
            read(s3)


def test_a_404_is_a_missing_object() -> None:
    s3 = _client("s3")
    with Stubber(s3) as stubber:
        stubber.add_client_error("get_object", service_error_code="NoSuchKey", http_status_code=404)
        stubber.add_client_error("head_object", service_error_code="404", http_status_code=404)
        assert job_costs(s3, "reports", "reports/x.json").costs == {}
        assert object_exists(s3, "reports", "reports/x") is False


def test_fail_slow_culprits_are_read_by_node_name_beyond_what_listmetrics_lists(
    cloudwatch: tuple[Any, Stubber],
) -> None:
    """ListMetrics lists only series with data in the last two weeks: a node the GPU-hour
    tables saw is read by name with GetMetricData all the same (its culprits 20 days ago
    count), beside the node ListMetrics lists; a node with none is left out."""
    client, stubber = cloudwatch
    dims = [{"Name": "ClusterName", "Value": "train"}, {"Name": "NodeName", "Value": "n-9"}]
    stubber.add_response(
        "list_metrics",
        {"Metrics": [{"Namespace": "GpuInsights", "MetricName": "fail_slow_culprits",
                      "Dimensions": dims}]},
        {"Namespace": "GpuInsights", "MetricName": "fail_slow_culprits",
         "Dimensions": [{"Name": "ClusterName", "Value": "train"}]},
    )  # fmt: skip
    sent: list[dict[str, Any]] = []
    client.meta.events.register(
        "before-parameter-build.cloudwatch.GetMetricData",
        lambda params, **_: sent.append(dict(params)),
    )
    day = datetime(2026, 11, 3, tzinfo=UTC)
    stubber.add_response(
        "get_metric_data",
        {
            "MetricDataResults": [
                {"Id": "q0", "Timestamps": [day, day], "Values": [2.0, 1.0]},
                {"Id": "q1", "Timestamps": [], "Values": []},
                {"Id": "q2", "Timestamps": [day], "Values": [1.0]},
            ]
        },
    )
    counts = fail_slow_counts(client, "train", ["n-1", "n-2"], date(2026, 10, 31), END)
    assert counts == {"n-1": 3, "n-9": 1}
    (request,) = sent
    stats = [q["MetricStat"] for q in request["MetricDataQueries"]]
    assert [s["Metric"]["Dimensions"][1]["Value"] for s in stats] == ["n-1", "n-2", "n-9"]
    assert {s["Stat"] for s in stats} == {"Sum"}
