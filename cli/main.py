"""``gpu-insights``: argument parsing, and one function per command that returns its output."""

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from importlib import metadata

from cdk.alarms.sizing import shards_for
from cdk.node_config.cloudwatch_agent_config import DEFAULT_GPU_MEASUREMENTS, gpu_node_agent_config
from cdk.node_config.manifest import (
    ManifestError,
    exporter_manifests,
    image_problem,
)
from cdk.settings import DEFAULT_FLEET_GPUS
from cli.analyze import add_arguments as add_analyze_arguments
from cli.analyze import run as run_analyze
from cli.backtest.cloudwatch_history import HistoryFetchError
from cli.backtest.command import add_arguments as add_backtest_arguments
from cli.backtest.command import run as run_backtest
from cli.checkout import use_checkout
from cli.cost.command import add_arguments as add_cost_arguments
from cli.cost.command import run as run_cost_estimate
from cli.demo.folders import check_folder, make_folder
from cli.explain_failure import NoCauseFoundError
from cli.explain_failure import add_arguments as add_explain_failure_arguments
from cli.explain_failure import run as run_explain_failure
from cli.failures import NO_DATA_EXIT, AwsFailureError, NoDataError
from cli.preflight.command import ChecksFailedError
from cli.preflight.command import add_arguments as add_preflight_arguments
from cli.preflight.command import run as run_preflight
from cli.status.command import add_arguments as add_status_arguments
from cli.status.command import run as run_status
from gpu_insights_agent.contract.metrics import ExporterSink
from gpu_insights_agent.exporter.cli import OneLineParser

#: The distribution the command line is installed from: its metadata holds the one version.
DISTRIBUTION = "eks-gpu-insights"


