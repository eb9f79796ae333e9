"""How many alarm shards a fleet needs, from the limits of Metrics Insights alarms.

Amazon CloudWatch User Guide, "Limits" (alarms),
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-limits.html:

- "A default of 200 alarms using the Metrics Insights query per account per Region";
- "Only the latest 3 hours of data can be used for evaluating the alarm's conditions";
- "Alarms evaluating multiple time series will limit the number of contributors in ALARM
  to 100" (the StateReason then reads "100+ time series evaluated to ALARM"), and fewer "if
  the volume of attributes is too large": each kind has a fleet count alarm for that
  (``CAP_ALARM_SERIES``);
- "the EvaluationState will be set to PARTIAL_DATA ... If the Metrics Insights query returns
  more than 500 time series ... If the Metrics Insights query matches more than 10,000
  metrics".

So one alarm sees at most 500 GPUs in full. The exporter puts each GPU in one of ``shards``
shards (contract.metrics.alarm_shard) and each alarm kind has one alarm per shard. A
hash never fills shards exactly evenly, and a node replaced within the three hours an alarm
reads still has series there; so shards are sized to hold ``SHARD_FILL`` of 500 on average.
"""

import math
from dataclasses import dataclass
from typing import Final

# The fleet count alarms' threshold: the contract's, which the notifier reads too.
from gpu_insights_agent.contract.resource_names import (  # the explicit re-export
    CAP_ALARM_SERIES as CAP_ALARM_SERIES,  # noqa: PLC0414
)

MAX_SERIES_PER_QUERY: Final = 500
MAX_METRICS_PER_QUERY: Final = 10_000
MAX_CONTRIBUTORS_IN_ALARM: Final = 100
MAX_WINDOW_MINUTES: Final = 180
#: The default quota of Metrics Insights alarms per account and Region (adjustable).
INSIGHTS_ALARM_QUOTA: Final = 200
#: Average share of the 500 series one shard's query returns: at 10,000 GPUs in 25 shards a
#: shard holds 400 +- 20 (binomial), so 500 is five standard deviations away, and 100 GPUs of
#: replaced nodes fit besides.
SHARD_FILL: Final = 0.8
#: GPUs one shard is sized for.
GPUS_PER_SHARD: Final = int(MAX_SERIES_PER_QUERY * SHARD_FILL)


class FleetSizeError(ValueError):
    """A fleet size the alarms cannot be sized for; the message names it."""


def shards_for(fleet_gpus: int) -> int:
    """Alarm shards for a fleet of this many GPUs: ceil(GPUs / 400)."""
    if fleet_gpus < 1:
        raise FleetSizeError(f"fleet_gpus={fleet_gpus} must be at least 1")
    return max(1, math.ceil(fleet_gpus / GPUS_PER_SHARD))


@dataclass(frozen=True)
class AlarmSizing:
    """The Metrics Insights alarms a deployment makes for its fleet size, against the quota."""

    fleet_gpus: int
    shards: int
    insights_alarms: int
    quota: int = INSIGHTS_ALARM_QUOTA
    #: Of them, the training job alarms (a fixed count: one per job alarm shard and kind).
    job_alarms: int = 0
    #: OTel mode's PromQL alarms besides (one per kind whatever the fleet; not in this quota).
    promql_alarms: int = 0

    @property
    def fits_default_quota(self) -> bool:
        return self.insights_alarms <= self.quota

    def line(self) -> str:
        """The sizing in one line; with no Metrics Insights alarm, no shard to speak of."""
        gpus = f"{self.fleet_gpus:,} GPU{'' if self.fleet_gpus == 1 else 's'}"
        if not self.insights_alarms and self.promql_alarms:
            return (
                f"{gpus} -> {self.promql_alarms} PromQL alarm(s), unsharded (one per kind "
                "whatever the fleet), and no Metrics Insights alarm"
            )
        return (
            f"{gpus} -> {self.shards} "
            "alarm shard(s) of up to "
            f"{MAX_SERIES_PER_QUERY} series -> {self.insights_alarms} Metrics Insights alarms "
            + (f"({self.job_alarms} of them for training jobs) " if self.job_alarms else "")
            + f"of the default quota of {self.quota} per Region"
            + ("" if self.fits_default_quota else " (raise the quota first)")
            + (
                f", and {self.promql_alarms} PromQL alarm(s), unsharded"
                if self.promql_alarms
                else ""
            )
        )
