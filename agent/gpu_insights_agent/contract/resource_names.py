"""Names of AWS resources derived from the cluster name, always within AWS's limits.

Any EKS cluster name (1-100 of ``[0-9A-Za-z_-]``, starting with a letter or digit) is a valid
setting, but a name built from it can break another service's rule: ``_`` is not allowed in a
CloudFormation stack name, and 100 characters overflow an SNS display name. :func:`fit` keeps a
name that already fits unchanged (a deployed resource keeps its name), and otherwise replaces
what the kind refuses, cuts the cluster's part, and adds a short hash of the whole name, so the
result is valid, the same on every synth, and distinct for distinct clusters. The fixed prefix
and suffix survive, so ``...-Alarms`` and ``...-critical`` still say what a name is.

Each rule cites the AWS page that states it.
"""

import hashlib
import re
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class NameRule:
    """What one kind of AWS resource accepts as a name."""

    kind: str
    max_length: int
    #: A regular expression character class (without brackets) of every allowed character.
    allowed: str
    source: str
    #: The character class the first character must be in, where the kind has a rule for it.
    first: str | None = None

    def pattern(self) -> "re.Pattern[str]":
        """The whole rule, length included, as one expression."""
        if self.first:
            return re.compile(f"[{self.first}][{self.allowed}]{{0,{self.max_length - 1}}}")
        return re.compile(f"[{self.allowed}]{{1,{self.max_length}}}")

    def fits(self, name: str) -> bool:
        return self.pattern().fullmatch(name) is not None


#: https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html: "The unique name
#: to give to your cluster. The name can contain only alphanumeric characters (case-sensitive),
#: hyphens, and underscores. It must start with an alphanumeric character and can't be longer
#: than 100 characters."
EKS_CLUSTER: Final = NameRule(
    kind="EKS cluster name",
    max_length=100,
    allowed="0-9A-Za-z_-",
    first="0-9A-Za-z",
    source="https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html",
)


def cluster_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be an EKS cluster's name, or None."""
    if EKS_CLUSTER.fits(name):
        return None
    return (
        f"cluster name {name!r} is not an EKS cluster name (1-100 letters, digits, '-' or '_', "
        "starting with a letter or digit)"
    )


#: https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_CreateStack.html
STACK: Final = NameRule(
    "CloudFormation stack",
    128,
    "A-Za-z0-9-",
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_CreateStack.html",
    first="A-Za-z",
)
SNS_TOPIC: Final = NameRule(
    "SNS topic",
    256,
    "A-Za-z0-9_-",
    "https://docs.aws.amazon.com/sns/latest/api/API_CreateTopic.html",
)
#: "The display name must be maximum 100 characters long, including hyphens (-), underscores
#: (_), spaces, and tabs."
SNS_DISPLAY_NAME: Final = NameRule(
    "SNS display name",
    100,
    r"\t\x20-\x7e",
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-sns-topic.html",
)
ALARM: Final = NameRule(
    "CloudWatch alarm",
    255,
    r"\x20-\x7e",
    "https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html",
)
DASHBOARD: Final = NameRule(
    "CloudWatch dashboard",
    255,
    "A-Za-z0-9_-",
    "https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutDashboard.html",
)
LOG_GROUP: Final = NameRule(
    "CloudWatch Logs log group",
    512,
    r"._/#A-Za-z0-9-",
    "https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_CreateLogGroup.html",
)
#: "The maximum length for a parameter name that you create is 1011 characters."
SSM_PARAMETER: Final = NameRule(
    "SSM parameter",
    1011,
    r"A-Za-z0-9_./-",
    "https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_PutParameter.html",
)
METRIC_NAMESPACE: Final = NameRule(
    "CloudWatch namespace",
    255,
    r"0-9A-Za-z._/#: -",
    "https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_concepts.html",
)
LAMBDA_FUNCTION: Final = NameRule(
    "Lambda function",
    64,
    "A-Za-z0-9_-",
    "https://docs.aws.amazon.com/lambda/latest/api/API_CreateFunction.html",
)
IAM_ROLE: Final = NameRule(
    "IAM role",
    64,
    r"\w+=,.@-",
    "https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreateRole.html",
)
EVENT_RULE: Final = NameRule(
    "EventBridge rule",
    64,
    r"._A-Za-z0-9-",
    "https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutRule.html",
)
SQS_QUEUE: Final = NameRule(
    "SQS queue",
    80,
    "A-Za-z0-9_-",
    "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_CreateQueue.html",
)
S3_BUCKET: Final = NameRule(
    "S3 bucket",
    63,
    "a-z0-9.-",
    "https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html",
    first="a-z0-9",
)
#: Not an AWS name but CDK's: a nested stack's template is written to
#: ``<uniqueId>.nested.template.json``, where uniqueId (at most 255 characters) holds the parent
#: stack's construct id twice for CDK's kubectl provider; a file name may have 255 bytes. A
#: construct id of at most 80 keeps that file name within the limit.
CDK_STACK_ID: Final = NameRule(
    "CDK stack construct id",
    80,
    "A-Za-z0-9-",
    "https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.Names.html",
    first="A-Za-z",
)
_HASH_CHARS: Final = 8


