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
from lambdas.weekly_report.aws import alarms_raised, job_costs

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


def test_alarm_history_is_read_with_the_parameters_the_api_has(
    cloudwatch: tuple[Any, Stubber],
) -> None:
    """DescribeAlarmHistory has no AlarmNamePrefix (botocore's model lists AlarmName,
    AlarmContributorId, AlarmTypes, HistoryItemType, StartDate, EndDate, MaxRecords,
    NextToken, ScanBy): the old call failed here with ParamValidationError, before any
    response, as it does in AWS."""
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
    stubber.add_response(
        "describe_alarm_history",
        {
            "AlarmHistoryItems": [
                _item("gpu-insights-train-xid-fatal", "ALARM", 3),
                _item("gpu-insights-train-xid-fatal", "OK", 4),
                _item("gpu-insights-train2-xid-fatal", "ALARM", 5),  # another cluster's
                _item("gpu-insights-train-eu-xid-fatal", "ALARM", 5),  # cluster train-eu's
                _item("someone-elses-alarm", "ALARM", 6),
            ],
            "NextToken": "page-2",
        },
    )
    stubber.add_response(
        "describe_alarm_history",
        {
            "AlarmHistoryItems": [
                _item("gpu-insights-train-power-low-shard-03", "ALARM", 1),
                _item("gpu-insights-train-power-low", "ALARM", 2),
            ]
        },
    )
    kinds = ("gpu-insights-train-power-low", "gpu-insights-train-xid-fatal")
    assert alarms_raised(client, kinds, START, END) == [
        ("gpu-insights-train-power-low-shard-03", "2026-11-24 01:00"),
        ("gpu-insights-train-power-low", "2026-11-24 02:00"),
        ("gpu-insights-train-xid-fatal", "2026-11-24 03:00"),
    ]
    assert sent == [window, {**window, "NextToken": "page-2"}]


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
