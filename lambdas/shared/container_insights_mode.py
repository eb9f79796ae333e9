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


#: The Regions where AWS offers OTel Container Insights, read 2026-12-01: "available in public
#: preview ... in US East (N. Virginia), US West (Oregon), Europe (Ireland), Asia Pacific
#: (Singapore), and Asia Pacific (Sydney)" ("Container Insights with OpenTelemetry metrics for
#: Amazon EKS",
#: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/container-insights-otel-metrics.html).
#: OTel mode is the default only here; elsewhere synth and `preflight` refuse it, and a
#: deployment that leaves the mode unset gets Classic.
OTEL_REGIONS_READ: Final = "2026-12-01"
OTEL_REGIONS: Final = frozenset(
    {"us-east-1", "us-west-2", "eu-west-1", "ap-southeast-1", "ap-southeast-2"}
)


def otel_offered(region: str | None) -> bool:
    """Whether AWS offers OTel Container Insights in ``region`` (True where it is not known:
    synth without a Region, whose deploy Region decides; `preflight` knows it)."""
    return region is None or region in OTEL_REGIONS


def default_mode(region: str | None) -> ContainerInsightsMode:
    """The mode of a deployment that does not set one: OTel where AWS offers it, else
    Classic."""
    return DEFAULT_MODE if otel_offered(region) else ContainerInsightsMode.CLASSIC


def otel_region_problem(region: str) -> str:
    """What OTel mode is refused for in ``region`` (the ``expected`` part of a one-line
    settings error), naming the setting that fixes it."""
    offered = ", ".join(sorted(OTEL_REGIONS))
    return (
        f"-c container_insights_mode=classic in {region}: AWS offers OTel Container Insights "
        f"only in {offered} (its list read {OTEL_REGIONS_READ})"
    )


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
