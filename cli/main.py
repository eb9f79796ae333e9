"""``gpu-insights``: argument parsing, and one function per command that returns its output."""

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from alarms.catalog import AlarmSettings, alarm_sizing
from alarms.cloudwatch_history import HistoryFetchError
from alarms.sizing import shards_for
from cdk.settings import DEFAULT_FLEET_GPUS
from cli.analyze import add_arguments as add_analyze_arguments
from cli.analyze import run as run_analyze
from cli.backtest import add_arguments as add_backtest_arguments
from cli.backtest import run as run_backtest
from cli.checkout import use_checkout
from cli.failures import AwsFailureError
from cli.preflight import ChecksFailedError
from cli.preflight import add_arguments as add_preflight_arguments
from cli.preflight import run as run_preflight
from cli.status import add_arguments as add_status_arguments
from cli.status import run as run_status
from deploy_config.cloudwatch_agent_config import DEFAULT_GPU_MEASUREMENTS, gpu_node_agent_config
from deploy_config.cost import ENHANCED_CI_PER_MILLION_OBSERVATIONS, estimate
from deploy_config.manifest import (
    ManifestError,
    exporter_manifests,
    image_problem,
)
from exporter.cli import OneLineParser


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="gpu-insights",
        description="CloudWatch insight into GPU training on Amazon EKS.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo", help="synthesize the app and run it end to end against moto (no AWS account)"
    )
    demo.add_argument("--out", type=Path, default=Path("out"), help="where results go (out/)")
    demo.add_argument(
        "--cdk-out", type=Path, default=Path("cdk.out"), help="where templates go (cdk.out/)"
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

    cost = commands.add_parser(
        "cost-estimate", help="monthly CloudWatch cost of the exporter for a GPU fleet"
    )
    cost.add_argument("--nodes", type=int, required=True)
    cost.add_argument("--gpus-per-node", type=int, required=True)
    cost.add_argument("--interval", type=float, default=10.0, help="exporter interval, s (10)")
    cost.add_argument(
        "--fleet-gpus",
        type=int,
        help="GPUs the alarms are sized for (the fleet_gpus setting; default: nodes x GPUs)",
    )
    cost.add_argument(
        "--ci-price-per-million",
        type=float,
        default=ENHANCED_CI_PER_MILLION_OBSERVATIONS,
        help="enhanced Container Insights price per million observations",
    )
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
    )
    # A List is what `kubectl apply -f -` takes in one go; JSON is valid YAML.
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2)


#: The largest fleet the estimate and the alarm sizing take (50 times the 10,000-GPU design
#: point): past it, one deployment's alarms would not fit any raised quota either.
MAX_FLEET_GPUS = 500_000


def _cost_estimate(args: argparse.Namespace) -> str:
    for option, value in (
        ("--nodes", args.nodes),
        ("--gpus-per-node", args.gpus_per_node),
        ("--fleet-gpus", args.fleet_gpus),
    ):
        if value is not None and not 1 <= value <= MAX_FLEET_GPUS:
            raise ValueError(f"{option} {value} must be from 1 to {MAX_FLEET_GPUS:,}")
    if args.nodes * args.gpus_per_node > MAX_FLEET_GPUS:
        raise ValueError(
            f"--nodes {args.nodes} x --gpus-per-node {args.gpus_per_node} is over "
            f"{MAX_FLEET_GPUS:,} GPUs"
        )
    table = estimate(
        nodes=args.nodes,
        gpus_per_node=args.gpus_per_node,
        interval_s=args.interval,
        ci_price_per_million=args.ci_price_per_million,
    ).table()
    fleet = args.fleet_gpus if args.fleet_gpus is not None else args.nodes * args.gpus_per_node
    # How many alarms a fleet needs does not depend on the cluster's name.
    sizing = alarm_sizing(AlarmSettings(cluster_name="any"), fleet)
    return f"{table}\nAlarms: {sizing.line()}"


def _check_folder(option: str, path: Path) -> None:
    """Refuse, before the synth's minute of work, a folder that cannot be made: the path or the
    nearest of its parents that exists is a file (mkdir would fail there only at the end)."""
    existing = path
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        where = "" if existing == path else f": {existing}"
        raise ValueError(f"{option} {path}{where} is a file, not a folder")


def _demo(args: argparse.Namespace) -> str:
    for option, path in (("--out", args.out), ("--cdk-out", args.cdk_out)):
        _check_folder(option, path)
    use_checkout()  # the demo's cluster is the realistic model in the clone's tests/
    try:
        from cli.demo import run_demo  # imports the CDK and moto, which takes seconds
    except ModuleNotFoundError as err:
        if err.name != "moto":
            raise
        raise ValueError("needs moto: pip install 'eks-gpu-insights[demo]'") from err
    # The summary reports the simulated XIDs and the lost GPU; their log lines would repeat it.
    logging.basicConfig(level=logging.CRITICAL)
    return run_demo(out_dir=args.out, cdk_out=args.cdk_out).summary()


#: Each command returns what it prints; bad input raises ValueError (the project's input
#: errors all derive from it), which becomes one line on stderr and exit status 2.
_COMMANDS: dict[str, Callable[[argparse.Namespace], str]] = {
    "demo": _demo,
    "agent-config": _agent_config,
    "manifest": _manifest,
    "cost-estimate": _cost_estimate,
    "backtest": _backtest,
    "analyze": run_analyze,
    "preflight": run_preflight,
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
    except ChecksFailedError as failed:  # the report stands; the status says a check failed
        print(failed.output)
        return 1
    print(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
