"""The weekly report's environment: one declaration, read by its handler at cold start and
built from the deployment's settings by its construct and by the demo
(cdk/function_configs.py)."""

import json
from dataclasses import dataclass
from typing import Final

from gpu_insights_agent.contract.metrics import EXPORTER_INTERVAL_S, ExporterSink
from gpu_insights_agent.contract.resource_names import shard_alarm_name
from lambdas.shared.config import (
    NAMES,
    TEXT,
    USD,
    WHOLE,
    Codec,
    FunctionConfig,
    choice,
    variable,
)
from lambdas.training_analyzer.gpu_prices import gpu_hour_price

#: The function's memory and timeout (its construct's, and what `gpu-insights cost-estimate`
#: prices).
MEMORY_MB: Final = 512
TIMEOUT_S: Final = 300


def _shards(raw: str) -> dict[str, int]:
    document = json.loads(raw)
    if not isinstance(document, dict) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in document.values()
    ):
        raise ValueError("not an object of whole numbers above 0")
    return {str(kind): int(n) for kind, n in document.items()}


#: Alarm kind name -> its number of shards, as JSON.
SHARDS: Final = Codec[dict[str, int]](
    "a JSON object of alarm kind name: shard count (a whole number above 0)",
    _shards,
    lambda shards: json.dumps(shards, separators=(",", ":"), sort_keys=True),
)


@dataclass(frozen=True, kw_only=True)
class ReportConfig(FunctionConfig):
    cluster_name: str = variable("CLUSTER_NAME", TEXT)
    report_bucket: str = variable("REPORT_BUCKET", TEXT)
    #: The report topic the summary goes to.
    topic_arn: str = variable("TOPIC_ARN", TEXT)
    gpu_hour_usd: float = variable("GPU_HOUR_USD", USD, default=gpu_hour_price(None))
    #: The exporter's cycle, which weights its samples by the GPU-hours they cover.
    exporter_interval_seconds: int = variable(
        "EXPORTER_INTERVAL_SECONDS", WHOLE, default=EXPORTER_INTERVAL_S
    )
    #: Where the exporter's own series are read: ``GpuInsights`` with GetMetricData (emf), or
    #: its OTLP series with PromQL (otlp), the exporter_sink setting.
    exporter_sink: ExporterSink = variable(
        "EXPORTER_SINK", choice(ExporterSink), default=ExporterSink.EMF
    )
    #: Each alarm kind's name without its shard (the alarm catalog's); none: no alarm history
    #: is read (its role may read these alarms' history only).
    alarm_kind_names: tuple[str, ...] = variable("ALARM_KIND_NAMES", NAMES, default=())
    #: The sharded kinds among them and their shard count: kind ``k`` of ``n`` shards is the
    #: alarms ``k-shard-00`` to ``k-shard-<n-1>``. None: no kind is sharded.
    alarm_shards: dict[str, int] | None = variable("ALARM_SHARDS", SHARDS, default=None)

    def alarm_names(self) -> tuple[str, ...]:
        """Every alarm of the deployment by its exact name: DescribeAlarmHistory takes one
        exact AlarmName (no prefix), and the role may read these alarms' history only."""
        shards = self.alarm_shards or {}
        return tuple(
            shard_alarm_name(kind, shard) if kind in shards else kind
            for kind in self.alarm_kind_names
            for shard in range(shards.get(kind, 1))
        )
