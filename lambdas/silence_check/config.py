"""The silence check's environment: one declaration, read by its handler at cold start and built
from the deployment's settings by its construct (cdk/function_configs.py). A bad value is
refused by name at synth and at the handler's start alike (lambdas/shared/config.py)."""

from dataclasses import dataclass
from typing import Final

from lambdas.shared.config import NAMES, TEXT, Codec, FunctionConfig, variable

#: How often the check runs: the alarm period of ``gpu-silent`` (cdk/alarms/catalog.py), so each
#: period holds one run's datapoint.
SCHEDULE_MINUTES: Final = 5
#: The function's memory (its construct's, and what `gpu-insights cost-estimate` prices).
MEMORY_MB: Final = 256
#: The shortest look back for a GPU's samples: two check periods, so a cycle the exporter
#: sent a little late (EMF through the agent takes seconds, sometimes a minute) is not silence.
MIN_LOOKBACK_S: Final = 600
#: The longest: ListMetrics' RecentlyActive lists "metrics that have had data points published
#: in the past three hours, [...] PT3H. This is the only valid value for this parameter", so a
#: longer look back would miss series
#: (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_ListMetrics.html).
MAX_LOOKBACK_S: Final = 3 * 3600
#: How many exporter cycles a GPU may miss before it is silent.
MISSED_CYCLES: Final = 3
#: A GPU instance younger than this is not expected to report yet: it boots, joins the cluster,
#: pulls the exporter's image and sends its first cycle (a GPU node takes minutes to be Ready).
DEFAULT_GRACE_S: Final = 900
#: The EC2 architectures the exporter's image runs on (cdk/constructs/gpu_exporter.py builds it
#: for linux/amd64, which EC2 calls x86_64; cdk/node_config/manifest.py keeps it off other nodes).
DEFAULT_ARCHITECTURES: Final = ("x86_64",)


def lookback_for(exporter_interval_s: int) -> int:
    """Seconds of samples read: ``MISSED_CYCLES`` exporter cycles, at least ``MIN_LOOKBACK_S``,
    in whole minutes (GetMetricData's periods are multiples of 60 s)."""
    seconds = max(MIN_LOOKBACK_S, MISSED_CYCLES * exporter_interval_s)
    return -(-seconds // 60) * 60


def _lookback(raw: str) -> int:
    value = int(raw)
    if not 60 <= value <= MAX_LOOKBACK_S or value % 60:
        raise ValueError("not whole minutes within ListMetrics' reach")
    return value


def _seconds(raw: str) -> int:
    value = int(raw)
    if value < 0:
        raise ValueError("negative")
    return value


def _architectures(raw: str) -> tuple[str, ...]:
    names = NAMES.parse(raw)
    if not names:
        raise ValueError("no instance would be checked")
    return names


LOOKBACK: Final = Codec[int](
    f"seconds in whole minutes from 60 to {MAX_LOOKBACK_S}", _lookback, str
)
SECONDS: Final = Codec[int]("seconds, 0 or more", _seconds, str)
ARCHITECTURES: Final = Codec[tuple[str, ...]](
    "comma-separated EC2 architectures, at least one", _architectures, NAMES.render
)


@dataclass(frozen=True, kw_only=True)
class SilenceCheckConfig(FunctionConfig):
    cluster_name: str = variable("CLUSTER_NAME", TEXT)
    #: Seconds back from the run's time in which a GPU must have sent a sample.
    lookback_s: int = variable("LOOKBACK_SECONDS", LOOKBACK, default=MIN_LOOKBACK_S)
    grace_s: int = variable("GRACE_SECONDS", SECONDS, default=DEFAULT_GRACE_S)
    #: The EC2 architectures of the instances expected to report: the exporter's nodes'.
    architectures: tuple[str, ...] = variable(
        "ARCHITECTURES", ARCHITECTURES, default=DEFAULT_ARCHITECTURES
    )
