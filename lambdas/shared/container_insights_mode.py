"""Which configuration of the ``amazon-cloudwatch-observability`` add-on a cluster runs, and so
where its pod and node GPU series are read.

"Two approaches are available: OTel Container Insights (recommended) and Enhanced Container
Insights (Classic). Both use the amazon-cloudwatch-observability EKS add-on with different
configurations." (CloudWatch User Guide, "Amazon EKS" under Container Insights,
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/deploy-container-insights-EKS.html).
Classic publishes ``pod_gpu_*`` and ``node_gpu_*`` to the ``ContainerInsights`` namespace (read
with GetMetricData); OTel sends DCGM's own series over OTLP, read with PromQL.
"""

import re
from enum import StrEnum
from typing import Final


class ContainerInsightsMode(StrEnum):
    OTEL = "otel"
    CLASSIC = "classic"


#: OTel, AWS's recommendation ("OTel Container Insights (recommended)"; Classic "is in
#: maintenance mode"): every reader of Container Insights' series reads it (the GPU-hour
#: attribution, the GPU memory right-sizing, `gpu-insights status`, the low-power alarm, the
#: dashboards). A cluster whose add-on runs Classic keeps it with ``classic``; `preflight`
#: refuses a deploy that would switch it.
DEFAULT_MODE: Final = ContainerInsightsMode.OTEL
#: "Version 6.2.0 or later of the amazon-cloudwatch-observability add-on" ("Quick start: OTel
#: Container Insights on Amazon EKS", prerequisites,
#: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/container-insights-eks-otel-quickstart.html).
#: The preview's page named v6.0.1-eksbuild.1 (container-insights-otel-metrics.html); the
#: current quick start's later version is the one held to.
OTEL_MIN_ADDON_VERSION: Final = "v6.2.0-eksbuild.1"
_VERSION: Final = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-eksbuild\.(\d+)$")


def addon_version_key(version: str) -> tuple[int, int, int, int] | None:
    """``v6.0.1-eksbuild.1`` as (6, 0, 1, 1), to compare; None for another shape."""
    match = _VERSION.fullmatch(version)
    if match is None:
        return None
    major, minor, patch, build = (int(part) for part in match.groups())
    return major, minor, patch, build


def at_least(version: str, minimum: str) -> bool:
    """Whether add-on ``version`` is ``minimum`` or later (False for an unreadable one)."""
    key, least = addon_version_key(version), addon_version_key(minimum)
    return key is not None and least is not None and key >= least


def otel_capable(version: str) -> bool:
    """Whether an add-on version runs OTel Container Insights (False for an unreadable one)."""
    return at_least(version, OTEL_MIN_ADDON_VERSION)
