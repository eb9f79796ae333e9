"""``gpu-insights cost-estimate``'s options: the fleet, the settings (cdk.json and ``-c``, as
`cdk deploy` reads them) and the volumes no setting gives; refused by the rules the deployment
itself is held to."""

import argparse
import json

from cdk.alarms.catalog import alarm_sizing
from cdk.settings import MAX_FLEET_GPUS
from cli.cost.estimate import MAX_GPUS_PER_NODE, Deployment, as_json, estimate, table
from cli.settings_args import add_settings_arguments, command_settings, placed_settings, said
from gpu_insights_agent.contract.metrics import ExporterSink
from lambdas.shared.promql import MAX_SERIES

#: The most container logs a day the estimate takes, GB: 100 TB a month.
MAX_LOG_GB_PER_DAY = 3_000.0
#: The most models a replica is priced as serving: a bound on what the estimate takes, not a
#: server's limit (none documents one), so that a slip of the keyboard (1e9) is refused
#: rather than priced at hundreds of millions of dollars a month.
MAX_SERVING_MODELS = 1_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, required=True, help="GPU nodes")
    parser.add_argument("--gpus-per-node", type=int, required=True, help="GPUs in each node")
    parser.add_argument(
        "--interval",
        type=float,
        default=None,
        help="exporter interval, whole seconds (the exporter_interval_seconds setting)",
    )
    parser.add_argument(
        "--fleet-gpus",
        type=int,
        help="GPUs the alarms are sized for (default: the fleet_gpus setting, else nodes x GPUs)",
    )
    parser.add_argument(
        "--container-log-gb-per-day",
        type=float,
        default=1.0,
        help="container logs the add-on's Fluent Bit sends a day, GB (1)",
    )
    parser.add_argument(
        "--volumes",
        type=int,
        default=None,
        help="EBS volumes the storage analyzer reads; 0 prices none (default: the "
        "storage_fleet_volumes setting, else one a node)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="training jobs the training analyzer reads; 0 prices none (default: the "
        "training_fleet_jobs setting, else one a node)",
    )
    parser.add_argument(
        "--serving-replicas",
        type=int,
        default=0,
        help="inference server replicas whose series OTel mode sends (0: none priced)",
    )
    parser.add_argument(
        "--serving-models",
        type=int,
        default=1,
        help="models each inference server replica serves (1)",
    )
    add_settings_arguments(parser, aws=False, cluster=False)
    parser.add_argument("--json", action="store_true", help="the line items as JSON")


def _items(option: int | None, setting: int, nodes: int) -> int:
    """Volumes or jobs priced: the option where given (0 prices none), else the fleet
    setting where set, else one a node."""
    if option is not None:
        return option
    return setting or nodes


def _whole(value: float | None) -> float | int | None:
    """A whole number of seconds as the setting takes it; anything else for it to refuse."""
    return int(value) if value is not None and value.is_integer() else value


def run(args: argparse.Namespace) -> str:
    if not 1 <= args.gpus_per_node <= MAX_GPUS_PER_NODE:
        raise ValueError(
            f"--gpus-per-node {args.gpus_per_node} must be 1 to {MAX_GPUS_PER_NODE} "
            "(no EC2 instance type has more)"
        )
    if args.nodes < 1:
        raise ValueError(f"--nodes {args.nodes} must be at least 1")
    if not 0 <= args.container_log_gb_per_day <= MAX_LOG_GB_PER_DAY:
        raise ValueError(
            f"--container-log-gb-per-day {args.container_log_gb_per_day} must be a number "
            f"from 0 to {MAX_LOG_GB_PER_DAY:,.0f}"
        )
    for option, value in (("--volumes", args.volumes), ("--jobs", args.jobs)):
        if value is not None and value < 0:
            raise ValueError(f"{option} {value} must be 0 or more")
    gpus = args.nodes * args.gpus_per_node
    if gpus > MAX_FLEET_GPUS:
        raise ValueError(
            f"--nodes {args.nodes} x --gpus-per-node {args.gpus_per_node} is {gpus:,} GPUs: "
            f"at most {MAX_FLEET_GPUS:,} (the fleet_gpus setting's limit)"
        )
    if not 0 <= args.serving_replicas <= gpus:
        # A replica holds a GPU at least (the serving alarms' bound, cli/cost/estimate.py).
        raise ValueError(
            f"--serving-replicas {args.serving_replicas} must be 0 to the {gpus:,} GPUs "
            "priced: a replica holds a GPU at least"
        )
    if not 1 <= args.serving_models <= MAX_SERVING_MODELS:
        raise ValueError(
            f"--serving-models {args.serving_models} must be 1 to {MAX_SERVING_MODELS:,}"
        )
    # The options go through the settings' own rules: the fleet and interval the deployment
    # would refuse are refused here, in the same words. What a deployment costs does not
    # depend on its cluster's name. The alarms are sized for --fleet-gpus, else the
    # deployment's fleet_gpus setting (cdk.json, -c), else the GPUs priced.
    given = command_settings(args, defaults={"cluster_name": "any", "fleet_gpus": gpus})
    fleet = args.fleet_gpus if args.fleet_gpus is not None else given.fleet_gpus
    if fleet < gpus:
        # Alarms sized for fewer GPUs than run would each read over 500 series: CloudWatch
        # evaluates them on partial data (alarm-limits.html).
        where = "--fleet-gpus " if args.fleet_gpus is not None else "fleet_gpus="
        raise ValueError(
            f"{where}{fleet} is fewer than the {gpus:,} GPUs priced "
            f"({args.nodes} nodes x {args.gpus_per_node}): the alarms would be sized for "
            "fewer GPUs than run"
        )
    placed = placed_settings(
        args,
        {
            "fleet_gpus": fleet,
            "exporter_interval_seconds": _whole(args.interval),
            "storage_fleet_volumes": args.volumes,
            "training_fleet_jobs": args.jobs,
        },
        defaults={"cluster_name": "any"},
    )
    settings = placed.settings
    jobs = _items(args.jobs, settings.training_fleet_jobs, args.nodes)
    if settings.exporter_sink is ExporterSink.OTLP and jobs and gpus // jobs >= MAX_SERIES:
        # The training analyzer reads a job's ranks (one a GPU) in one PromQL answer
        # (lambdas/training_analyzer/promql_jobs.py rank_stats): a job of more is not read.
        raise ValueError(
            f"--jobs {jobs:,} shares the {gpus:,} GPUs priced as {gpus // jobs:,} ranks a job: "
            f"with exporter_sink=otlp a job's ranks are read in one PromQL answer of under "
            f"{MAX_SERIES} series; give --jobs {gpus // MAX_SERIES + 1:,} or more"
        )
    deployment = Deployment(
        settings=settings,
        nodes=args.nodes,
        gpus_per_node=args.gpus_per_node,
        container_log_gb_per_day=args.container_log_gb_per_day,
        volumes=_items(args.volumes, settings.storage_fleet_volumes, args.nodes),
        jobs=jobs,
        serving_replicas=args.serving_replicas,
        serving_models=args.serving_models,
    )
    items = estimate(deployment)
    sizing = alarm_sizing(settings.alarm_settings(), settings.fleet_gpus)
    line = placed.line(sizing)
    if args.json:
        return said(args, line, json.dumps(as_json(deployment, items), indent=2))
    return said(args, line, f"{table(deployment, items)}\nAlarms: {sizing.line()}")
