"""``gpu-insights demo``'s options and start: the folders and, for OTel mode, Prometheus are
checked before the run imports the CDK and moto (seconds), so bad input is one line at once."""

import argparse
import logging

from cli.checkout import use_checkout
from cli.demo.folders import check_folder, make_folder
from cli.failures import ToolMissingError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        default="out",
        help="where results go: a new or empty folder, or a previous demo's (out/)",
    )
    parser.add_argument("--cdk-out", default="cdk.out", help="where templates go (cdk.out/)")
    parser.add_argument(
        "--mode",
        choices=("classic", "otel"),
        default="classic",
        help="the Container Insights mode the demo deploys (default classic); otel serves the "
        "weeks' DCGM series from a local Prometheus (Debian's prometheus package) and compares "
        "the findings and report with a classic run's",
    )


def run(args: argparse.Namespace) -> str:
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
            # A tool to install, not bad input: the status --history replays give it too.
            raise ToolMissingError(f"demo --mode otel {err}") from err
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
