"""PromQL alarms: the per-GPU alarms of OTel Container Insights mode, on DCGM's own series.

"A PromQL alarm monitors metrics using a Prometheus Query Language (PromQL) instant query. The
query selects metrics ingested through the CloudWatch OTLP endpoint, and all matching time
series returned by the query are considered to be breaching. The alarm evaluates the query at a
regular interval and tracks each breaching time series independently as a contributor." A
contributor "continues breaching for the duration specified by PendingPeriod" before ALARM and
"remains absent for the duration specified by RecoveryPeriod" before OK; "The alarm is in ALARM
state when at least one contributor has been breaching for longer than the pending period"
("PromQL alarms", https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-promql.html).
No GROUP BY: the query returns one series per breaching GPU. AWS evaluates at most 500 of
them ("PARTIAL_DATA" beyond) and tracks at most 100 contributors in ALARM ("Limits that
apply to alarms based on PromQL queries", alarm-limits.html), so one alarm covers a fleet of
one shard (``AlarmSettings.promql_low_power``); a larger fleet keeps the sharded alarm.
The backtest evaluates these alarms as that page says (cli/backtest/promql_alarm.py).
"""

from dataclasses import dataclass
from typing import Final

from lambdas.shared.dcgm import CLOUDWATCH, DCGM_POWER, DcgmLabels
from lambdas.shared.promql import quote_label

#: AlarmPromQLCriteria: "Query ... Length Constraints: Minimum length of 1. Maximum length of
#: 10000"; "PendingPeriod ... RecoveryPeriod ... Valid Range: Minimum value of 0. Maximum value
#: of 86400" (API Reference, AlarmPromQLCriteria,
#: https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_AlarmPromQLCriteria.html).
MAX_QUERY_CHARS: Final = 10_000
MAX_PERIOD_S: Final = 86_400
#: PromQLAlarmProps.evaluationInterval: "Must be between 10 seconds and 3600 seconds" (CDK API
#: reference, aws-cdk-lib.aws_cloudwatch.PromQLAlarmProps); the SDK examples' wording: "Valid
#: values are 10, 20, 30, and any multiple of 60, up to 3600" (awsdocs code examples,
#: put_metric_alarm with EvaluationCriteria.PromQLCriteria).
SHORT_INTERVALS_S: Final = (10, 20, 30)
MAX_INTERVAL_S: Final = 3600
#: Every minute: a GPU's DCGM samples arrive every 30 s (the add-on's metricResolution).
EVALUATION_INTERVAL_S: Final = 60
#: The range each evaluation reads: five minutes of samples (ten at 30 s), so one late or lost
#: scrape does not make a breaching GPU absent, which would restart its pending period.
RANGE_S: Final = 300
#: Five minutes above the threshold (absent from the result) before a GPU's contributor is OK.
RECOVERY_S: Final = 300


class PromQLAlarmError(ValueError):
    """A PromQL alarm CloudWatch would refuse; the message names the field."""


@dataclass(frozen=True)
class PromQLQuery:
    """What a PromQL alarm evaluates (``EvaluationCriteria.PromQLCriteria`` and
    ``EvaluationInterval``) and the labels that name its contributor's GPU."""

    query: str
    evaluation_interval_s: int
    pending_period_s: int
    recovery_period_s: int
    labels: DcgmLabels = CLOUDWATCH
    #: The longest range selector in the query (``[5m]``: 300): what a replay's scan counts.
    lookback_s: int = 0

    def __post_init__(self) -> None:
        if not 1 <= len(self.query) <= MAX_QUERY_CHARS:
            raise PromQLAlarmError(
                f"query is {len(self.query)} characters; PromQLCriteria takes 1 to "
                f"{MAX_QUERY_CHARS}"
            )
        for key in ("pending_period_s", "recovery_period_s"):
            seconds = getattr(self, key)
            if not 0 <= seconds <= MAX_PERIOD_S:
                raise PromQLAlarmError(f"{key}={seconds} must be 0 to {MAX_PERIOD_S} seconds")
        interval = self.evaluation_interval_s
        if interval not in SHORT_INTERVALS_S and not (
            interval % 60 == 0 and 60 <= interval <= MAX_INTERVAL_S
        ):
            raise PromQLAlarmError(
                f"evaluation_interval_s={interval} must be 10, 20, 30 or a multiple of 60 up "
                f"to {MAX_INTERVAL_S}"
            )


def _string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def low_power_query(
    cluster: str,
    threshold_watts: float,
    window_minutes: int,
    labels: DcgmLabels = CLOUDWATCH,
) -> PromQLQuery:
    """Each pod-held GPU whose peak power over the last ``RANGE_S`` stayed under
    ``threshold_watts``: one series per (cluster, node, GPU, namespace, pod), the contributor
    that names the GPU and the pod. DCGM labels a GPU's datapoints with the pod only while a
    pod holds it (cli/demo/realistic/otel.py), so an idle GPU is never returned. Pending for the
    rest of the window: the first breach is seen when a whole range is under the threshold,
    so ALARM comes ``window_minutes`` after the GPU's power fell."""
    q = quote_label
    selector = (
        "{"
        + ", ".join(
            (
                f"__name__={_string(DCGM_POWER)}",
                f"{q(labels.cluster)}={_string(cluster)}",
                f'{q(labels.pod)}!=""',
            )
        )
        + f"}}[{RANGE_S // 60}m]"
    )
    by = ", ".join(q(n) for n in (labels.cluster, labels.node, labels.gpu, labels.namespace))
    return PromQLQuery(
        query=(f"max by ({by}, {q(labels.pod)}) (max_over_time({selector})) < {threshold_watts:g}"),
        evaluation_interval_s=EVALUATION_INTERVAL_S,
        pending_period_s=window_minutes * 60 - RANGE_S,
        recovery_period_s=RECOVERY_S,
        labels=labels,
        lookback_s=RANGE_S,
    )
