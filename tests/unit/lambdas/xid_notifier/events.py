"""EventBridge events as CloudWatch sends them, for the notifier's tests.

The shapes are the User Guide's (Alarm events and EventBridge,
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html)
and the EventBridge event reference's detail types
(https://docs.aws.amazon.com/eventbridge/latest/ref/events-ref-cloudwatch.html):
``SINGLE_METRIC`` is the guide's single-metric example verbatim (an alarm of another app);
the GPU events keep its envelope, ``state`` and ``configuration`` fields and add, for a
contributor of a multi time series alarm, ``detail.alarmContributor`` with the contributor's
``id`` (at most 16 characters, as DescribeAlarmContributors returns it:
https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_AlarmContributor.html)
and its ``attributes`` (the query's GROUP BY values).
"""

import copy
from typing import Any

ACCOUNT = "123456789012"
REGION = "us-east-1"

SINGLE_METRIC: dict[str, Any] = {
    "version": "0",
    "id": "c4c1c1c9-6542-e61b-6ef0-8c4d36933a92",
    "detail-type": "CloudWatch Alarm State Change",
    "source": "aws.cloudwatch",
    "account": "123456789012",
    "time": "2019-10-02T17:04:40Z",
    "region": "us-east-1",
    "resources": ["arn:aws:cloudwatch:us-east-1:123456789012:alarm:ServerCpuTooHigh"],
    "detail": {
        "alarmName": "ServerCpuTooHigh",
        "configuration": {
            "description": "Goes into alarm when server CPU utilization is too high!",
            "metrics": [
                {
                    "id": "30b6c6b2-a864-43a2-4877-c09a1afc3b87",
                    "metricStat": {
                        "metric": {
                            "dimensions": {"InstanceId": "i-12345678901234567"},
                            "name": "CPUUtilization",
                            "namespace": "AWS/EC2",
                        },
                        "period": 300,
                        "stat": "Average",
                    },
                    "returnData": True,
                }
            ],
        },
        "previousState": {
            "reason": "Threshold Crossed: 1 out of the last 1 datapoints "
            "[0.0666851903306472 (01/10/19 13:46:00)] was not greater than the threshold "
            "(50.0) (minimum 1 datapoint for ALARM -> OK transition).",
            "reasonData": '{"version":"1.0","queryDate":"2019-10-01T13:56:40.985+0000",'
            '"startDate":"2019-10-01T13:46:00.000+0000","statistic":"Average","period":300,'
            '"recentDatapoints":[0.0666851903306472],"threshold":50.0}',
            "timestamp": "2019-10-01T13:56:40.987+0000",
            "value": "OK",
        },
        "state": {
            "reason": "Threshold Crossed: 1 out of the last 1 datapoints "
            "[99.50160229693434 (02/10/19 16:59:00)] was greater than the threshold (50.0) "
            "(minimum 1 datapoint for OK -> ALARM transition).",
            "reasonData": '{"version":"1.0","queryDate":"2019-10-02T17:04:40.985+0000",'
            '"startDate":"2019-10-02T16:59:00.000+0000","statistic":"Average","period":300,'
            '"recentDatapoints":[99.50160229693434],"threshold":50.0}',
            "timestamp": "2019-10-02T17:04:40.989+0000",
            "value": "ALARM",
        },
    },
}

LOW_POWER_QUERY = (
    'SELECT MAX(gpu_power_utilization) FROM SCHEMA("GpuInsights", ClusterName, GpuIndex, '
    "NodeName) WHERE ClusterName = 'train' GROUP BY NodeName, GpuIndex"
)
NODE = "ip-10-0-12-34.ec2.internal"
LOW_POWER_VALUES = [12.4, 11.9, 13.0, 12.2, 12.8, 12.1, 11.7, 12.5, 12.0, 12.3, 12.6, 12.2]


def low_power_contributor(description: str, state: str = "ALARM") -> dict[str, Any]:
    """GPU 5 of NODE drew 12% of its power limit for the hour while a pod held it."""
    name = "gpu-insights-train-gpu-low-power-shard-3"
    minutes = [14 * 60 - 5 * i for i in range(len(LOW_POWER_VALUES))]  # newest first
    points = ", ".join(
        f"{v} (02/03/26 {m // 60:02d}:{m % 60:02d}:00)"
        for v, m in zip(LOW_POWER_VALUES, minutes, strict=True)
    )
    event = copy.deepcopy(SINGLE_METRIC)
    event.update(
        {
            "id": "7c0a3e5c-2b1f-4f0e-9a53-5b3d9b8e2f11",
            "detail-type": "CloudWatch Alarm Contributor State Change",
            "time": "2026-03-02T14:05:12Z",
            "resources": [f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{name}"],
        }
    )
    event["detail"] = {
        "alarmName": name,
        "alarmContributor": {
            "id": "6d442278dba546f6",
            "attributes": {"ClusterName": "train", "NodeName": NODE, "GpuIndex": "5"},
        },
        "configuration": {
            "description": description,
            "metrics": [
                {"id": "q1", "expression": LOW_POWER_QUERY, "period": 300, "returnData": True}
            ],
        },
        "previousState": {
            "reason": "Contributor is not breaching",
            "timestamp": "2026-03-02T12:00:07.112+0000",
            "value": "OK",
        },
        "state": {
            "reason": f"Threshold Crossed: 12 out of the last 12 datapoints [{points}] was less "
            "than the threshold (30.0) (minimum 12 datapoints for OK -> ALARM transition).",
            "timestamp": "2026-03-02T14:05:12.345+0000",
            "value": state,
        },
    }
    return event


def alarm_level(contributor_event: dict[str, Any]) -> dict[str, Any]:
    """The same alarm's own state change: no contributor."""
    event = copy.deepcopy(contributor_event)
    event["detail-type"] = "CloudWatch Alarm State Change"
    del event["detail"]["alarmContributor"]
    return event
