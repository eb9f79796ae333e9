"""``gpu-insights manifest`` and ``agent-config``: what a GPU node runs, printed from the same
settings and the same builders as the deployed stack (cdk/node_config/), for a cluster whose
manifests are applied by hand (no ``kubectl_role_arn``) or whose EC2 nodes run the agent."""

import argparse
import json

from cdk.node_config.cloudwatch_agent_config import DEFAULT_GPU_MEASUREMENTS, gpu_node_agent_config
from cdk.node_config.manifest import ManifestError, exporter_manifests, image_problem
from cli.settings_args import add_settings_arguments, command_settings, placed_settings, said


def add_manifest_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--image",
        required=True,
        help="the exporter image: the stack's ImageUri output (no setting holds it)",
    )
    add_settings_arguments(parser, aws=False)
    parser.epilog = (
        "The DaemonSet follows the deployment's settings as cdk deploy reads them (cdk.json, "
        "then each -c): cluster_name, exporter_interval_seconds, exporter_sink, fleet_gpus (the "
        "alarm shards), gpu_node_labels, tolerate_all_taints and gpu_taint_keys, "
        "exporter_pod_attribution."
    )


def manifest(args: argparse.Namespace) -> str:
    problem = image_problem(args.image)
    if problem:
        raise ManifestError(problem)
    placed = placed_settings(args)
    settings = placed.settings
    objects = exporter_manifests(
        image=args.image,
        cluster_name=settings.cluster_name,
        interval_s=settings.exporter_interval_seconds,
        gpu_node_labels=settings.gpu_node_labels,
        gpu_taint_keys=settings.gpu_taint_keys,
        tolerate_all_taints=settings.tolerate_all_taints,
        pod_attribution=settings.exporter_pod_attribution,
        alarm_shards=settings.alarm_shards,
        sink=settings.exporter_sink,
    )
    # A List is what `kubectl apply -f -` takes in one go; JSON is valid YAML.
    listed = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2)
    return said(args, placed.line(), listed, for_programs=True)


def add_agent_config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--interval",
        type=int,
        default=None,
        help="collection interval in seconds (default: the agent_interval_seconds setting, 60)",
    )
    parser.add_argument(
        "--measurement",
        action="append",
        dest="measurements",
        metavar="NAME",
        help=f"nvidia_gpu measurement, repeatable (default: {', '.join(DEFAULT_GPU_MEASUREMENTS)})",
    )
    add_settings_arguments(parser, aws=False, cluster=False)


def agent_config(args: argparse.Namespace) -> str:
    # The agent's configuration names no cluster: any name serves the settings' checks.
    settings = command_settings(args, defaults={"cluster_name": "any"})
    config = gpu_node_agent_config(
        interval_seconds=settings.agent_interval_seconds
        if args.interval is None
        else args.interval,
        measurements=args.measurements or DEFAULT_GPU_MEASUREMENTS,
    )
    return json.dumps(config, indent=2, sort_keys=True)