def fit(rule: NameRule, prefix: str, variable: str, suffix: str = "") -> str:
    """``prefix + variable + suffix`` if the rule accepts it; otherwise the variable part with
    refused characters replaced by ``-``, cut to fit, and followed by ``-`` and 8 hex digits of
    the variable's SHA-256, so every name derived from one cluster name carries the same
    digest (its stacks read as one deployment). The prefix and suffix are the caller's
    constants and must fit."""
    name = f"{prefix}{variable}{suffix}"
    if rule.fits(name):
        return name
    digest = hashlib.sha256(variable.encode()).hexdigest()[:_HASH_CHARS]
    room = rule.max_length - len(prefix) - len(suffix) - len(digest) - 1
    cleaned = re.sub(f"[^{rule.allowed}]", "-", variable.lower() if rule is S3_BUCKET else variable)
    fitted = f"{prefix}{cleaned[: max(room, 0)]}-{digest}{suffix}"
    if room < 0 or not rule.fits(fitted):
        raise ValueError(f"{prefix!r}...{suffix!r} cannot make a valid {rule.kind} name")
    return fitted


def stack_name(cluster: str, part: str) -> str:
    """``GpuInsights-<cluster>-<part>``, one stack of a deployment."""
    return fit(STACK, "GpuInsights-", cluster, f"-{part}")


def stack_id(cluster: str, part: str) -> str:
    """The stack's construct id (what ``cdk deploy`` and cdk.out name it): the stack name
    while that is short, cut with a hash otherwise."""
    return fit(CDK_STACK_ID, "GpuInsights-", cluster, f"-{part}")


def topic_name(cluster: str, purpose: str) -> str:
    return fit(SNS_TOPIC, "gpu-insights-", cluster, f"-{purpose}")


def topic_display_name(cluster: str, purpose: str) -> str:
    """Shown as the sender of SMS and email notifications; at most 100 characters."""
    return fit(SNS_DISPLAY_NAME, "gpu-insights-", cluster, f"-{purpose}")


def alarm_name(cluster: str, key: str) -> str:
    """Every alarm of a deployment starts with ``gpu-insights-<cluster>-`` (the weekly report
    reads alarm history by that prefix); an EKS cluster name always leaves room for it."""
    return fit(ALARM, "gpu-insights-", cluster, f"-{key}")


#: What a shard's alarm adds to its kind's name (and key): ``gpu-lost-shard-03``.
SHARD_SUFFIX: Final = "-shard-"


#: What a kind's fleet count alarm adds to the kind's key: ``gpu-low-power-at-cap`` pages when
#: so many GPUs breach gpu-low-power at once that its contributors reach CloudWatch's cap.
CAP_ALARM_SUFFIX: Final = "-at-cap"
#: Where a kind's fleet count alarm (cdk/alarms/catalog.py ``cap_alarms``) pages: this many of
#: its series breaching at once. Ten under the cap, for "if the volume of attributes is too
#: large, the number of contributors in ALARM can be limited to less than 100"
#: (alarm-limits.html, for Metrics Insights and PromQL alarms alike): past the cap the kind's
#: alarm pages no more GPUs (or jobs) one by one, so the count pages once for all of them.
CAP_ALARM_SERIES: Final = 90


def cap_alarm_title(title: str) -> str:
    """A fleet count alarm's title from its kind's: the catalog names the alarm so, and the
    notifier derives it so from the kind's (its environment lists no count alarm: Lambda's
    4 KB of environment variables would not hold them beside the kinds)."""
    return f"{CAP_ALARM_SERIES}+ at once: {title}"


def shard_alarm_name(name: str, shard: int) -> str:
    """The name (or key) of one shard's alarm of a sharded alarm kind: ``...-shard-03``."""
    return f"{name}{SHARD_SUFFIX}{shard:02d}"


def dashboard_name(cluster: str, purpose: str) -> str:
    return fit(DASHBOARD, "gpu-insights-", cluster, f"-{purpose}")


def parameter_name(cluster: str) -> str:
    """The CloudWatch agent loads ``ssm:`` parameters named ``AmazonCloudWatch-*`` under its
    default policy, so the name keeps that prefix."""
    return fit(SSM_PARAMETER, "AmazonCloudWatch-GpuInsights-", cluster)
