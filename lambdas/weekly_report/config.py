"""The weekly report's environment: one declaration, read by its handler at cold start and
built from the deployment's settings by its construct and by the demo
(cdk/function_configs.py)."""

from dataclasses import dataclass
from typing import Final

from gpu_insights_agent.contract.metrics import EXPORTER_INTERVAL_S
from lambdas.shared.config import NAMES, TEXT, USD, WHOLE, FunctionConfig, variable
from lambdas.training_analyzer.gpu_prices import gpu_hour_price

#: The function's memory and timeout (its construct's, and what `gpu-insights cost-estimate`
#: prices).
MEMORY_MB: Final = 512
TIMEOUT_S: Final = 300


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
    #: Each alarm kind's name without its shard (the alarm catalog's); none: every alarm
    #: named for the cluster.
    alarm_kind_names: tuple[str, ...] = variable("ALARM_KIND_NAMES", NAMES, default=())
