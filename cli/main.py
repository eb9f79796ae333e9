"""``gpu-insights``: entry point and argument parsing; each command lives in its own module."""

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from agent.cloudwatch_agent_config import (
    DEFAULT_GPU_MEASUREMENTS,
    AgentConfigError,
    gpu_node_agent_config,
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "agent-config":
        try:
            config = gpu_node_agent_config(
                interval_seconds=args.interval,
                measurements=args.measurements or DEFAULT_GPU_MEASUREMENTS,
            )
        except AgentConfigError as err:
            print(f"gpu-insights agent-config: {err}", file=sys.stderr)
            return 2
        print(json.dumps(config, indent=2, sort_keys=True))
        return 0
    if args.command == "demo":
        try:
            from cli.demo import run_demo  # imports the CDK and moto, which takes seconds
        except ModuleNotFoundError as err:
            print(
                f"gpu-insights demo needs {err.name}: pip install 'eks-gpu-insights[demo]'",
                file=sys.stderr,
            )
            return 2

        print(run_demo(out_dir=args.out, cdk_out=args.cdk_out).summary())
        return 0
    raise AssertionError(f"unhandled command {args.command}")


if __name__ == "__main__":
    sys.exit(main())
