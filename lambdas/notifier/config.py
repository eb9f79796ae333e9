"""The notifier's environment: one declaration, read by its handler at cold start and built
from the deployment's settings by its construct and by the demo (cdk/function_configs.py)."""

from dataclasses import dataclass
from typing import Final, cast, get_args

from gpu_insights_agent.contract.resource_names import CAP_ALARM_SUFFIX, cap_alarm_title
from lambdas.notifier.notification import Severity
from lambdas.shared.config import FLAG, NAMES, PAIRS, TEXT, Codec, FunctionConfig, variable

#: The function's timeout (its construct's): a page's deliveries are bounded well inside it
#: (lambdas/notifier/webhook.py DEADLINE_S, handler.send).
FUNCTION_TIMEOUT_S: Final = 30


def _kinds(raw: str) -> dict[str, tuple[Severity, str]]:
    pairs = PAIRS.parse(raw)
    if any(severity not in get_args(Severity) for severity, _ in pairs.values()):
        raise ValueError("a severity that is not critical or warning")
    return cast(dict[str, tuple[Severity, str]], pairs)


#: Alarm kind -> (severity, title), as JSON.
ALARM_KINDS: Final = Codec[dict[str, tuple[Severity, str]]](
    'a JSON object of alarm kind: ["critical" or "warning", "title"]',
    _kinds,
    lambda kinds: PAIRS.render(cast(dict[str, tuple[str, str]], kinds)),
)


def with_cap_kinds(kinds: dict[str, tuple[Severity, str]]) -> dict[str, tuple[Severity, str]]:
    """``kinds`` and each one's fleet count alarm kind (``<kind>-at-cap``: the same severity,
    the catalog's title for it), which the environment leaves out: Lambda's "total size of all
    environment variables doesn't exceed 4 KB" (https://docs.aws.amazon.com/lambda/latest/dg/
    configuration-envvars.html) would not hold both at OTel mode's 20-odd PromQL kinds."""
    caps = {
        f"{kind}{CAP_ALARM_SUFFIX}": (severity, cap_alarm_title(title))
        for kind, (severity, title) in kinds.items()
    }
    return kinds | caps


@dataclass(frozen=True, kw_only=True)
class NotifierConfig(FunctionConfig):
    cluster_name: str = variable("CLUSTER_NAME", TEXT)
    #: Lambda's own: "AWS_REGION - The AWS Region where the Lambda function is executed"
    #: (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html).
    region: str = variable("AWS_REGION", TEXT, runtime=True)
    critical_topic_arn: str = variable("CRITICAL_TOPIC_ARN", TEXT)
    warning_topic_arn: str = variable("WARNING_TOPIC_ARN", TEXT)
    #: The ledger of incidents sent (its construct's table).
    sent_table: str = variable("SENT_TABLE", TEXT)
    #: The dashboard a notification links, with the node picked.
    gpu_dashboard: str = variable("GPU_DASHBOARD", TEXT)
    #: Where the exporter's documents are: the pods on a GPU an alarm names.
    exporter_log_group: str = variable("EXPORTER_LOG_GROUP", TEXT)
    #: Alarm kind -> (severity, title), by kind, not by shard: one entry per kind whatever
    #: the fleet (Lambda's 4 KB of environment would not hold one per alarm at 10,000 GPUs).
    alarm_kinds: dict[str, tuple[Severity, str]] = variable("ALARM_KINDS", ALARM_KINDS)
    #: The kinds deployed as PromQL alarms (OTel mode): each GPU comes as a contributor event,
    #: so the alarm's own event is no page. None: none (Classic).
    promql_alarm_kinds: tuple[str, ...] | None = variable("PROMQL_ALARM_KINDS", NAMES, default=None)
    #: The SSM SecureString parameter holding a chat webhook's URL (lambdas/notifier/webhook.py):
    #: its name, never the URL, which carries the webhook's token. None: SNS alone.
    webhook_url_parameter: str | None = variable("WEBHOOK_URL_PARAMETER", TEXT, default=None)
    #: Container Insights' host log group, where the kernel's ``NVRM: Xid`` lines land: read to
    #: say whether the node's kernel log confirms an exporter XID. None: not read.
    host_log_group: str | None = variable("HOST_LOG_GROUP", TEXT, default=None)
    #: Page a fatal exporter XID only when the kernel log confirms it (else a warning that says
    #: so): the ``xid_require_kernel_confirmation`` setting.
    require_kernel_confirmation: bool = variable("REQUIRE_KERNEL_CONFIRMATION", FLAG, default=False)
