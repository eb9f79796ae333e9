"""The deployment's settings on the command line, read as `cdk deploy` reads them: cdk.json's
context, then each ``-c KEY=VALUE``. Shared by the commands that need the settings."""

import argparse
import json
from pathlib import Path


def add_settings_arguments(parser: argparse.ArgumentParser, *, context_help: str) -> None:
    parser.add_argument(
        "-c", "--context", action="append", default=[], metavar="KEY=VALUE", help=context_help
    )
    parser.add_argument(
        "--cdk-json", type=Path, default=Path("cdk.json"), help="settings from this cdk.json"
    )
    parser.add_argument("--profile", help="AWS profile (standard credential chain otherwise)")


def context_from_args(args: argparse.Namespace) -> dict[str, object]:
    """cdk.json's context with each ``-c`` applied over it; a bad file or item is refused."""
    context: dict[str, object] = {}
    if args.cdk_json.is_file():
        try:
            context.update(json.loads(args.cdk_json.read_text()).get("context", {}))
        except json.JSONDecodeError as err:
            raise ValueError(f"{args.cdk_json} is not valid JSON: {err}") from err
    for item in args.context:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"-c {item!r} is not KEY=VALUE")
        context[key] = value
    return context
