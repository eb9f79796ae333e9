"""The names a user reads a deployment by: each stack's part (``GpuInsights-<cluster>-Alarms``)
and the stack outputs (``aws cloudformation describe-stacks``). The stacks write them and
``gpu-insights status`` reads them, from this one table. No CDK import: the command line reads
it without loading the CDK."""

from typing import Final

OBSERVABILITY: Final = "Observability"
ALARMS: Final = "Alarms"
ANALYZERS: Final = "Analyzers"
#: Every stack of a deployment, in the order they deploy.
PARTS: Final = (OBSERVABILITY, ALARMS, ANALYZERS)

IMAGE_URI: Final = "ImageUri"
AGENT_CONFIG_FETCH_COMMAND: Final = "AgentConfigFetchCommand"
CRITICAL_TOPIC_ARN: Final = "CriticalTopicArn"
WARNING_TOPIC_ARN: Final = "WarningTopicArn"
REPORT_TOPIC_ARN: Final = "ReportTopicArn"
REPORT_BUCKET_NAME: Final = "ReportBucketName"
#: Each notification purpose, the stack whose output names its topic, and that output.
TOPIC_OUTPUTS: Final = {
    "critical": (ALARMS, CRITICAL_TOPIC_ARN),
    "warning": (ALARMS, WARNING_TOPIC_ARN),
    "report": (ANALYZERS, REPORT_TOPIC_ARN),
}

#: The alarms outside the alarm catalog: one composite per deployment over the GPU alarms
#: (cdk/constructs/gpu_alarms.py) and the notifier's own failure alarm
#: (cdk/constructs/notifier.py), by their keys (contract.resource_names.alarm_name).
FLEET_HEALTH_ALARM_KEY: Final = "gpu-fleet-health"
NOTIFIER_FAILING_ALARM_KEY: Final = "notifier-failing"
#: The notifier's refused log events (lambdas/notifier/refused.py): a document that named an XID
#: but failed a check, which may be a GPU fault that paged no one.
NOTIFIER_REFUSED_ALARM_KEY: Final = "notifier-refused"
