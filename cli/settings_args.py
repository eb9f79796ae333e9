"""The deployment's settings on the command line, read as `cdk deploy` reads them: cdk.json's
context, then each ``-c KEY=VALUE``. Shared by the commands that need the settings."""

import argparse
import json
from pathlib import Path
from typing import Any

from cdk.settings import Settings, setting_key_problem, settings_from_context
from cli.failures import AwsFailureError


def add_settings_arguments(parser: argparse.ArgumentParser, *, context_help: str) -> None:
    parser.add_argument(
        "-c", "--context", action="append", default=[], metavar="KEY=VALUE", help=context_help
    )
    parser.add_argument(
        "--cdk-json",
        type=Path,
        default=None,
        help="settings from this cdk.json (default: ./cdk.json where there is one)",
    )
    parser.add_argument("--profile", help="AWS profile (standard credential chain otherwise)")


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
    """cdk.json's context with each ``-c`` applied over it; a bad file or item is refused."""
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
    return context


def settings_and_session(args: argparse.Namespace) -> tuple[Settings, Any, str]:
    """The settings the command was given, a session in their Region (``--region`` first) with
    ``--profile``, and that Region; an unknown profile or no Region is an AWS failure (exit 1)."""
    from botocore.exceptions import BotoCoreError

    from lambdas.shared.aws_clients import new_session

    settings = settings_from_context(context_from_args(args))
    try:
        session = new_session(profile_name=args.profile, region_name=args.region or settings.region)
    except BotoCoreError as err:  # an unknown --profile
        raise AwsFailureError(str(err)) from err
    region = session.region_name
    if region is None:
        raise AwsFailureError("no AWS Region: give --region, -c region=..., or AWS_REGION")
    return settings, session, region
