"""The CDK app. The only module that reads CDK context or the process environment.

Run by ``cdk synth`` through cdk.json (``python -m cdk.app``), and in-process by the demo and
the tests through :func:`build`. aws_cdk is imported only where a construct is made: importing
it starts the jsii kernel (seconds), and a synth refused for its settings needs none of that.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from cdk.deploy_region import MODE_KEY, DeployRegion, deploy_region, deployment_line
from cdk.installed import require
from cdk.settings import (
    OTLP_ENDPOINT_MIN_ADDON_VERSION,
    Settings,
    SettingsError,
    settings_from_context,
)
from gpu_insights_agent.contract.metrics import ExporterSink
from gpu_insights_agent.contract.resource_names import stack_id
from lambdas.shared.container_insights_mode import (
    OTEL_REGIONS,
    OTEL_REGIONS_READ,
    ContainerInsightsMode,
)

if TYPE_CHECKING:
    from aws_cdk import App, Stack


#: Where the CDK CLI hands the app its context: JSON in one variable, and over it a JSON file
#: named by another when the context is too long for the environment (aws-cdk-lib
#: core/lib/app.ts ``loadContext``; cx-api/lib/cxapi.ts ``CONTEXT_ENV`` and
#: ``CONTEXT_OVERFLOW_LOCATION_ENV``, read in aws-cdk-lib 2.275.0's package).
CONTEXT_ENV: Final = "CDK_CONTEXT_JSON"
CONTEXT_OVERFLOW_LOCATION_ENV: Final = "CONTEXT_OVERFLOW_LOCATION_ENV"


def cli_context(environ: Mapping[str, str]) -> dict[str, object]:
    """The context the CDK CLI passed, read as the App reads it, without starting jsii."""
    context: dict[str, object] = {}
    if environ.get(CONTEXT_ENV):
        context.update(json.loads(environ[CONTEXT_ENV]))
    if environ.get(CONTEXT_OVERFLOW_LOCATION_ENV):
        context.update(json.loads(Path(environ[CONTEXT_OVERFLOW_LOCATION_ENV]).read_text()))
    return context


def settings_for(context: Mapping[str, object], environ: Mapping[str, str]) -> Settings:
    """Settings from the context; the account falls back to the CLI's default, the Region to
    ``deploy_region``'s (the CDK CLI's, else the Region variables, else us-east-1)."""
    return placed_settings(context, environ)[0]


def placed_settings(
    context: Mapping[str, object], environ: Mapping[str, str]
) -> tuple[Settings, DeployRegion]:
    """``settings_for``'s settings, and where their Region came from."""
    context = dict(context)
    if context.get("account") is None and environ.get("CDK_DEFAULT_ACCOUNT"):
        context["account"] = environ["CDK_DEFAULT_ACCOUNT"]
    setting = context.get("region")
    where = deploy_region(
        setting=setting if isinstance(setting, str) else None, environ=environ, cdk_cli=True
    )
    context["region"] = where.region
    return settings_from_context(context), where


def mode_default_warning(settings: Settings) -> str:
    """What synth says of a mode left unset: OTel where AWS offers it (a deployment made when
    Classic was the default switches its add-on), Classic in a Region it does not."""
    if settings.container_insights_mode is ContainerInsightsMode.CLASSIC:
        return (
            f"{MODE_KEY} is not set: the add-on is configured for Classic Container Insights, "
            f"as AWS does not offer OTel Container Insights in {settings.region} (only in "
            f"{', '.join(sorted(OTEL_REGIONS))}, its list read {OTEL_REGIONS_READ}); set "
            f"-c {MODE_KEY}=classic to say so"
        )
    return (
        f"{MODE_KEY} is not set: the add-on is configured for OTel Container Insights (the "
        "default where AWS offers it, AWS's recommendation; a preview in "
        f"{', '.join(sorted(OTEL_REGIONS))}). A deployment made when Classic was the default "
        f"switches its add-on to OTel on this deploy: set -c {MODE_KEY}=classic to keep "
        "Classic (gpu-insights preflight names the mode the add-on runs)"
    )


def sink_default_warning(settings: Settings) -> str | None:
    """What synth says where an unset ``exporter_sink`` is EMF in OTel mode: only a pinned
    add-on older than the agent's OTLP endpoint makes it so, and the deployment then gets the
    sharded Metrics Insights alarms and custom metrics that OTLP would have spared it."""
    if (
        settings.container_insights_mode is not ContainerInsightsMode.OTEL
        or settings.exporter_sink is not ExporterSink.EMF
    ):
        return None
    return (
        f"exporter_sink is not set: the exporter sends EMF, as addon_version="
        f"{settings.addon_version} predates the add-on's OTLP endpoint "
        f"({OTLP_ENDPOINT_MIN_ADDON_VERSION}): its alarms are sharded Metrics Insights alarms "
        "on custom metrics, which OTLP's PromQL alarms would replace (gpu-insights "
        "cost-estimate prices both). Pin the add-on at "
        f"{OTLP_ENDPOINT_MIN_ADDON_VERSION} or later (or leave addon_version unset) for OTLP, "
        "or set -c exporter_sink=emf to keep EMF"
    )


def build(app: App, settings: Settings) -> list[Stack]:
    """Every stack of one deployment, checked by cdk-nag's AwsSolutions pack at synth."""
    from aws_cdk import Annotations, Validations
    from cdk_nag import AwsSolutionsChecks

    from cdk.stacks.alarms_stack import AlarmsStack
    from cdk.stacks.analyzers_stack import AnalyzersStack
    from cdk.stacks.observability_stack import ObservabilityStack

    cluster = settings.cluster_name
    stacks: list[Stack] = [
        ObservabilityStack(app, stack_id(cluster, ObservabilityStack.part), settings=settings),
        AlarmsStack(app, stack_id(cluster, AlarmsStack.part), settings=settings),
        AnalyzersStack(app, stack_id(cluster, AnalyzersStack.part), settings=settings),
    ]
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    if settings.install_addon and app.node.try_get_context(MODE_KEY) is None:
        Annotations.of(stacks[0]).add_warning_v2(
            "gpu-insights:container-insights-mode-default", mode_default_warning(settings)
        )
    sink_warning = sink_default_warning(settings)
    if sink_warning and app.node.try_get_context("exporter_sink") is None:
        Annotations.of(stacks[0]).add_warning_v2("gpu-insights:exporter-sink-default", sink_warning)
    return stacks


def main() -> int:
    # The CDK's own packages, which the command line's install leaves out.
    require(("aws_cdk", "cdk_nag", "constructs"))
    try:
        # A refused synth stops here, before aws_cdk is imported (seconds of jsii start-up);
        # the App's own reading of the context below is the one the stacks are built from.
        given = cli_context(os.environ)
        settings, where = placed_settings(given, os.environ)
        # The first line: the Region, where it came from, the mode and the alarms, as every
        # gpu-insights command says them.
        print(f"gpu-insights: {deployment_line(settings, where, given)}", file=sys.stderr)
        from aws_cdk import App

        # No construct stack traces in the cloud assembly: from Python they are the jsii
        # kernel's JavaScript frames, and the CDK CLI prints the first one
        # ("/tmp/.../lib/program.js:1:55913") above each warning, pointing at nothing a user
        # can open.
        app = App(stack_traces=False)
        settings = settings_for(app.node.get_all_context(), os.environ)
    except SettingsError as err:
        print(f"gpu-insights: {err}", file=sys.stderr)
        return 2
    build(app, settings)
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
