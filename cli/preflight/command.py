"""``gpu-insights preflight``: read-only checks of the account and cluster before ``cdk deploy``.

One line per check with its verdict and fix, or ``--json``. Exit status 0 when nothing fails,
1 when a check fails (``ChecksFailedError``), 2 for bad input, as for every command.
"""

import argparse
import json
from collections import Counter
from collections.abc import Sequence

from cli.preflight.aws import Clients, gather
from cli.preflight.checks import Check, Verdict, plan_for, run_checks
from cli.settings_args import add_settings_arguments, said, settings_and_session


class ChecksFailedError(Exception):
    """A check failed; ``output`` is still printed, and the exit status is 1."""

    def __init__(self, output: str) -> None:
        super().__init__("a preflight check failed")
        self.output = output


DESCRIPTION = """\
Read-only checks of the account and cluster the settings name, before cdk deploy:

  cluster               the EKS cluster exists and is ACTIVE
  pod-identity-agent    the eks-pod-identity-agent add-on is ACTIVE (built into EKS Auto Mode)
  oidc-provider         with agent_credentials=irsa: an IAM OIDC provider for the cluster's issuer
  kubectl-version       with kubectl_role_arn: the cluster within one minor version of kubectl 1.33
  kubectl-endpoint      with kubectl_role_arn: the kubectl provider can reach the API endpoint (a
                        private one needs kubectl_vpc_id, kubectl_subnet_ids and
                        kubectl_security_group_id)
  observability-addon   amazon-cloudwatch-observability is not installed already (or, with
                        install_addon=false, is); with exporter_sink=otlp (the default in OTel
                        mode), the add-on installed or EKS's default for the cluster is 8.0.0
                        or later (the OTLP endpoint)
  serving-data-path     with serving alarms: each inference server's series have a path to
                        CloudWatch in the mode (OTel: vLLM by the add-on, Ray Serve from add-on
                        8.0.0, Triton and NIM by serving_metrics' receiver; Classic: all by
                        serving_metrics' scrape), else what to enable (warns)
  log-groups            whether the agent's log groups exist (the stacks adopt them)
  host-log-group        with xid_host_log_filter: Container Insights' host log group exists
  insights-alarm-quota  existing Metrics Insights alarms plus this deployment's fit the quota
  nodes:<group>         each GPU node group's OS and architecture suit the exporter
  nodes:auto-mode       EKS Auto Mode nodes, where the exporter sees no GPU
  node-repair:<group>   each GPU node group's auto repair (nodeRepairConfig), on or off (warns),
                        and after how long (AcceleratedHardwareReady 10 min, the others 30)
  node-repair:auto-mode EKS Auto Mode: auto repair always on
  node-repair:agent     the eks-node-monitoring-agent add-on, which sets AcceleratedHardwareReady
                        (without it, no GPU fault reaches auto repair or the OTel alarm; warns)
  exporter-nodes        every NVIDIA GPU node (running instances tagged for the cluster, node
                        groups' types) is one the exporter's DaemonSet selects, or why not
  silence-coverage      every running NVIDIA GPU instance of the cluster (by its tags, or as
                        Container Insights saw its node) is one the silence check covers; one
                        line for each other (EKS Auto Mode, arm64, untagged: the tag to add)"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_settings_arguments(parser, aws=True)
    parser.add_argument("--json", action="store_true", help="the checks as a JSON document")


def table(checks: Sequence[Check]) -> str:
    width = max(len(c.name) for c in checks)
    lines = []
    for c in checks:
        fix = f" -> fix: {c.fix}" if c.fix else ""
        lines.append(f"{c.verdict.upper():<4} {c.name:<{width}}  {c.detail}{fix}")
    counts = Counter(c.verdict for c in checks)
    lines.append(
        f"\n{counts[Verdict.OK]} ok, {counts[Verdict.WARN]} warn, {counts[Verdict.FAIL]} fail"
    )
    return "\n".join(lines)


def as_json(checks: Sequence[Check], *, cluster: str, region: str) -> str:
    document = {
        "cluster": cluster,
        "region": region,
        "failed": any(c.verdict is Verdict.FAIL for c in checks),
        "checks": [
            {"check": c.name, "verdict": str(c.verdict), "detail": c.detail, "fix": c.fix}
            for c in checks
        ],
    }
    return json.dumps(document, indent=2)


def report(
    checks: Sequence[Check], *, cluster: str, region: str, args: argparse.Namespace, line: str
) -> str:
    """What the command prints, after its first line (``said``); raises ChecksFailedError
    (carrying it) when a check fails."""
    output = said(
        args,
        line,
        as_json(checks, cluster=cluster, region=region) if args.json else table(checks),
    )
    if any(c.verdict is Verdict.FAIL for c in checks):
        raise ChecksFailedError(output)
    return output


def run(args: argparse.Namespace) -> str:

    from lambdas.shared.aws_clients import INTERACTIVE, client

    # The Region the deploy goes to decides the mode (OTel only where AWS offers it), as at
    # synth: an OTel mode there is refused in one line.
    settings, session, region, line = settings_and_session(args)
    eks = client("eks", session=session, config=INTERACTIVE)
    clients = Clients(
        eks=eks,
        eks_addons=eks,
        iam=client("iam", session=session, config=INTERACTIVE),
        logs=client("logs", session=session, config=INTERACTIVE),
        cloudwatch=client("cloudwatch", session=session, config=INTERACTIVE),
        ec2=client("ec2", session=session, config=INTERACTIVE),
    )
    plan = plan_for(settings)
    checks = run_checks(plan, gather(plan, clients, region=region))
    return report(checks, cluster=plan.cluster_name, region=region, args=args, line=line)
