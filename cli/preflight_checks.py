"""``gpu-insights preflight``: what a deployment needs of the account and cluster, checked on
plain data. Each check returns one verdict (ok / warn / fail) with what it found and the fix.

The AWS reads are in ``cli.preflight_aws``; nothing here calls AWS. Sources of the rules:

- kubectl "is supported within one minor version (older or newer) of kube-apiserver":
  https://kubernetes.io/releases/version-skew-policy/#kubectl
- "A default of 200 alarms using the Metrics Insights query per account per Region":
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-limits.html
- "You do not need to install the EKS Pod Identity Agent on EKS Auto Mode Clusters":
  https://docs.aws.amazon.com/eks/latest/userguide/pod-id-agent-setup.html
- Bottlerocket's ``settings.nvidia-container-runtime.visible-devices-envvar-when-unprivileged``
  ("Controls whether to honor NVIDIA_VISIBLE_DEVICES environment variable on unprivileged
  containers. Default: false"):
  https://bottlerocket.dev/en/os/1.54.x/api/settings/nvidia-container-runtime ; the DCGM
  exporter failing the same way there: https://github.com/bottlerocket-os/bottlerocket/issues/3992
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from alarms.catalog import gpu_alarms
from alarms.model import InsightsQuery
from alarms.sizing import INSIGHTS_ALARM_QUOTA
from cdk.settings import AgentCredentials, Settings
from contract.metrics import (
    container_insights_log_group_prefix,
    exporter_log_group,
    training_log_group,
)

POD_IDENTITY_ADDON: Final = "eks-pod-identity-agent"
OBSERVABILITY_ADDON: Final = "amazon-cloudwatch-observability"
#: CDK's kubectl provider runs the kubectl of ``aws-cdk.lambda-layer-kubectl-v33``
#: (cdk/constructs/gpu_exporter.py); a test holds the two equal.
KUBECTL_MINOR: Final = 33
#: kubectl works with an API server one minor version older or newer.
KUBECTL_SKEW: Final = 1
#: Architectures the exporter image asset is built for (cdk/constructs/gpu_exporter.py's
#: ``platform``); a test holds this equal to the synthesized asset.
EXPORTER_IMAGE_ARCHITECTURES: Final = frozenset({"amd64"})

_BOTTLEROCKET_SETTING: Final = (
    "settings.nvidia-container-runtime.visible-devices-envvar-when-unprivileged"
)


class Verdict(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"


@dataclass(frozen=True)
class Check:
    """One line of the preflight: ``name`` is a stable id, ``fix`` is empty when ok."""

    name: str
    verdict: Verdict
    detail: str
    fix: str = ""


@dataclass(frozen=True)
class Plan:
    """What the deployment would create or need, derived from its settings."""

    cluster_name: str
    credentials: AgentCredentials
    oidc_provider_arn: str | None
    install_addon: bool
    kubectl_used: bool
    exporter: bool
    #: Log groups the agent writes and the stacks make under these exact names, adopting a
    #: group that already exists (cdk/constructs/agent_log_group.py).
    fixed_log_groups: tuple[str, ...]
    #: A log group the stacks import by name (it must exist), or None.
    required_log_group: str | None
    #: The Metrics Insights alarms the deployment creates, by name.
    insights_alarms: tuple[str, ...]
    #: The fleet size the alarms are sized for, and the alarm shards that makes.
    fleet_gpus: int = 0
    alarm_shards: int = 1


def plan_for(settings: Settings) -> Plan:
    cluster = settings.cluster_name
    specs = gpu_alarms(settings.alarm_settings())
    return Plan(
        cluster_name=cluster,
        credentials=settings.agent_credentials,
        oidc_provider_arn=settings.oidc_provider_arn,
        install_addon=settings.install_addon,
        kubectl_used=settings.kubectl_role_arn is not None,
        exporter=settings.exporter_enabled,
        fixed_log_groups=(exporter_log_group(cluster), training_log_group(cluster)),
        required_log_group=(
            f"{container_insights_log_group_prefix(cluster)}/host"
            if settings.xid_host_log_filter
            else None
        ),
        insights_alarms=tuple(
            s.alarm_name(cluster) for s in specs if isinstance(s.metric, InsightsQuery)
        ),
        fleet_gpus=settings.fleet_gpus,
        alarm_shards=settings.alarm_shards,
    )


@dataclass(frozen=True)
class Cluster:
    name: str
    version: str  # "1.33"
    status: str
    oidc_issuer: str | None  # https://oidc.eks.<region>.amazonaws.com/id/<ID>
    auto_mode: bool


@dataclass(frozen=True)
class Addon:
    name: str
    version: str
    status: str  # CREATING | ACTIVE | CREATE_FAILED | UPDATING | DELETING | ... | DEGRADED


@dataclass(frozen=True)
class NodeGroup:
    name: str
    ami_type: str
    instance_types: tuple[str, ...] = ()


@dataclass(frozen=True)
class Facts:
    """What the account holds. A fact that could not be read is absent and its reason is in
    ``unreadable`` under the fact's name (``addons``, ``oidc_providers``, ``log_groups``,
    ``alarms``, ``nodegroups``)."""

    region: str
    cluster: Cluster | None  # None: no such cluster
    addons: Mapping[str, Addon | None] = field(default_factory=dict)  # None: not installed
    oidc_provider_arns: tuple[str, ...] = ()
    existing_log_groups: frozenset[str] = frozenset()
    insights_alarms: tuple[str, ...] = ()  # names of existing Metrics Insights alarms
    nodegroups: tuple[NodeGroup, ...] = ()
    unreadable: Mapping[str, str] = field(default_factory=dict)


def _unreadable(name: str, facts: Facts, fact: str) -> Check | None:
    reason = facts.unreadable.get(fact)
    if reason is None:
        return None
    return Check(
        name, Verdict.FAIL, f"could not read: {reason}", "run preflight with read access to it"
    )


def check_cluster(plan: Plan, facts: Facts) -> Check:
    cluster = facts.cluster
    if cluster is None:
        return Check(
            "cluster",
            Verdict.FAIL,
            f"no EKS cluster {plan.cluster_name!r} in {facts.region}",
            "name the cluster with -c cluster_name=NAME and its Region with --region",
        )
    mode = ", EKS Auto Mode" if cluster.auto_mode else ""
    detail = f"{cluster.name}: Kubernetes {cluster.version}, {cluster.status}{mode}"
    if cluster.status != "ACTIVE":
        return Check("cluster", Verdict.WARN, detail, "deploy once the cluster is ACTIVE")
    return Check("cluster", Verdict.OK, detail)


def _pod_identity_missing(facts: Facts, cluster: Cluster) -> Check:
    name = "pod-identity-agent"
    create = f"aws eks create-addon --cluster-name {cluster.name} --addon-name {POD_IDENTITY_ADDON}"
    if not cluster.auto_mode:
        return Check(
            name,
            Verdict.FAIL,
            f"add-on {POD_IDENTITY_ADDON} is not installed: the CloudWatch agent would get "
            "no credentials",
            f"{create} (or deploy with -c agent_credentials=irsa)",
        )
    if (blocked := _unreadable(name, facts, "nodegroups")) is not None:
        return blocked
    if not facts.nodegroups:
        return Check(name, Verdict.OK, "built into EKS Auto Mode nodes")
    return Check(
        name,
        Verdict.FAIL,
        f"built into Auto Mode nodes, but the {len(facts.nodegroups)} managed node group(s) "
        f"need the add-on {POD_IDENTITY_ADDON} for the agent's credentials",
        create,
    )


def check_pod_identity(facts: Facts, cluster: Cluster) -> Check:
    name = "pod-identity-agent"
    if (blocked := _unreadable(name, facts, "addons")) is not None:
        return blocked
    addon = facts.addons.get(POD_IDENTITY_ADDON)
    if addon is None:
        return _pod_identity_missing(facts, cluster)
    detail = f"add-on {POD_IDENTITY_ADDON} {addon.version} is {addon.status}"
    if addon.status == "ACTIVE":
        return Check(name, Verdict.OK, detail)
    if addon.status in {"CREATING", "UPDATING"}:
        return Check(name, Verdict.WARN, detail, "deploy once it is ACTIVE")
    return Check(
        name,
        Verdict.FAIL,
        detail,
        f"see its health issues: aws eks describe-addon --cluster-name {cluster.name} "
        f"--addon-name {POD_IDENTITY_ADDON}",
    )


def _provider_path(arn: str) -> str:
    """arn:aws:iam::123456789012:oidc-provider/oidc.eks.R.amazonaws.com/id/X -> the host/path."""
    return arn.partition(":oidc-provider/")[2]


def check_oidc_provider(plan: Plan, facts: Facts, cluster: Cluster) -> Check:
    name = "oidc-provider"
    if (blocked := _unreadable(name, facts, "oidc_providers")) is not None:
        return blocked
    associate = f"eksctl utils associate-iam-oidc-provider --cluster {cluster.name} --approve"
    if cluster.oidc_issuer is None:
        return Check(name, Verdict.FAIL, "the cluster has no OIDC issuer", associate)
    issuer = cluster.oidc_issuer.removeprefix("https://")
    matching = [arn for arn in facts.oidc_provider_arns if _provider_path(arn) == issuer]
    if not matching:
        return Check(
            name,
            Verdict.FAIL,
            f"no IAM OIDC provider for the cluster's issuer {cluster.oidc_issuer}",
            associate,
        )
    (arn,) = matching
    if plan.oidc_provider_arn is not None and plan.oidc_provider_arn != arn:
        return Check(
            name,
            Verdict.FAIL,
            f"oidc_provider_arn is {plan.oidc_provider_arn}, the cluster's provider is {arn}",
            f"-c oidc_provider_arn={arn}",
        )
    return Check(name, Verdict.OK, f"IAM OIDC provider {arn}")


def _minor(version: str) -> int | None:
    major, _, minor = version.partition(".")
    return int(minor) if major == "1" and minor.isdigit() else None


def check_kubectl(plan: Plan, cluster: Cluster) -> Check:
    name = "kubectl-version"
    low, high = KUBECTL_MINOR - KUBECTL_SKEW, KUBECTL_MINOR + KUBECTL_SKEW
    supported = f"kubectl 1.{KUBECTL_MINOR} supports Kubernetes 1.{low} to 1.{high}"
    if not plan.kubectl_used:
        return Check(
            name,
            Verdict.OK,
            "no kubectl_role_arn: the stack applies nothing with kubectl "
            "(apply `gpu-insights manifest` with a kubectl that matches the cluster)",
        )
    minor = _minor(cluster.version)
    if minor is not None and low <= minor <= high:
        return Check(name, Verdict.OK, f"cluster {cluster.version}; {supported}")
    return Check(
        name,
        Verdict.FAIL,
        f"cluster {cluster.version}; CDK's kubectl layer is 1.{KUBECTL_MINOR}, and {supported}",
        "upgrade the cluster into that range, or deploy without kubectl_role_arn and apply "
        "`gpu-insights manifest --image <ImageUri> --cluster-name "
        f"{cluster.name} | kubectl apply -f -` with your own kubectl",
    )


def check_observability_addon(plan: Plan, facts: Facts, cluster: Cluster) -> Check:
    name = "observability-addon"
    if (blocked := _unreadable(name, facts, "addons")) is not None:
        return blocked
    addon = facts.addons.get(OBSERVABILITY_ADDON)
    if plan.install_addon:
        if addon is None:
            return Check(name, Verdict.OK, f"{OBSERVABILITY_ADDON} not installed yet")
        return Check(
            name,
            Verdict.FAIL,
            f"{OBSERVABILITY_ADDON} {addon.version} is already installed ({addon.status}): "
            "the stack's AWS::EKS::Addon would fail with 'already exists'",
            "keep it and deploy with -c install_addon=false (then give it this project's "
            "configuration values yourself), or remove it first: aws eks delete-addon "
            f"--cluster-name {cluster.name} --addon-name {OBSERVABILITY_ADDON} --preserve",
        )
    if addon is None:
        return Check(
            name,
            Verdict.WARN,
            f"install_addon=false and {OBSERVABILITY_ADDON} is not installed: no Container "
            "Insights and no EMF listener for the exporter",
            "install it where you manage add-ons, or deploy with -c install_addon=true",
        )
    return Check(name, Verdict.OK, f"{OBSERVABILITY_ADDON} {addon.version} managed elsewhere")


def check_log_groups(plan: Plan, facts: Facts) -> list[Check]:
    name = "log-groups"
    if (blocked := _unreadable(name, facts, "log_groups")) is not None:
        return [blocked]
    checks = []
    taken = [g for g in plan.fixed_log_groups if g in facts.existing_log_groups]
    new = [g for g in plan.fixed_log_groups if g not in facts.existing_log_groups]
    said = []
    if taken:
        said.append(f"{', '.join(taken)} exist(s) and will be adopted (data kept)")
    if new:
        said.append(f"{', '.join(new)} will be created")
    # Either way the stacks set a 30-day retention: an existing group is no conflict.
    checks.append(Check(name, Verdict.OK, "; ".join(said) + "; retention set to 30 days"))
    required = plan.required_log_group
    if required is not None:
        if required in facts.existing_log_groups:
            checks.append(Check("host-log-group", Verdict.OK, f"{required} exists"))
        else:
            checks.append(
                Check(
                    "host-log-group",
                    Verdict.FAIL,
                    f"xid_host_log_filter needs {required}, which does not exist yet",
                    "deploy with -c xid_host_log_filter=false, and turn it on once Fluent Bit "
                    "has written its first host log line",
                )
            )
    return checks


def check_insights_quota(plan: Plan, facts: Facts) -> Check:
    name = "insights-alarm-quota"
    if (blocked := _unreadable(name, facts, "alarms")) is not None:
        return blocked
    ours = set(plan.insights_alarms)
    others = [a for a in facts.insights_alarms if a not in ours]
    total = len(others) + len(ours)
    detail = (
        f"{len(others)} Metrics Insights alarms exist, this deployment adds {len(ours)} "
        f"(fleet_gpus={plan.fleet_gpus:,}: {plan.alarm_shards} alarm shard(s)): "
        f"{total} of the default quota of {INSIGHTS_ALARM_QUOTA} per Region"
    )
    fix = (
        "request more 'Metrics Insights alarms' for CloudWatch in Service Quotas (ignore this "
        "if yours is already raised), or delete unused Metrics Insights alarms"
    )
    if total > INSIGHTS_ALARM_QUOTA:
        return Check(name, Verdict.FAIL, detail, fix)
    if total > INSIGHTS_ALARM_QUOTA * 0.9:
        return Check(name, Verdict.WARN, detail, fix)
    return Check(name, Verdict.OK, detail)


def _is_gpu_instance(instance_type: str) -> bool:
    """P and G families (p5.48xlarge, g6e.xlarge, g5g.xlarge) carry NVIDIA GPUs."""
    family = instance_type.partition(".")[0]
    return len(family) > 1 and family[0] in "pg" and family[1].isdigit()


def _arch(ami_type: str) -> str:
    return "arm64" if "ARM_64" in ami_type else "amd64"


def check_nodegroup(plan: Plan, group: NodeGroup) -> Check | None:
    """None for a node group without GPUs."""
    ami = group.ami_type
    gpu_ami = ami.endswith(("_GPU", "_NVIDIA")) or "_NVIDIA_" in ami
    custom_gpu = ami == "CUSTOM" and any(map(_is_gpu_instance, group.instance_types))
    if not (gpu_ami or custom_gpu):
        return None
    name = f"nodes:{group.name}"
    if not plan.exporter:
        return Check(name, Verdict.OK, f"{ami}: the exporter is off (exporter_enabled=false)")
    if custom_gpu:
        return Check(
            name,
            Verdict.WARN,
            f"CUSTOM AMI on {', '.join(group.instance_types)}: its OS and container runtime "
            "are unknown to this check",
            "the exporter needs the NVIDIA container runtime to honour NVIDIA_VISIBLE_DEVICES "
            "for an unprivileged container, on an amd64 node",
        )
    arch = _arch(ami)
    if arch not in EXPORTER_IMAGE_ARCHITECTURES:
        return Check(
            name,
            Verdict.FAIL,
            f"{ami}: {arch} GPU nodes, and the exporter image is built for "
            f"{', '.join(sorted(EXPORTER_IMAGE_ARCHITECTURES))} only (its pods would fail "
            "there with 'exec format error')",
            f"build the image for linux/{arch} too (the platform of the image asset in "
            "cdk/constructs/gpu_exporter.py, or your own multi-arch image for "
            "`gpu-insights manifest --image`), or deploy with -c exporter_enabled=false and "
            "rely on Container Insights' GPU metrics there",
        )
    if ami.startswith("BOTTLEROCKET"):
        return Check(
            name,
            Verdict.WARN,
            f"{ami}: Bottlerocket does not honour NVIDIA_VISIBLE_DEVICES for unprivileged "
            "containers, so the exporter sees no GPU there",
            f"set {_BOTTLEROCKET_SETTING} = true in the node group's Bottlerocket settings "
            "(any unprivileged pod can then ask for every GPU), or leave those nodes to "
            "Container Insights' GPU metrics",
        )
    return Check(
        name, Verdict.OK, f"{ami}: the NVIDIA runtime gives the exporter every GPU ({arch})"
    )


def check_nodes(plan: Plan, facts: Facts, cluster: Cluster) -> list[Check]:
    if (blocked := _unreadable("nodes", facts, "nodegroups")) is not None:
        return [blocked]
    checks = [c for g in facts.nodegroups if (c := check_nodegroup(plan, g)) is not None]
    if cluster.auto_mode:
        if plan.exporter:
            checks.append(
                Check(
                    "nodes:auto-mode",
                    Verdict.WARN,
                    "EKS Auto Mode nodes run AWS's Bottlerocket-based image, which does not "
                    "honour NVIDIA_VISIBLE_DEVICES for unprivileged containers and whose "
                    "settings cannot be changed: the exporter sees no GPU there",
                    "the exporter is unsupported on Auto Mode nodes; Container Insights' GPU "
                    "metrics cover them (with only Auto Mode GPU nodes, deploy with "
                    "-c exporter_enabled=false -c gpu_instance_type=TYPE)",
                )
            )
        else:
            checks.append(
                Check("nodes:auto-mode", Verdict.OK, "EKS Auto Mode; the exporter is off")
            )
    if not checks:
        checks.append(
            Check(
                "nodes",
                Verdict.OK,
                "no GPU managed node group (Karpenter and self-managed nodes are not visible "
                "to this check)",
            )
        )
    return checks


def run_checks(plan: Plan, facts: Facts) -> list[Check]:
    """Every check, in the order a person fixes them; cluster checks need the cluster."""
    checks = [check_cluster(plan, facts)]
    cluster = facts.cluster
    if cluster is not None:
        if plan.credentials is AgentCredentials.IRSA:
            checks.append(check_oidc_provider(plan, facts, cluster))
        else:
            checks.append(check_pod_identity(facts, cluster))
        checks.append(check_kubectl(plan, cluster))
        checks.append(check_observability_addon(plan, facts, cluster))
    checks += check_log_groups(plan, facts)
    checks.append(check_insights_quota(plan, facts))
    if cluster is not None:
        checks += check_nodes(plan, facts, cluster)
    return checks
