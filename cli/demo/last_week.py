"""The week before the demo's: its weekly report, by a real run of the same pipeline, so that
this week's report has a change on last week to show.

The week before (cli/demo/week.py ``LAST_WEEK``: ``nlp`` started its job on the fourth day,
the notebook was culled overnight until the sixth, no GPU failed) is written hour by hour as
the exporter and Container Insights publish it, the training analyzer's handler (which runs
the GPU-hour attribution) runs on each of its days, and the weekly report handler runs on the
Monday after it. All of that in its own moto context, begun and ended here: this week's
CloudWatch never holds last week's datapoints (moto's GetMetricData scans every stored point
for each query and period), and what crosses over is only what the report handler wrote to
the report bucket, as a real bucket would keep it from one Monday to the next.

Timestamps stay within what PutMetricData accepts relative to the demo's "now" (``END``):
"as much as two weeks before the current date, and as much as 2 hours after"
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricData.html);
the week before begins 14 days before ``END`` and its first datapoint is half an hour later.
Its jobs run no ``emitter.training``: PutLogEvents refuses events older than 14 days
(https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutLogEvents.html)
and the demo writes that week today, so its pods' jobs are inferred from their names and
controllers (the same pods: ``bert-data-bound-master-0`` is the PyTorchJob
``bert-data-bound``'s, ``resnet-healthy-0-<5>`` the Job ``resnet-healthy``'s).
"""

from typing import Any

from moto import mock_aws

from cdk.settings import Settings
from cli.demo.report import report_handler_run
from cli.demo.storage import REPORT_BUCKET
from cli.demo.training import run_training_analyzer
from cli.demo.week import LAST_WEEK, WEEK, WeekSeeder
from gpu_insights_agent.contract.metrics import ExporterSink, training_log_group
from lambdas.shared.aws_clients import new_session
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.weekly_report.handler import report_prefix


def last_week_report(settings: Settings, region: str) -> tuple[dict[str, bytes], int]:
    """The objects the report handler wrote for the week before (key to body), and the
    datapoints that week's fleet published."""
    cluster = settings.cluster_name
    with mock_aws():
        session = new_session(
            aws_access_key_id="demo", aws_secret_access_key="demo", region_name=region
        )
        clients: dict[str, Any] = {
            name: session.client(name) for name in ("s3", "cloudwatch", "events", "logs", "sns")
        }
        s3 = clients["s3"]
        s3.create_bucket(Bucket=REPORT_BUCKET)
        clients["logs"].create_log_group(logGroupName=training_log_group(cluster))
        classic = settings.container_insights_mode is ContainerInsightsMode.CLASSIC
        emf = settings.exporter_sink is ExporterSink.EMF
        week = WeekSeeder(
            clients["cloudwatch"], cluster, LAST_WEEK, container_insights=classic, exporter=emf
        )
        end = LAST_WEEK.start + WEEK  # this week's Monday 00:00: its run closes the Sunday
        run_training_analyzer(
            clients,
            earlier_runs=week,
            at=end,
            mode=settings.container_insights_mode,
            sink=settings.exporter_sink,
        )
        summary = report_handler_run(clients, settings, [], now=end - 3600)
        prefix = report_prefix(cluster, summary["week"])
        listed = s3.list_objects_v2(Bucket=REPORT_BUCKET, Prefix=prefix)
        objects = {
            o["Key"]: s3.get_object(Bucket=REPORT_BUCKET, Key=o["Key"])["Body"].read()
            for o in listed.get("Contents", [])
        }
        return objects, week.datapoints


def carry_report(s3: Any, objects: dict[str, bytes]) -> None:
    """Last week's report objects into this week's report bucket, as they were written."""
    for key, body in objects.items():
        s3.put_object(Bucket=REPORT_BUCKET, Key=key, Body=body)
