"""``gpu-insights``: parses the arguments and dispatches to the command's own module; each
command's module adds its options and returns what it prints."""

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import NoReturn

from cli import analyze, explain_failure, node_config
from cli.backtest import command as backtest
from cli.cost import command as cost
from cli.demo import arguments as demo
from cli.failures import (
    AWS_FAILED,
    NO_DATA_EXIT,
    TOOL_MISSING_EXIT,
    AwsFailureError,
    NoDataError,
    ToolMissingError,
    exit_status_help,
)
from cli.preflight import command as preflight
from cli.status import command as status
from gpu_insights_agent.exporter.cli import OneLineParser

#: The distribution the command line is installed from: its metadata holds the one version.
DISTRIBUTION = "eks-gpu-insights"


def version() -> str:
    """The installed distribution's version (pyproject.toml's, through the package metadata)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return f"unknown ({DISTRIBUTION} is not installed: pip install -e .)"


@dataclass(frozen=True)
class Command:
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    #: Returns what the command prints; bad input raises ValueError (the project's input
    #: errors all derive from it), which becomes one line and exit status 2.
    run: Callable[[argparse.Namespace], str]
    #: The exit statuses the command can end with, beyond 0 and 2 (cli/failures.py).
    statuses: tuple[int, ...] = ()
    #: What exit status 0 means for it.
    done: str = "done"
    #: What exit status 1 means for it, where ``statuses`` holds 1.
    failed: str = ""


COMMANDS: dict[str, Command] = {
    "demo": Command(
        "synthesize the app and run it end to end against moto (no AWS account)",
        demo.add_arguments,
        demo.run,
        (TOOL_MISSING_EXIT,),
    ),
    "agent-config": Command(
        "print the CloudWatch agent configuration for EC2 GPU nodes",
        node_config.add_agent_config_arguments,
        node_config.agent_config,
    ),
    "manifest": Command(
        "print the GPU exporter's namespace, service account and DaemonSet",
        node_config.add_manifest_arguments,
        node_config.manifest,
    ),
    "cost-estimate": Command(
        "what the whole deployment costs a month, line by line",
        cost.add_arguments,
        cost.run,
    ),
    "backtest": Command(
        "replay metric history through the alarm definitions the app deploys",
        backtest.add_arguments,
        backtest.run,
        (1, TOOL_MISSING_EXIT),
        failed=f"with --cloudwatch: {AWS_FAILED}",
    ),
    "analyze": Command(
        "run an analyzer now, read-only, and print its findings",
        analyze.add_arguments,
        analyze.run,
        (1, NO_DATA_EXIT, TOOL_MISSING_EXIT),
        "the findings were printed (none is a finding too)",
        f"{AWS_FAILED}, or the run read nothing (its first read failed)",
    ),
    "preflight": Command(
        "read-only checks of the account and cluster before cdk deploy",
        preflight.add_arguments,
        preflight.run,
        (1,),
        "every check passed (warnings may be printed)",
        f"a check failed (the report is still printed), or {AWS_FAILED}",
    ),
    "explain-failure": Command(
        "name the cause of a failed job from its log, cite the lines, say what to do",
        explain_failure.add_arguments,
        explain_failure.run,
        (1,),
        "a cause was named",
        "no cause was found in the log (the report is still printed); it calls no AWS API",
    ),
    "status": Command(
        "read-only checks, after cdk deploy, that GPU Insights is working",
        status.add_arguments,
        status.run,
        (1,),
        "every check passed (warnings may be printed)",
        f"a check failed (the report is still printed), or {AWS_FAILED}",
    ),
}


class UsageError(Exception):
    """A usage error argparse found (an unknown option, a missing one, a word where a number
    goes): ``main`` says it in one line, as JSON too with ``--json``, and exits 2."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog


class _Parser(OneLineParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(self.prog, message)


def _add_epilog(parser: argparse.ArgumentParser, text: str) -> None:
    """``text`` after the parser's own epilog, and after each of its subcommands' (analyze's
    targets), so every ``--help`` lists it."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = f"{parser.epilog}\n\n{text}" if parser.epilog else text
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _add_epilog(sub, text)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gpu-insights",
        description="CloudWatch insight into GPU training on Amazon EKS.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Each command's --help lists its exit statuses: 0 done, 1 as the command says "
        "(AWS failed, a check failed, no cause found), 2 bad input, 3 nothing of the cluster "
        "to analyze, 4 a program it runs is not installed.",
    )
    parser.add_argument("--version", action="version", version=f"gpu-insights {version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        sub = commands.add_parser(name, help=command.help)
        command.add_arguments(sub)
        _add_epilog(sub, exit_status_help(name, command.statuses, command.done, command.failed))
    return parser


def _aws_errors() -> tuple[type[Exception], ...]:
    """botocore's errors (NoRegionError, ProfileNotFound, NoCredentialsError,
    EndpointConnectionError are all BotoCoreError), when botocore is installed."""
    try:
        from botocore.exceptions import BotoCoreError, ClientError
    except ModuleNotFoundError:  # the core install (the training emitter) has no botocore
        return (AwsFailureError,)
    return (AwsFailureError, BotoCoreError, ClientError)


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _parser().parse_args(words)
    except UsageError as err:
        _usage_error(err, words)
    try:
        output = COMMANDS[args.command].run(args)
    except ValueError as err:
        return _fail(args, err, 2)
    except _aws_errors() as err:  # one line, never a traceback
        return _fail(args, err, 1)
    except NoDataError as err:  # the cluster has nothing to analyze: not a clean bill
        return _fail(args, err, NO_DATA_EXIT)
    except ToolMissingError as err:  # Prometheus, for a --history replay
        return _fail(args, err, TOOL_MISSING_EXIT)
    except (preflight.ChecksFailedError, explain_failure.NoCauseFoundError) as failed:
        return _emit(failed.output, 1)  # the report stands; status 1
    return _emit(output, 0)


def _usage_error(error: UsageError, words: list[str]) -> NoReturn:
    """One line naming the command and where its help is; with ``--json``, the same as a JSON
    object on stdout. Exit status 2, as argparse's own."""
    command = error.prog.removeprefix("gpu-insights").strip()
    if not command:  # the root parser: an unknown option after a known command
        command = next((word for word in words if word in COMMANDS), "")
    prog = f"gpu-insights {command}".strip()
    message = " ".join(str(error).split())
    print(f"{prog}: {message} (see {prog} --help)", file=sys.stderr)
    if "--json" in words:
        _emit(json.dumps({"command": command, "error": message, "exit_status": 2}), 2)
    raise SystemExit(2)


def _fail(args: argparse.Namespace, error: Exception, status: int) -> int:
    """One line on stderr in the project's words; with ``--json``, a JSON object on stdout
    too (``error``, ``exit_status``), so a script that reads JSON reads every outcome."""
    message = " ".join(str(error).split())  # one line, whatever the error held
    print(f"gpu-insights {args.command}: {message}", file=sys.stderr)
    if getattr(args, "json", False):
        command = " ".join(filter(None, (args.command, getattr(args, "target", None))))
        document = {"command": command, "error": message, "exit_status": status}
        return _emit(json.dumps(document), status)
    return status


def _emit(output: str, status: int) -> int:
    """Prints the output; a reader that went away (``| head``, quitting ``less``) ends the
    command quietly, as Python's signal documentation advises for a closed pipe, with the
    shell's status for it."""
    try:
        print(output)
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's own flush at exit is quiet
        return 141
    return status


if __name__ == "__main__":
    sys.exit(main())