def version() -> str:
    """The installed distribution's version (pyproject.toml's, through the package metadata)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return f"unknown ({DISTRIBUTION} is not installed: pip install -e .)"


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="gpu-insights",
        description="CloudWatch insight into GPU training on Amazon EKS.",
    )
    parser.add_argument("--version", action="version", version=f"gpu-insights {version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo", help="synthesize the app and run it end to end against moto (no AWS account)"
    )
    demo.add_argument(
        "--out",
        default="out",
        help="where results go: a new or empty folder, or a previous demo's (out/)",
    )
    demo.add_argument("--cdk-out", default="cdk.out", help="where templates go (cdk.out/)")
    demo.add_argument(
        "--mode",
        choices=("classic", "otel"),
        default="classic",
        help="the Container Insights mode the demo deploys (default classic); otel serves the "
        "weeks' DCGM series from a local Prometheus (Debian's prometheus package) and compares "
        "the findings and report with a classic run's",
    )

    agent = commands.add_parser(
        "agent-config", help="print the CloudWatch agent configuration for EC2 GPU nodes"
    )
    agent.add_argument(
        "--interval", type=int, default=60, help="collection interval in seconds (60)"
    )
    agent.add_argument(
        "--measurement",
        action="append",
        dest="measurements",
        metavar="NAME",
        help=f"nvidia_gpu measurement, repeatable (default: {', '.join(DEFAULT_GPU_MEASUREMENTS)})",
    )
    manifest = commands.add_parser(
        "manifest", help="print the GPU exporter's namespace, service account and DaemonSet"
    )
    manifest.add_argument(
        "--image", required=True, help="the exporter image (stack output ImageUri)"
    )
    manifest.add_argument("--cluster-name", required=True)
    manifest.add_argument("--interval", type=int, default=10, help="seconds between cycles (10)")
    manifest.add_argument(
        "--node-label",
        action="append",
        dest="node_labels",
        metavar="KEY=VALUE",
        help="a label that marks GPU nodes too, repeatable (every NVIDIA GPU node is selected "
        "already: by the GPU Operator's, GPU feature discovery's, NFD's or Karpenter's labels, "
        "or its instance type)",
    )
    manifest.add_argument(
        "--taint-key", action="append", dest="taint_keys", metavar="KEY",
        help="a GPU taint to tolerate, repeatable (default: nvidia.com/gpu)",
    )  # fmt: skip
    manifest.add_argument(
        "--pod-attribution",
        action="store_true",
        help="share the host's PID namespace to name the pod using each GPU",
    )
    manifest.add_argument(
        "--fleet-gpus",
        type=int,
        default=DEFAULT_FLEET_GPUS,
        help="the fleet_gpus setting the alarms are sized for (the exporter's alarm shards)",
    )
    manifest.add_argument(
        "--sink",
        choices=[str(s) for s in ExporterSink],
        default=str(ExporterSink.EMF),
        help="the exporter_sink setting: emf (GpuInsights metrics) or otlp (the add-on agent's "
        "OTLP endpoint, OTel mode)",
    )

    cost = commands.add_parser(
        "cost-estimate", help="what the whole deployment costs a month, line by line"
    )
    add_cost_arguments(cost)
    backtest = commands.add_parser(
        "backtest", help="replay metric history through the alarm definitions the app deploys"
    )
    add_backtest_arguments(backtest)

    analyze = commands.add_parser(
        "analyze", help="run an analyzer now, read-only, and print its findings"
    )
    add_analyze_arguments(analyze)

    preflight = commands.add_parser(
        "preflight", help="read-only checks of the account and cluster before cdk deploy"
    )
    add_preflight_arguments(preflight)

    explain = commands.add_parser(
        "explain-failure",
        help="name the cause of a failed job from its log, cite the lines, say what to do",
    )
    add_explain_failure_arguments(explain)
    status = commands.add_parser(
        "status", help="read-only checks, after cdk deploy, that GPU Insights is working"
    )
    add_status_arguments(status)
    return parser


def _backtest(args: argparse.Namespace) -> str:
    try:
        return run_backtest(args)
    except HistoryFetchError as err:  # an AWS error: say it in one line, exit 1
        raise AwsFailureError(str(err)) from err


def _agent_config(args: argparse.Namespace) -> str:
    config = gpu_node_agent_config(
        interval_seconds=args.interval,
        measurements=args.measurements or DEFAULT_GPU_MEASUREMENTS,
    )
    return json.dumps(config, indent=2, sort_keys=True)


def _manifest(args: argparse.Namespace) -> str:
    problem = image_problem(args.image)
    if problem:
        raise ManifestError(problem)
    if not 1 <= args.fleet_gpus <= MAX_FLEET_GPUS:
        raise ValueError(f"--fleet-gpus {args.fleet_gpus} must be from 1 to {MAX_FLEET_GPUS:,}")
    objects = exporter_manifests(
        image=args.image,
        cluster_name=args.cluster_name,
        interval_s=args.interval,
        gpu_node_labels=args.node_labels or (),
        gpu_taint_keys=args.taint_keys or ("nvidia.com/gpu",),
        pod_attribution=args.pod_attribution,
        alarm_shards=shards_for(args.fleet_gpus),
        sink=ExporterSink(args.sink),
    )
    # A List is what `kubectl apply -f -` takes in one go; JSON is valid YAML.
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2)


#: The largest fleet the estimate and the alarm sizing take (50 times the 10,000-GPU design
#: point): past it, one deployment's alarms would not fit any raised quota either.
MAX_FLEET_GPUS = 500_000


def _demo(args: argparse.Namespace) -> str:
    folders = {
        option: check_folder(option, raw)
        for option, raw in (("--out", args.out), ("--cdk-out", args.cdk_out))
    }
    use_checkout()  # the demo reads the clone's cdk.json and failure-log corpus
    if args.mode == "otel":
        from cli.demo.promql import PrometheusMissingError, binaries

        try:
            binaries()
        except PrometheusMissingError as err:
            raise ValueError(f"demo --mode otel {err}") from err
    for option, path in folders.items():
        make_folder(option, path)
    try:
        from cli.demo.command import run_demo  # imports the CDK and moto, which takes seconds
    except ModuleNotFoundError as err:
        if err.name != "moto":
            raise
        raise ValueError("needs moto: pip install 'eks-gpu-insights[demo]'") from err
    # The summary reports the simulated XIDs and the lost GPU; their log lines would repeat it.
    logging.basicConfig(level=logging.CRITICAL)
    if args.mode == "classic":
        return run_demo(out_dir=folders["--out"], cdk_out=folders["--cdk-out"]).summary()
    from cli.demo.both_modes import run_both

    return run_both(out_dir=folders["--out"], cdk_out=folders["--cdk-out"])


#: Each command returns what it prints; bad input raises ValueError (the project's input
#: errors all derive from it), which becomes one line on stderr and exit status 2.
_COMMANDS: dict[str, Callable[[argparse.Namespace], str]] = {
    "demo": _demo,
    "agent-config": _agent_config,
    "manifest": _manifest,
    "cost-estimate": run_cost_estimate,
    "backtest": _backtest,
    "analyze": run_analyze,
    "preflight": run_preflight,
    "explain-failure": run_explain_failure,
    "status": run_status,
}


def _aws_errors() -> tuple[type[Exception], ...]:
    """botocore's errors (NoRegionError, ProfileNotFound, NoCredentialsError,
    EndpointConnectionError are all BotoCoreError), when botocore is installed."""
    try:
        from botocore.exceptions import BotoCoreError, ClientError
    except ModuleNotFoundError:  # the core install (the training emitter) has no botocore
        return (AwsFailureError,)
    return (AwsFailureError, BotoCoreError, ClientError)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        output = _COMMANDS[args.command](args)
    except ValueError as err:
        print(f"gpu-insights {args.command}: {err}", file=sys.stderr)
        return 2
    except _aws_errors() as err:  # one line, never a traceback
        print(f"gpu-insights {args.command}: {err}", file=sys.stderr)
        return 1
    except NoDataError as err:  # the cluster has nothing to analyze: not a clean bill
        print(f"gpu-insights {args.command}: {err}", file=sys.stderr)
        return NO_DATA_EXIT
    except (ChecksFailedError, NoCauseFoundError) as failed:  # the report stands; status 1
        return _emit(failed.output, 1)
    return _emit(output, 0)


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
