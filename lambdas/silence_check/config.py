"""The silence check's whole configuration, declared once: its construct writes it into the
function's environment (``environment``), the handler reads it back (``from_environment``), and
the tests do both. A setting cannot be dropped between them, and a bad value is refused by
name at synth and at the handler's start alike."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Final

#: How often the check runs: the alarm period of ``gpu-silent`` (alarms/catalog.py), so each
#: period holds one run's datapoint.
SCHEDULE_MINUTES: Final = 5
#: The shortest look back for a GPU's samples: two check periods, so a cycle the exporter
#: sent a little late (EMF through the agent takes seconds, sometimes a minute) is not silence.
MIN_LOOKBACK_S: Final = 600
#: How many exporter cycles a GPU may miss before it is silent.
MISSED_CYCLES: Final = 3
#: A GPU instance younger than this is not expected to report yet: it boots, joins the cluster,
#: pulls the exporter's image and sends its first cycle (a GPU node takes minutes to be Ready).
DEFAULT_GRACE_S: Final = 900
#: The EC2 architectures the exporter's image runs on (cdk/constructs/gpu_exporter.py builds it
#: for linux/amd64, which EC2 calls x86_64; deploy_config/manifest.py keeps it off other nodes).
DEFAULT_ARCHITECTURES: Final = ("x86_64",)


class SilenceConfigError(ValueError):
    """A setting of the silence check that it cannot run with; the message names it."""


def lookback_for(exporter_interval_s: int) -> int:
    """Seconds of samples read: ``MISSED_CYCLES`` exporter cycles, at least ``MIN_LOOKBACK_S``,
    in whole minutes (GetMetricData's periods are multiples of 60 s)."""
    seconds = max(MIN_LOOKBACK_S, MISSED_CYCLES * exporter_interval_s)
    return -(-seconds // 60) * 60


@dataclass(frozen=True, kw_only=True)
class SilenceCheckConfig:
    cluster_name: str
    #: Seconds back from the run's time in which a GPU must have sent a sample.
    lookback_s: int = MIN_LOOKBACK_S
    grace_s: int = DEFAULT_GRACE_S
    architectures: tuple[str, ...] = DEFAULT_ARCHITECTURES

    #: Each field's environment variable.
    VARIABLES: ClassVar[dict[str, str]] = {
        "cluster_name": "CLUSTER_NAME",
        "lookback_s": "LOOKBACK_SECONDS",
        "grace_s": "GRACE_SECONDS",
        "architectures": "ARCHITECTURES",
    }

    def __post_init__(self) -> None:
        if not self.cluster_name:
            raise SilenceConfigError("cluster_name is empty")
        # ListMetrics' RecentlyActive reaches back three hours: a longer look back would miss
        # series (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_ListMetrics.html).
        if not 60 <= self.lookback_s <= 3 * 3600 or self.lookback_s % 60:
            raise SilenceConfigError(
                f"lookback_s={self.lookback_s} must be whole minutes from 60 to 10800"
            )
        if self.grace_s < 0:
            raise SilenceConfigError(f"grace_s={self.grace_s} must not be negative")
        if not self.architectures:
            raise SilenceConfigError("architectures is empty: no instance would be checked")

    def environment(self) -> dict[str, str]:
        return {
            self.VARIABLES["cluster_name"]: self.cluster_name,
            self.VARIABLES["lookback_s"]: str(self.lookback_s),
            self.VARIABLES["grace_s"]: str(self.grace_s),
            self.VARIABLES["architectures"]: ",".join(self.architectures),
        }

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> "SilenceCheckConfig":
        missing = [v for v in cls.VARIABLES.values() if v not in environ]
        if missing:
            raise SilenceConfigError(f"the environment lacks {', '.join(missing)}")
        try:
            return cls(
                cluster_name=environ[cls.VARIABLES["cluster_name"]],
                lookback_s=int(environ[cls.VARIABLES["lookback_s"]]),
                grace_s=int(environ[cls.VARIABLES["grace_s"]]),
                architectures=tuple(
                    a for a in environ[cls.VARIABLES["architectures"]].split(",") if a
                ),
            )
        except ValueError as err:
            if isinstance(err, SilenceConfigError):
                raise
            raise SilenceConfigError(f"a silence check setting is not a number: {err}") from err
