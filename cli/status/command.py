"""``gpu-insights status``: read-only, after ``cdk deploy``: is it working? One line per check
with its verdict and fix, or ``--json``; exit status 0 when every check is OK, 1 when one
fails (``ChecksFailedError``), 2 for bad input, as ``preflight``."""

import argparse
import time

from cli.preflight.command import report
from cli.settings_args import add_settings_arguments, settings_and_session
from cli.status.aws import Clients, gather
from cli.status.checks import WINDOW_S, run_checks

DESCRIPTION = f"""\
Read-only checks, after cdk deploy, that the cluster the settings name is watched:

  stacks                  the three stacks are deployed
  observability-addon     amazon-cloudwatch-observability is ACTIVE
  container-insights-gpu  its GPU metrics arrived in the last {WINDOW_S // 60} minutes, in the
                          container_insights_mode the settings name (the add-on must run it):
                          classic, node_gpu_* (ListMetrics and GetMetricData); otel, every
                          GPU node's DCGM series, by PromQL (the nodes without, named)
  exporter-nodes          every running NVIDIA GPU node sent the exporter's series in the last
                          {WINDOW_S // 60} minutes (the nodes that did not, named): GpuInsights
                          with exporter_sink=emf, PromQL with otlp (OTel mode's default)
  silence-coverage        every running NVIDIA GPU instance of the cluster is one the silence
                          check covers; one line for each other, with why and the tag to add
                          (with otlp, gpu-silent is a PromQL alarm and tags decide nothing)
  node-repair:<group>     each GPU node group's auto repair, Auto Mode's and the node
                          monitoring agent's add-on, as preflight says them
  alarms                  every alarm exists; those without data or in ALARM, named
  serving-series          otel with serving alarms: every model whose series an alarm reads
                          do not arrive (its alarm silent), with its server and what to enable
  topic:<purpose>         critical, warning, report: a confirmed subscriber (those awaiting
                          confirmation, named)
  analyzer:<name>         the storage and training analyzers' newest findings, and
  weekly-report           the newest weekly report, in the report bucket
  lemon-node:<node>       each lemon node that report lists (its failed runs, fail-slows
                          and XIDs per GPU-hour over 30 days against the fleet's), with
                          what to do;
                          lemon-nodes ok where it lists none"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_settings_arguments(parser, aws=True)
    parser.add_argument("--json", action="store_true", help="the checks as a JSON document")


def run(args: argparse.Namespace) -> str:

    from lambdas.shared.aws_clients import INTERACTIVE, client
    from lambdas.shared.promql import promql_for

    settings, session, region, line = settings_and_session(args)

    def make(service: str) -> object:
        return client(service, session=session, config=INTERACTIVE)

    cloudwatch = make("cloudwatch")
    clients = Clients(
        eks_addons=make("eks"),
        cloudformation=make("cloudformation"),
        cloudwatch=cloudwatch,
        ec2=make("ec2"),
        sns=make("sns"),
        s3=make("s3"),
        promql=promql_for(cloudwatch),
        eks=make("eks"),
    )
    checks = run_checks(gather(settings, clients, now=time.time()))
    return report(checks, cluster=settings.cluster_name, region=region, args=args, line=line)
