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
            document = json.loads(args.cdk_json.read_text(encoding="utf-8"))
        except (ValueError, RecursionError, OSError) as err:  # not JSON, not UTF-8, too deep
            raise ValueError(f"{args.cdk_json} is not a readable JSON file: {err}") from err
        settings = document.get("context", {}) if isinstance(document, dict) else None
        if not isinstance(settings, dict):
            raise ValueError(f'{args.cdk_json} must be a JSON object with a "context" object')
        context.update(settings)
    for item in args.context:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"-c {item!r} is not KEY=VALUE")
        context[key] = value
    return context
