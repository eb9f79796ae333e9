"""The deployment's settings on the command line, read as `cdk deploy` reads them: cdk.json's
context, then each ``-c KEY=VALUE``, through the same ``settings_from_context`` as ``cdk synth``.
Every command that needs a cluster, a Region or a setting takes its options from here, so each
spells them, checks them and refuses them the same way."""

import argparse
import json
from pathlib import Path
from typing import Any

from cdk.aws_values import region_problem
from cdk.settings import Settings, setting_key_problem, settings_from_context
from cli.failures import AwsFailureError

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
            help="AWS Region (default: the region setting, then AWS_REGION or the profile's)",
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
    as synth checks them."""
    context = {**(defaults or {}), **context_from_args(args)}
    context.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return settings_from_context(context)


def session_for(args: argparse.Namespace, settings: Settings) -> tuple[Any, str]:
    """A session in the command's Region (``--region``, else the region setting, else the
    standard chain's) with ``--profile``, and that Region. A Region no partition has is bad
    input (exit 2); an unknown profile or no Region at all is an AWS failure (exit 1)."""
    from botocore.exceptions import BotoCoreError

    from lambdas.shared.aws_clients import new_session

    if args.region is not None:
        problem = region_problem(args.region)
        if problem:
            raise ValueError(f"--region {args.region!r} is not valid: expected {problem}")
    try:
        session = new_session(profile_name=args.profile, region_name=args.region or settings.region)
    except BotoCoreError as err:  # an unknown --profile
        raise AwsFailureError(str(err)) from err
    region = session.region_name
    if region is None:
        raise AwsFailureError("no AWS Region: give --region, -c region=..., or AWS_REGION")
    problem = region_problem(region)
    if problem:  # from AWS_REGION or the profile
        raise ValueError(f"AWS Region {region!r} (AWS_REGION or the profile) is not {problem}")
    return session, region


def settings_and_session(
    args: argparse.Namespace, overrides: dict[str, object] | None = None
) -> tuple[Settings, Any, str]:
    """The command's settings (``command_settings``), and its session and Region
    (``session_for``)."""
    settings = command_settings(args, overrides)
    return (settings, *session_for(args, settings))
