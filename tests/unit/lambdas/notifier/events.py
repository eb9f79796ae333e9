"""EventBridge events as CloudWatch sends them, for the notifier's tests.

The shapes are the User Guide's (Alarm events and EventBridge,
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html)
and the EventBridge event reference's detail types
(https://docs.aws.amazon.com/eventbridge/latest/ref/events-ref-cloudwatch.html):
``SINGLE_METRIC`` is the guide's single-metric example and ``AWS_CONTRIBUTOR_EXAMPLE`` its
"Multi Time Series Alarm" tab's "Alarm Contributor Example", both verbatim (alarms of another
app). A contributor event carries ``detail.alarmContributor`` (``id``, at most 16 characters,
as DescribeAlarmContributors returns it:
https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_AlarmContributor.html,
and ``attributes``, the query's GROUP BY values), a ``state`` whose reason names the most
recent breaching datapoint, and no ``previousState`` or ``reasonData``. The GPU contributor
events change only what our alarms set: the name, the attributes, the query, the description,
the times and the datapoints.
"""

import copy
import json
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
#: GPU 5's power utilization (%) was under 30 in each of the hour's 12 periods, 12.4 last.
LOW_POWER_BREACHES, LOW_POWER_LATEST = 12, 12.4


#: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html
#: ("Alarm State Change Events", tab "Multi Time Series Alarm", "Alarm Contributor Example"),
#: verbatim.
AWS_CONTRIBUTOR_EXAMPLE: dict[str, Any] = json.loads(r"""
{
  "version": "0",
  "id": "6d226bbc-07f0-9a31-3359-1736968f8ded",
  "detail-type": "CloudWatch Alarm Contributor State Change",
  "source": "aws.cloudwatch",
  "account": "123456789012",
  "time": "2025-12-01T13:42:04Z",
  "region": "us-east-1",
  "resources": [
    "arn:aws:cloudwatch:us-east-1:123456789012:alarm:DynamoDBInsightsAlarm"
  ],
  "detail": {
    "alarmName": "DynamoDBInsightsAlarm",
    "alarmContributor": {
      "id": "6d442278dba546f6",
      "attributes": {
        "TableName": "example-dynamodb-table-name"
      }
    },
    "state": {
      "value": "ALARM",
      "reason": "Threshold Crossed: 1 datapoint was less than the threshold (1.0). The most recent datapoint which crossed the threshold: [0.0 (01/12/25 13:34:00)].",
      "timestamp": "2025-12-01T13:42:04.919+0000"
    },
    "configuration": {
      "metrics": [
        {
          "id": "m1",
          "expression": "SELECT AVG(ConsumedWriteCapacityUnits) FROM \"AWS/DynamoDB\" GROUP BY TableName ORDER BY MAX() DESC",
          "returnData":true,
          "period": 60
        }
      ],
      "description": "Metrics Insights alarm for DynamoDB ConsumedWriteCapacity per TableName"
    },
    "muteDetail": {
        "mutedByArn": "arn:aws:cloudwatch:us-east-1:1234567890:alarm-mute-rule:testMute",
        "muteWindowStart": "2026-01-01T10:00:00.000+0000",
        "muteWindowEnd": "2026-01-01T12:00:00.000+0000"
    }
  }
}
""")  # noqa: E501  # fmt: skip


def as_gpu_contributor(
    example: dict[str, Any], name: str, attributes: dict[str, str], query: str
) -> dict[str, Any]:
    """AWS's contributor example as one of this app's alarms would send it: only the alarm's
    name (and ARN), the contributor's attributes and the query change."""
    event = copy.deepcopy(example)
    event["resources"] = [f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{name}"]
    event["detail"]["alarmName"] = name
    event["detail"]["alarmContributor"]["attributes"] = attributes
    event["detail"]["configuration"]["metrics"][0]["expression"] = query
    return event


def low_power_contributor(description: str, state: str = "ALARM") -> dict[str, Any]:
    """GPU 5 of NODE drew 12% of its power limit for the hour while a pod held it."""
    event = as_gpu_contributor(
        AWS_CONTRIBUTOR_EXAMPLE,
        "gpu-insights-train-gpu-low-power-shard-3",
        {"ClusterName": "train", "NodeName": NODE, "GpuIndex": "5"},
        LOW_POWER_QUERY,
    )
    event["time"] = "2026-03-02T14:05:12Z"
    detail = event["detail"]
    del detail["muteDetail"]
    detail["configuration"]["description"] = description
    detail["configuration"]["metrics"][0]["period"] = 300
    detail["state"] = {
        "value": state,
        "reason": f"Threshold Crossed: {LOW_POWER_BREACHES} datapoints were less than the "
        f"threshold (30.0). The most recent datapoint which crossed the threshold: "
        f"[{LOW_POWER_LATEST} (02/03/26 14:00:00)].",
        "timestamp": "2026-03-02T14:05:12.345+0000",
    }
    return event


def alarm_level(contributor_event: dict[str, Any]) -> dict[str, Any]:
    """The same alarm's own state change: no contributor."""
    event = copy.deepcopy(contributor_event)
    event["detail-type"] = "CloudWatch Alarm State Change"
    del event["detail"]["alarmContributor"]
    return event


#: A PromQL alarm contributor's attributes: its series' labels as the low-power alarm's query
#: returns them (``max by`` cluster, node, GPU, namespace and pod: cdk/alarms/promql.py), under
#: CloudWatch's PromQL names (lambdas/shared/dcgm.py). The pod is the data-bound BERT job's
#: rank of the realistic model (cli/demo/week.py).
PROMQL_LOW_POWER_LABELS = {
    "@resource.k8s.cluster.name": "train",
    "@resource.k8s.node.name": NODE,
    "gpu": "5",
    "@resource.k8s.namespace.name": "nlp",
    "@resource.k8s.pod.name": "bert-data-bound-worker-0",
}


#: A PromQL job alarm contributor's attributes: ``by`` cluster, namespace and job
#: (cdk/alarms/jobs_promql.py), a job of the demo's (cli/demo/jobs.py).
PROMQL_JOB_LABELS = {
    "@resource.k8s.cluster.name": "train",
    "@resource.k8s.namespace.name": "nlp",
    "job_name": "llama-hangs",
}


def as_promql_contributor(
    example: dict[str, Any],
    name: str,
    query: str,
    attributes: dict[str, str] = PROMQL_LOW_POWER_LABELS,
) -> dict[str, Any]:
    """AWS's contributor example as OTel mode's low-power PromQL alarm would send it: the
    alarm's name, and its contributor's attributes the series' labels. The stored User Guide
    shows no PromQL alarm's event, so what else a PromQL alarm's event carries is not known
    here: the metrics list (a PromQL alarm has none; ``EvaluationCriteria`` holds its query)
    is left out, and the notifier reads neither it nor the reason to name the GPU."""
    event = copy.deepcopy(example)
    event["resources"] = [f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{name}"]
    detail = event["detail"]
    detail["alarmName"] = name
    detail["alarmContributor"]["attributes"] = dict(attributes)
    del detail["muteDetail"]
    del detail["configuration"]["metrics"]
    detail["configuration"]["description"] = query
    return event
