"""The deployment's settings on the command line, read as `cdk deploy` reads them: cdk.json's
context, then each ``-c KEY=VALUE``, through the same ``settings_from_context`` as ``cdk synth``.
Every command that needs a cluster, a Region or a setting takes its options from here, so each
spells them, checks them and refuses them the same way."""

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cdk.aws_values import region_problem
from cdk.deploy_region import (
    DeployRegion,
    Placement,
    deploy_region,
    profile_name,
    profile_region,
)
from cdk.settings import (
    Settings,
    SettingsError,
    missing_cluster,
    setting_key_problem,
    settings_from_context,
)
from cli.failures import AwsFailureError

#: What a command that reads AWS says where the standard credential chain finds nothing.
NO_CREDENTIALS = (
    "no AWS credentials found: give --profile PROFILE (or set AWS_PROFILE) for a profile in "
    "~/.aws/config or ~/.aws/credentials (run `aws sso login --profile PROFILE` for an IAM "
    "Identity Center one), or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and "
    "AWS_SESSION_TOKEN for temporary ones)"
)

CONTEXT_HELP = "a setting, as given to cdk synth (repeatable; over cdk.json's)"


def add_settings_arguments(
    parser: argparse.ArgumentParser, *, aws: bool, cluster: bool = True
) -> None:
    """``-c`` and ``--cdk-json``; ``--cluster-name`` where the command names a cluster;
    ``--profile`` and ``--region`` where it reads AWS."""
    parser.add_argument(
        "-c", "--context", action="append", default=[], metavar="KEY=VALUE", help=CONTEXT_HELP
    )
    parser.add_argument(
        "--cdk-json",
        type=Path,
        default=None,
        help="settings from this cdk.json (default: ./cdk.json where there is one)",
    )
    if cluster:
        parser.add_argument(
            "--cluster-name",
            default=None,
            help="the EKS cluster (default: the cluster_name setting)",
        )
    if aws:
        parser.add_argument(
            "--profile", help="AWS profile (default: the standard credential chain)"
        )
        parser.add_argument(
            "--region",
            help="AWS Region (default: the region setting, then AWS_REGION, AWS_DEFAULT_REGION, "
            "the profile's, then us-east-1, as cdk deploy)",
        )


DEFAULT_CDK_JSON = Path("cdk.json")


