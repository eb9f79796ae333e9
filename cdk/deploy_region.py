"""The Region a deployment goes to, and so its Container Insights mode: resolved once, the way
``cdk deploy`` resolves it, for synth (cdk/app.py) and every command (cli/settings_args.py).

The project's ``region`` setting (``-c``, cdk.json) comes first; without it, the Region the CDK
CLI gives the app as its default (``CDK_DEFAULT_REGION``), which the CLI resolves in this order
(aws/aws-cdk-cli, packages/aws-cdk/lib/api/aws-auth/awscli-compatible.ts, ``region``: "1.
Environment variables specifying region, with both an AWS prefix and AMAZON prefix ... 2.
Regions listed in the Shared Ini Files - First checking for the profile provided and then
checking for the default profile. 3. IMDS instance identity region ... 4. us-east-1"):
``AWS_REGION``, ``AMAZON_REGION``, ``AWS_DEFAULT_REGION``, ``AMAZON_DEFAULT_REGION``, the
profile's ``region`` (the profile named, else ``AWS_PROFILE``, ``AWS_DEFAULT_PROFILE``, then
``default``; the credentials file before the config file, then the default profile's), then
us-east-1. The instance metadata step is left out: a command run off EC2 would wait on it.

The mode follows the Region where the ``container_insights_mode`` setting is unset: OTel where
AWS offers it, Classic elsewhere (lambdas/shared/container_insights_mode.py ``default_mode``,
applied by ``settings_from_context``). Pure: the environment and the profile's Region are
handed in by the one module of each program that reads them.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from cdk.alarms.catalog import alarm_sizing
from cdk.alarms.sizing import AlarmSizing
from cdk.settings import Settings
from lambdas.shared.container_insights_mode import OTEL_REGIONS, ContainerInsightsMode

#: The environment variables the CDK CLI reads a Region from, in its order.
REGION_VARIABLES: Final = (
    "AWS_REGION",
    "AMAZON_REGION",
    "AWS_DEFAULT_REGION",
    "AMAZON_DEFAULT_REGION",
)
#: The profile variables the CDK CLI names the profile by, where none is given.
PROFILE_VARIABLES: Final = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE")
#: Where the CDK CLI hands the app the Region it resolved (aws-cdk-lib cx-api
#: ``DEFAULT_REGION_ENV``), set on every app it runs.
CDK_DEFAULT_REGION: Final = "CDK_DEFAULT_REGION"
#: The CDK CLI's Region when nothing names one.
FALLBACK_REGION: Final = "us-east-1"
MODE_KEY: Final = "container_insights_mode"


@dataclass(frozen=True)
class DeployRegion:
    """A Region and where it came from, in the words a user sets it with."""

    region: str
    source: str


def profile_name(profile: str | None, environ: Mapping[str, str]) -> str:
    """The profile whose Region the CDK CLI reads: the one named, else the environment's."""
    named = profile or next((environ[v] for v in PROFILE_VARIABLES if environ.get(v)), None)
    return named or "default"


def profile_region(
    profile: str,
    credentials: Mapping[str, Mapping[str, str]],
    config: Mapping[str, Mapping[str, str]],
) -> DeployRegion | None:
    """The ``region`` of ``profile`` in the credentials file, then the config file, then the
    default profile's, as the CDK CLI reads them (``getRegionFromIni``); each file as
    profile name -> its keys."""
    for name in dict.fromkeys((profile, "default")):
        for file, where in ((credentials, "credentials"), (config, "config")):
            region = file.get(name, {}).get("region")
            if region:
                return DeployRegion(region, f"profile {name!r}'s region in the {where} file")
    return None


def deploy_region(
    *,
    setting: str | None,
    environ: Mapping[str, str],
    profile: Callable[[], DeployRegion | None] = lambda: None,
    option: str | None = None,
    cdk_cli: bool = False,
) -> DeployRegion:
    """The Region: a command's ``--region`` (``option``), the ``region`` setting, the CDK CLI's
    own (``CDK_DEFAULT_REGION``, read where ``cdk_cli``: synth), the Region variables, the
    profile's (``profile()``, read only when none of those names one), then us-east-1."""
    if option:
        return DeployRegion(option, "--region")
    if setting:
        return DeployRegion(setting, "the region setting")
    if cdk_cli and environ.get(CDK_DEFAULT_REGION):
        return DeployRegion(environ[CDK_DEFAULT_REGION], f"the CDK CLI's {CDK_DEFAULT_REGION}")
    for variable in REGION_VARIABLES:
        if environ.get(variable):
            return DeployRegion(environ[variable], variable)
    return profile() or DeployRegion(FALLBACK_REGION, "none set: the CDK CLI's default")


def deployment_line(
    settings: Settings,
    where: DeployRegion,
    context: Mapping[str, object],
    sizing: AlarmSizing | None = None,
) -> str:
    """The line each command starts with: the Region and where it came from, the mode and why,
    and the alarms the deployment makes in it (``sizing``, where the caller has it)."""
    mode = settings.container_insights_mode
    if context.get(MODE_KEY) is not None:
        why = f"the {MODE_KEY} setting"
    elif mode is ContainerInsightsMode.OTEL:
        why = "unset: OTel, as AWS offers it in this Region"
    else:
        why = (
            f"unset: Classic, as AWS offers OTel Container Insights only in "
            f"{', '.join(sorted(OTEL_REGIONS))}"
        )
    sizing = sizing or alarm_sizing(settings.alarm_settings(), settings.fleet_gpus)
    return (
        f"Region {where.region} ({where.source}); Container Insights mode {mode} ({why}); "
        f"{counted(sizing.insights_alarms, 'Metrics Insights alarm')} and "
        f"{counted(sizing.promql_alarms, 'PromQL alarm')}"
    )


def counted(count: int, noun: str) -> str:
    """``1 job``, ``2 jobs``: a count with its noun in the number it takes."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class Placement:
    """A command's settings in their resolved Region, and what its first line says of them."""

    settings: Settings
    where: DeployRegion
    context: Mapping[str, object]

    def line(self, sizing: AlarmSizing | None = None) -> str:
        return deployment_line(self.settings, self.where, self.context, sizing)