def _cdk_json_context(path: Path) -> dict[str, object]:
    """The ``context`` object of a cdk.json; a file that is not one is refused by name."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ValueError(f"--cdk-json {path}: {err.strerror or err}") from err
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise ValueError(f"--cdk-json {path} is not valid JSON: {err}") from err
    if not isinstance(document, dict):
        raise ValueError(
            f"--cdk-json {path}: expected a JSON object, got {type(document).__name__}"
        )
    context = document.get("context", {})
    if not isinstance(context, dict):
        raise ValueError(f'--cdk-json {path}: "context" must be a JSON object')
    return context


def context_from_args(args: argparse.Namespace) -> dict[str, object]:
    """cdk.json's context with each ``-c`` applied over it, then ``--cluster-name`` where the
    command has it; a bad file or item is refused."""
    context: dict[str, object] = {}
    path = args.cdk_json
    if path is None and DEFAULT_CDK_JSON.is_file():
        path = DEFAULT_CDK_JSON
    if path is not None:
        context.update(_cdk_json_context(path))
    for item in args.context:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"-c {item!r} is not KEY=VALUE")
        problem = setting_key_problem(key)
        if problem:
            raise ValueError(problem)
        context[key] = value
    if getattr(args, "cluster_name", None) is not None:
        context["cluster_name"] = args.cluster_name
    return context


def command_settings(
    args: argparse.Namespace,
    overrides: dict[str, object] | None = None,
    *,
    defaults: dict[str, object] | None = None,
) -> Settings:
    """The settings the command was given (cdk.json, each ``-c``, ``--cluster-name``), over the
    command's ``defaults`` and under its own options (``overrides``, where not None), checked
    as synth checks them, in the Region ``placed_settings`` resolves."""
    return placed_settings(args, overrides, defaults=defaults).settings


def placed_settings(
    args: argparse.Namespace,
    overrides: dict[str, object] | None = None,
    *,
    defaults: dict[str, object] | None = None,
) -> Placement:
    """``command_settings``'s settings, and the line the command starts with: the Region (as
    cdk deploy resolves it: cdk/deploy_region.py; a command's ``--region`` first), where it
    came from, the Container Insights mode and the alarms. The one place the command line
    reads the environment and the AWS config files for it."""
    context = {**(defaults or {}), **context_from_args(args)}
    context.update({k: v for k, v in (overrides or {}).items() if v is not None})
    option = getattr(args, "region", None)
    if option is not None:
        problem = region_problem(option)
        if problem:
            raise ValueError(f"--region {option!r} is not valid: expected {problem}")
    setting = context.get("region")
    environ = os.environ
    where = deploy_region(
        setting=setting if isinstance(setting, str) else None,
        environ=environ,
        profile=lambda: _profile_region(getattr(args, "profile", None), environ),
        option=option,
    )
    if where.source not in {"--region", "the region setting"}:
        problem = region_problem(where.region)
        if problem:  # from the environment or the profile
            raise ValueError(f"AWS Region {where.region!r} ({where.source}) is not {problem}")
    context["region"] = where.region
    # Synth's words without a cluster, with the option this command takes for it first (an
    # unknown key is refused first, by settings_from_context, as at synth).
    unknown = any(setting_key_problem(key) for key in context)
    if context.get("cluster_name") is None and hasattr(args, "cluster_name") and not unknown:
        raise SettingsError(missing_cluster("--cluster-name"))
    return Placement(settings_from_context(context), where, context)


def _profile_region(profile: str | None, environ: Mapping[str, str]) -> DeployRegion | None:
    """The profile's Region from the shared credentials and config files, as the CDK CLI reads
    it; None without botocore (the core install) or a Region there."""
    try:
        import botocore.configloader
        import botocore.exceptions
        import botocore.session
    except ModuleNotFoundError:
        return None
    session = botocore.session.Session()
    try:
        config = session.full_config.get("profiles", {})
        path = os.path.expanduser(str(session.get_config_variable("credentials_file")))
        credentials = botocore.configloader.raw_config_parse(path) if os.path.isfile(path) else {}
    except botocore.exceptions.BotoCoreError as err:  # a config file that does not parse
        raise AwsFailureError(str(err)) from err
    return profile_region(profile_name(profile, environ), credentials, config)


def said(args: argparse.Namespace, line: str, output: str, *, for_programs: bool = False) -> str:
    """``output`` after the command's first line (``placed_settings``'); where the output is
    for a program (``--json``, a manifest for kubectl), the line goes to stderr instead, so
    that stdout stays whole."""
    if for_programs or getattr(args, "json", False):
        print(line, file=sys.stderr)
        return output
    return f"{line}\n{output}"


def session_for(args: argparse.Namespace, settings: Settings) -> tuple[Any, str]:
    """A session in the settings' Region (``placed_settings``': ``--region``, the region
    setting, AWS_REGION ahead of AWS_DEFAULT_REGION, the profile's, us-east-1; botocore alone
    would read only AWS_DEFAULT_REGION) with ``--profile``, and that Region. An unknown
    profile is an AWS failure (exit 1)."""
    from botocore.exceptions import BotoCoreError

    from lambdas.shared.aws_clients import new_session

    region = settings.region or ""
    try:
        session = new_session(profile_name=args.profile, region_name=region)
        credentials = session.get_credentials()
    except BotoCoreError as err:  # an unknown --profile
        raise AwsFailureError(str(err)) from err
    if credentials is None:  # botocore would say only "Unable to locate credentials"
        raise AwsFailureError(NO_CREDENTIALS)
    return session, region


def settings_and_session(
    args: argparse.Namespace, overrides: dict[str, object] | None = None
) -> tuple[Settings, Any, str, str]:
    """The command's settings and first line (``placed_settings``), and its session and Region
    (``session_for``)."""
    placed = placed_settings(args, overrides)
    return (placed.settings, *session_for(args, placed.settings), placed.line())
