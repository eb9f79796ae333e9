"""``gpu-insights preflight``: what a deployment needs of the account and cluster, checked on
plain data. Each check returns one verdict (ok / warn / fail) with what it found and the fix.

The AWS reads are in ``cli.preflight.aws``; nothing here calls AWS. Sources of the rules:

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
- "The version with ``True`` in the ``Defaultversion`` column is the version that the add-on is
  created with, by default" (DescribeAddonVersions' ``compatibilities[].defaultVersion`` for the
  cluster's Kubernetes version; EKS User Guide, "Create an Amazon EKS add-on":
  https://docs.aws.amazon.com/eks/latest/userguide/creating-an-add-on.html): the add-on the
  stack installs without ``addon_version`` (its AWS::EKS::Addon names none).
- Which GPU nodes the exporter's DaemonSet reaches: its own node affinity
  (cdk/node_config/manifest.py), judged by Kubernetes' rules (cdk/node_config/node_affinity.py) on
  the labels AWS shows of each node: the well-known ones the kubelet and cloud provider set
  from the instance ("kubernetes.io/arch: The Kubelet populates this with runtime.GOARCH";
  "node.kubernetes.io/instance-type: The Kubelet populates this with the instance type as
  defined by the cloud provider", Kubernetes docs, "Well-Known Labels, Annotations and
  Taints"), a managed node group's ``eks.amazonaws.com/nodegroup`` and its own labels
  (DescribeNodegroup ``labels``), Karpenter's GPU labels from the instance type's GpuInfo, and
  EKS Auto Mode's ``eks.amazonaws.com/compute-type: auto``. Labels set inside the cluster (GPU
  feature discovery, NFD, the GPU Operator) are not visible to AWS's APIs.
"""

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from cdk.alarms.catalog import gpu_alarms
from cdk.alarms.model import insights_query
from cdk.alarms.sizing import INSIGHTS_ALARM_QUOTA
from cdk.node_config.gpu_instance_types import is_nvidia_gpu_instance_type
from cdk.node_config.manifest import REQUIRED_NODE_EXPRESSIONS, gpu_node_terms
from cdk.node_config.node_affinity import requirement_matches, selects
from cdk.settings import OTLP_ENDPOINT_MIN_ADDON_VERSION, AgentCredentials, Settings
from cli.serving_paths import running_paths, without_path
from gpu_insights_agent.contract.metrics import (
    ExporterSink,
    container_insights_log_group_prefix,
    exporter_log_group,
    training_log_group,
)
from lambdas.shared.container_insights_mode import (
    DEFAULT_MODE,
    OTEL_MIN_ADDON_VERSION,
    ContainerInsightsMode,
    addon_version_key,
    at_least,
    otel_capable,
)
from lambdas.silence_check.coverage import Uncovered

POD_IDENTITY_ADDON: Final = "eks-pod-identity-agent"
OBSERVABILITY_ADDON: Final = "amazon-cloudwatch-observability"
#: The EKS node monitoring agent: "included as a capability for all Amazon EKS Auto Mode
#: clusters. For other cluster types, you can add the monitoring agent as an Amazon EKS
#: add-on" ("Enable node auto repair and investigate node health issues", awsdocs/amazon-eks-
#: user-guide latest/ug/nodes/node-health.adoc @4d52b4d0).
NODE_MONITORING_ADDON: Final = "eks-node-monitoring-agent"
#: The add-ons preflight reads, in the order it asks (DescribeAddon each).
PREFLIGHT_ADDONS: Final = (POD_IDENTITY_ADDON, OBSERVABILITY_ADDON, NODE_MONITORING_ADDON)
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
    #: The exporter DaemonSet's required node affinity (``nodeSelectorTerms``).
    exporter_node_terms: tuple[Mapping[str, Any], ...] = ()
    #: kubectl_vpc_id: the VPC the kubectl provider runs in, or None outside any VPC.
    kubectl_vpc_id: str | None = None
    #: The Container Insights mode the deployment configures and its analyzers read.
    mode: ContainerInsightsMode = DEFAULT_MODE
    #: Where the exporter sends its metrics (otlp: the add-on agent's OTLP endpoint).
    exporter_sink: ExporterSink = ExporterSink.EMF
    #: The add-on version the stack pins, or None for EKS's default.
    addon_version: str | None = None
    #: The silence check function runs (AlarmSettings.silence_check): its coverage is by tag.
    silence_check: bool = True
    #: The deployment creates serving SLO alarms (OTel's PromQL ones, or Classic's with the
    #: scrape), and the add-on it installs carries the servers' scrape (``serving_metrics``).
    serving_alarms: bool = False
    serving_metrics: bool = True


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
            s.alarm_name(cluster) for s in specs if insights_query(s.metric) is not None
        ),
        fleet_gpus=settings.fleet_gpus,
        alarm_shards=settings.alarm_shards,
        exporter_node_terms=tuple(gpu_node_terms(settings.gpu_node_labels)),
        kubectl_vpc_id=settings.kubectl_vpc_id,
        mode=settings.container_insights_mode,
        exporter_sink=settings.exporter_sink,
        addon_version=settings.addon_version,
        silence_check=settings.alarm_settings().silence_check,
        serving_alarms=serving_alarmed(settings),
        serving_metrics=settings.serving_metrics,
    )


def serving_alarmed(settings: Settings) -> bool:
    """Whether the deployment creates serving SLO alarms, in either mode."""
    alarms = settings.alarm_settings()
    return alarms.serving is not None or alarms.classic_serving is not None


@dataclass(frozen=True)
class Cluster:
    name: str
    version: str  # "1.33"
    status: str
    oidc_issuer: str | None  # https://oidc.eks.<region>.amazonaws.com/id/<ID>
    auto_mode: bool
    #: DescribeCluster resourcesVpcConfig: whether the API endpoint is public, from which
    #: CIDR blocks, and the cluster's VPC.
    endpoint_public: bool = True
    public_access_cidrs: tuple[str, ...] = ("0.0.0.0/0",)
    vpc_id: str | None = None


@dataclass(frozen=True)
class Addon:
    name: str
    version: str
    status: str  # CREATING | ACTIVE | CREATE_FAILED | UPDATING | DELETING | ... | DEGRADED
    #: DescribeAddon's ``configurationValues`` ("The configuration values that you provided"),
    #: a JSON or YAML string; None where none were given.
    configuration_values: str | None = None


def addon_modes(addon: Addon) -> frozenset[ContainerInsightsMode] | None:
    """The Container Insights pipelines the observability add-on runs, from its configuration
    values over the chart's defaults (values.yaml: ``containerInsights.enabled: true``,
    ``otelContainerInsights.enabled: false``; "both pipelines are independent"). None where the
    values are not JSON (YAML, which only a person writes by hand: said, not guessed)."""
    values: Any = {}
    if addon.configuration_values and addon.configuration_values.strip():
        try:
            values = json.loads(addon.configuration_values)
        except json.JSONDecodeError:
            return None
    if not isinstance(values, dict):
        return None

    def enabled(key: str, default: bool) -> bool:
        section = values.get(key)
        if isinstance(section, dict) and isinstance(section.get("enabled"), bool):
            return bool(section["enabled"])
        return default

    modes = set()
    if enabled("otelContainerInsights", False):
        modes.add(ContainerInsightsMode.OTEL)
    if enabled("containerInsights", True):
        modes.add(ContainerInsightsMode.CLASSIC)
    return frozenset(modes)


def _modes_said(modes: frozenset[ContainerInsightsMode] | None) -> str:
    if modes is None:
        return "Container Insights mode unknown (configuration values are not JSON)"
    if not modes:
        return "no Container Insights pipeline"
    return " and ".join(sorted(modes)) + " Container Insights"


@dataclass(frozen=True)
class AddonVersion:
    """A version of the observability add-on EKS offers for the cluster's Kubernetes version
    (DescribeAddonVersions), and whether it is the one EKS installs when none is named."""

    version: str
    default: bool = False


def needs_addon_versions(plan: Plan, installed: Addon | None) -> bool:
    """Whether the add-on versions EKS offers decide a verdict: with exporter_sink=otlp, the
    add-on EKS would install at its default version, or an installed one too old for the OTLP
    endpoint (to name the version to update it to)."""
    if plan.exporter_sink is not ExporterSink.OTLP:
        return False
    if installed is None:
        return plan.install_addon and plan.addon_version is None
    return not at_least(installed.version, OTLP_ENDPOINT_MIN_ADDON_VERSION)


@dataclass(frozen=True)
class NodeGroup:
    name: str
    ami_type: str
    instance_types: tuple[str, ...] = ()
    #: The Kubernetes labels EKS applies to the group's nodes (DescribeNodegroup ``labels``).
    labels: Mapping[str, str] = field(default_factory=dict)
    #: DescribeNodegroup ``nodeRepairConfig.enabled``; False where the group has none (node
    #: auto repair is enabled "when creating or editing a managed node group": node-health.adoc).
    auto_repair: bool = False


@dataclass(frozen=True)
class GpuInstance:
    """A running EC2 instance of the cluster whose type has NVIDIA GPUs."""

    instance_id: str
    instance_type: str
    #: Its private DNS name: an EKS node's name.
    node_name: str
    #: Kubernetes' name of its architecture (amd64, arm64).
    arch: str
    #: The managed node group it belongs to (tag ``eks:nodegroup-name``), if any.
    nodegroup: str | None = None
    #: The Karpenter NodePool that launched it (tag ``karpenter.sh/nodepool``), if any.
    nodepool: str | None = None
    #: An EC2 managed instance (``Operator.Managed``): an EKS Auto Mode node.
    auto_mode: bool = False


@dataclass(frozen=True)
class Facts:
    """What the account holds. A fact that could not be read is absent and its reason is in
    ``unreadable`` under the fact's name (``addons``, ``addon_versions``, ``oidc_providers``,
    ``log_groups``, ``alarms``, ``nodegroups``, ``instances``, ``silence_coverage``)."""

    region: str
    cluster: Cluster | None  # None: no such cluster
    addons: Mapping[str, Addon | None] = field(default_factory=dict)  # None: not installed
    oidc_provider_arns: tuple[str, ...] = ()
    existing_log_groups: frozenset[str] = frozenset()
    insights_alarms: tuple[str, ...] = ()  # names of existing Metrics Insights alarms
    nodegroups: tuple[NodeGroup, ...] = ()
    #: The cluster's running instances with NVIDIA GPUs.
    gpu_instances: tuple[GpuInstance, ...] = ()
    #: The cluster's running NVIDIA GPU instances the silence check does not cover
    #: (cli/silence_coverage.py).
    silence_uncovered: tuple[Uncovered, ...] = ()
    #: Of the node groups' and instances' types, those EC2 says have NVIDIA GPUs, with their
    #: Kubernetes architecture.
    nvidia_instance_types: Mapping[str, str] = field(default_factory=dict)
    #: The observability add-on's versions for the cluster's Kubernetes version, read where
    #: ``needs_addon_versions`` says they decide a verdict.
    addon_versions: tuple[AddonVersion, ...] = ()
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


#: What a user sets to run the kubectl provider in the cluster's VPC.
_KUBECTL_NETWORK_FIX: Final = (
    "-c kubectl_vpc_id=<the cluster's VPC> -c kubectl_subnet_ids=<private subnets with a route "
    "to STS, EKS, Lambda and S3> -c kubectl_security_group_id=<a group the cluster's security "
    "group admits on 443>, or deploy without kubectl_role_arn and apply `gpu-insights manifest` "
    "from inside the VPC"
)


def check_kubectl_endpoint(plan: Plan, cluster: Cluster) -> Check | None:
    """CDK's kubectl provider runs outside any VPC unless given one: it reaches only an
    endpoint that is public to every address (DescribeCluster resourcesVpcConfig
    endpointPublicAccess, publicAccessCidrs:
    https://docs.aws.amazon.com/eks/latest/APIReference/API_VpcConfigResponse.html)."""
    if not plan.kubectl_used:
        return None
    name = "kubectl-endpoint"
    if plan.kubectl_vpc_id is not None:
        if cluster.vpc_id is not None and cluster.vpc_id != plan.kubectl_vpc_id:
            return Check(
                name,
                Verdict.FAIL,
                f"kubectl_vpc_id={plan.kubectl_vpc_id}, but the cluster is in {cluster.vpc_id}",
                f"-c kubectl_vpc_id={cluster.vpc_id} with subnets of that VPC",
            )
        return Check(name, Verdict.OK, f"the kubectl provider runs in {plan.kubectl_vpc_id}")
    if not cluster.endpoint_public:
        return Check(
            name,
            Verdict.FAIL,
            "the cluster's API endpoint is private only, and CDK's kubectl provider runs "
            "outside the VPC: the exporter's DaemonSet would never be applied",
            _KUBECTL_NETWORK_FIX,
        )
    if "0.0.0.0/0" not in cluster.public_access_cidrs:
        return Check(
            name,
            Verdict.WARN,
            "the API endpoint is public only to "
            f"{', '.join(cluster.public_access_cidrs)}; CDK's kubectl provider calls it from "
            "Lambda's addresses, outside those blocks",
            _KUBECTL_NETWORK_FIX,
        )
    return Check(name, Verdict.OK, "public endpoint: CDK's kubectl provider reaches it")


#: Why exporter_sink=otlp needs a newer add-on, said after "older than". The sink is OTLP
#: by default in OTel mode (cdk.settings.default_sink), so the line says so: a deployment that
#: never set it learns where the need comes from.
_OTLP_NEEDS: Final = (
    f"{OTLP_ENDPOINT_MIN_ADDON_VERSION}, which exporter_sink=otlp (the default in OTel mode) "
    "needs (the agent's OTLP endpoint)"
)
#: The other way out of an add-on too old for the OTLP sink: keep it, and send EMF.
_EMF_INSTEAD: Final = "or keep it with -c exporter_sink=emf"


def _newest_for_otlp(facts: Facts) -> str | None:
    """The newest add-on version EKS offers for the cluster with the OTLP endpoint, if any."""
    fit = [
        v.version
        for v in facts.addon_versions
        if at_least(v.version, OTLP_ENDPOINT_MIN_ADDON_VERSION)
    ]
    return max(fit, key=lambda v: addon_version_key(v) or (0, 0, 0, 0)) if fit else None


def _update_for_otlp(facts: Facts, cluster: Cluster) -> str:
    version = _newest_for_otlp(facts) or f"<{OTLP_ENDPOINT_MIN_ADDON_VERSION} or later>"
    return (
        f"aws eks update-addon --cluster-name {cluster.name} --addon-name "
        f"{OBSERVABILITY_ADDON} --addon-version {version}, {_EMF_INSTEAD}"
    )


def _default_install(plan: Plan, facts: Facts, cluster: Cluster) -> Check:
    """With exporter_sink=otlp and no addon_version, the stack's add-on is EKS's default
    version for the cluster's Kubernetes version: it must serve the OTLP endpoint."""
    name = "observability-addon"
    if (blocked := _unreadable(name, facts, "addon_versions")) is not None:
        return blocked
    kubernetes = f"Kubernetes {cluster.version}"
    newest = _newest_for_otlp(facts)
    fix = (
        f"-c addon_version={newest} (the newest EKS offers for {kubernetes})"
        if newest
        else f"no version EKS offers for {kubernetes} is {OTLP_ENDPOINT_MIN_ADDON_VERSION} or "
        "later yet: -c exporter_sink=emf"
    )
    defaults = [v.version for v in facts.addon_versions if v.default]
    if not defaults:
        return Check(
            name,
            Verdict.FAIL,
            f"{OBSERVABILITY_ADDON} not installed yet, and EKS names no default version of it "
            f"for {kubernetes} (DescribeAddonVersions)",
            fix,
        )
    default = max(defaults, key=lambda v: addon_version_key(v) or (0, 0, 0, 0))
    if at_least(default, OTLP_ENDPOINT_MIN_ADDON_VERSION):
        return Check(
            name,
            Verdict.OK,
            f"{OBSERVABILITY_ADDON} not installed yet: EKS installs its default {default} for "
            f"{kubernetes}, {plan.mode} mode with the agent's OTLP endpoint",
        )
    return Check(
        name,
        Verdict.FAIL,
        f"{OBSERVABILITY_ADDON} not installed yet: without addon_version EKS installs its "
        f"default for {kubernetes}, {default}, older than {_OTLP_NEEDS}",
        fix,
    )


def check_observability_addon(plan: Plan, facts: Facts, cluster: Cluster) -> Check:
    name = "observability-addon"
    if (blocked := _unreadable(name, facts, "addons")) is not None:
        return blocked
    addon = facts.addons.get(OBSERVABILITY_ADDON)
    if addon is None:
        if plan.install_addon:
            if needs_addon_versions(plan, addon):
                return _default_install(plan, facts, cluster)
            return Check(
                name, Verdict.OK, f"{OBSERVABILITY_ADDON} not installed yet: {plan.mode} mode"
            )
        listener = "OTLP endpoint" if plan.exporter_sink is ExporterSink.OTLP else "EMF listener"
        return Check(
            name,
            Verdict.WARN,
            f"install_addon=false and {OBSERVABILITY_ADDON} is not installed: no Container "
            f"Insights and no {listener} for the exporter",
            "install it where you manage add-ons, or deploy with -c install_addon=true",
        )
    return _installed_addon(plan, addon, facts, cluster)


def _installed_addon(plan: Plan, addon: Addon, facts: Facts, cluster: Cluster) -> Check:
    """An observability add-on the cluster already runs: its mode and version against the
    plan's."""
    name = "observability-addon"
    modes = addon_modes(addon)
    runs = f"{OBSERVABILITY_ADDON} {addon.version} ({addon.status}) runs {_modes_said(modes)}"
    other = next(iter(set(ContainerInsightsMode) - {plan.mode}))
    switch = modes is not None and plan.mode not in modes
    keep = f"-c container_insights_mode={other}" if modes == frozenset({other}) else ""
    too_old = plan.exporter_sink is ExporterSink.OTLP and not at_least(
        addon.version, OTLP_ENDPOINT_MIN_ADDON_VERSION
    )
    if plan.install_addon:
        switching = (
            f"; deploying this project's add-on would switch it to {plan.mode} mode"
            if switch
            else ""
        )
        return Check(
            name,
            Verdict.FAIL,
            f"{runs}: the stack's AWS::EKS::Addon would fail with 'already exists'{switching}"
            + (f"; it is older than {_OTLP_NEEDS}" if too_old else ""),
            "keep it and deploy with -c install_addon=false (then give it this project's "
            "configuration values yourself), or remove it first: aws eks delete-addon "
            f"--cluster-name {cluster.name} --addon-name {OBSERVABILITY_ADDON} --preserve"
            + (f"; to keep its mode, {keep}" if keep else "")
            + (f"; to keep it, first {_update_for_otlp(facts, cluster)}" if too_old else ""),
        )
    if too_old:
        return Check(
            name,
            Verdict.FAIL,
            f"{runs}, managed elsewhere; it is older than {_OTLP_NEEDS}",
            _update_for_otlp(facts, cluster),
        )
    if switch:
        return Check(
            name,
            Verdict.WARN,
            f"{runs}, managed elsewhere, but container_insights_mode={plan.mode}: the "
            f"analyzers would read {plan.mode} series it does not send",
            keep or f"turn on {plan.mode} Container Insights in its configuration values",
        )
    if plan.mode is ContainerInsightsMode.OTEL and not otel_capable(addon.version):
        return Check(
            name,
            Verdict.WARN,
            f"{runs}, managed elsewhere; OTel Container Insights needs "
            f"{OTEL_MIN_ADDON_VERSION} or later",
            f"aws eks update-addon --cluster-name {cluster.name} --addon-name "
            f"{OBSERVABILITY_ADDON} --addon-version <{OTEL_MIN_ADDON_VERSION} or later>",
        )
    return Check(name, Verdict.OK, f"{runs}, managed elsewhere")


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


def _arch(ami_type: str) -> str:
    return "arm64" if "ARM_64" in ami_type else "amd64"


def is_gpu_nodegroup(group: NodeGroup) -> bool:
    """An NVIDIA AMI's group, or a CUSTOM AMI's on NVIDIA GPU instance types."""
    ami = group.ami_type
    gpu_ami = ami.endswith(("_GPU", "_NVIDIA")) or "_NVIDIA_" in ami
    return gpu_ami or (
        ami == "CUSTOM" and any(map(is_nvidia_gpu_instance_type, group.instance_types))
    )


def check_nodegroup(plan: Plan, group: NodeGroup) -> Check | None:
    """None for a node group without GPUs."""
    ami = group.ami_type
    if not is_gpu_nodegroup(group):
        return None
    custom_gpu = ami == "CUSTOM"
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
                "no GPU managed node group (GPU instances of any kind: exporter-nodes)",
            )
        )
    return checks


#: Why a GPU node is left out by design: the requirement each term of the DaemonSet ANDs in
#: (cdk/node_config/manifest.py ``REQUIRED_NODE_EXPRESSIONS``), by its label key.
_LEFT_OUT: Final = {
    "kubernetes.io/arch": "not amd64: the exporter's image is built for linux/amd64 only",
    "eks.amazonaws.com/compute-type": "an EKS Auto Mode node: the exporter sees no GPU there",
}
_UNMARKED: Final = (
    "no GPU mark AWS can see: its type is not in the exporter's NVIDIA instance types, and no "
    "label of it in EKS or Karpenter marks it (GPU feature discovery, NFD or the GPU Operator "
    "may, inside the cluster)"
)


@dataclass(frozen=True)
class _Candidate:
    """A GPU node, or a node group's GPU instance type with no instance running, and the
    labels AWS shows it would carry."""

    what: str
    labels: Mapping[str, str]
    nodegroup: str | None = None


def _well_known(instance_type: str, arch: str) -> dict[str, str]:
    return {
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": arch,
        "node.kubernetes.io/instance-type": instance_type,
    }


def _candidates(facts: Facts) -> list[_Candidate]:
    groups = {g.name: g for g in facts.nodegroups}
    found: list[_Candidate] = []
    running = {(i.nodegroup, i.instance_type) for i in facts.gpu_instances}
    for group in facts.nodegroups:
        for itype in group.instance_types:
            arch = facts.nvidia_instance_types.get(itype)
            if arch is None or (group.name, itype) in running:
                continue
            labels = {
                **_well_known(itype, arch),
                "eks.amazonaws.com/nodegroup": group.name,
                **group.labels,
            }
            found.append(
                _Candidate(f"node group {group.name} ({itype}, none running)", labels, group.name)
            )
    for i in facts.gpu_instances:
        labels = _well_known(i.instance_type, i.arch)
        if i.auto_mode:
            source = "EKS Auto Mode"
            labels["eks.amazonaws.com/compute-type"] = "auto"
        elif i.nodegroup is not None:
            source = f"node group {i.nodegroup}"
            known = groups.get(i.nodegroup)
            labels |= {
                "eks.amazonaws.com/nodegroup": i.nodegroup,
                **(known.labels if known else {}),
            }
        elif i.nodepool is not None:
            source = f"Karpenter NodePool {i.nodepool}"
            # Karpenter labels the node from the type's GpuInfo: an NVIDIA type is "nvidia".
            labels |= {
                "karpenter.sh/nodepool": i.nodepool,
                "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
            }
        else:
            source = "self-managed"
        name = i.node_name or i.instance_id
        found.append(
            _Candidate(
                f"{name} ({i.instance_id}, {i.instance_type}, {source})", labels, i.nodegroup
            )
        )
    return found


def _why_missed(labels: Mapping[str, str]) -> str | None:
    """Which requirement leaves a GPU node out by design, or None when no GPU mark is seen."""
    for requirement in REQUIRED_NODE_EXPRESSIONS:
        if not requirement_matches(requirement, labels):
            return _LEFT_OUT[requirement["key"]]
    return None


def check_exporter_reach(plan: Plan, facts: Facts) -> Check:
    """Every NVIDIA GPU node EC2 and EKS show is one the exporter's DaemonSet selects."""
    name = "exporter-nodes"
    if not plan.exporter:
        return Check(name, Verdict.OK, "the exporter is off (exporter_enabled=false)")
    for fact in ("instances", "nodegroups"):
        if (blocked := _unreadable(name, facts, fact)) is not None:
            return blocked
    candidates = _candidates(facts)
    if not candidates:
        return Check(
            name,
            Verdict.OK,
            "no running instance of the cluster and no node group has an NVIDIA GPU type "
            "(EC2 DescribeInstanceTypes)",
        )
    missed: dict[str, list[str]] = defaultdict(list)
    unmarked_groups: list[str] = []
    for c in candidates:
        if selects(plan.exporter_node_terms, c.labels):
            continue
        why = _why_missed(c.labels)
        missed[why or _UNMARKED].append(c.what)
        if why is None and c.nodegroup is not None:
            unmarked_groups.append(c.nodegroup)
    reached = len(candidates) - sum(map(len, missed.values()))
    detail = (
        f"the exporter's DaemonSet selects {reached} of the {len(candidates)} NVIDIA GPU nodes "
        "AWS shows (running instances; node group types with none running)"
    )
    if not missed:
        types = sorted({c.labels["node.kubernetes.io/instance-type"] for c in candidates})
        return Check(name, Verdict.OK, f"{detail} ({', '.join(types)})")
    detail += "; it misses " + "; ".join(
        f"{', '.join(whats)}: {why}" for why, whats in missed.items()
    )
    if _UNMARKED not in missed:
        return Check(
            name,
            Verdict.WARN,
            detail,
            "none needed for the exporter: Container Insights' GPU metrics cover those nodes "
            "(see nodes:<group> and nodes:auto-mode)",
        )
    label = (
        f"eks.amazonaws.com/nodegroup={sorted(unmarked_groups)[0]}"
        if unmarked_groups
        else "KEY=VALUE"
    )
    return Check(
        name,
        Verdict.FAIL,
        detail,
        f"mark them with a label they carry: -c gpu_node_labels={label} (gpu_node_labels adds "
        "node labels that mark GPU nodes), or run NVIDIA's GPU feature discovery on them",
    )


#: The silence check's coverage lines: ``silence-coverage``, or one per uncovered instance.
SILENCE_COVERAGE: Final = "silence-coverage"


#: Where gpu-silent is a PromQL alarm (the exporter's OTLP sink, cdk/alarms/catalog.py
#: ``otlp_silent_alarm``): it reads Kube State Metrics' GPU capacity on the nodes the exporter's
#: DaemonSet runs on (cdk/node_config/manifest.py REQUIRED_NODE_EXPRESSIONS), not EC2's tags.
_PROMQL_SILENT: Final = (
    "no silence check function with exporter_sink=otlp: gpu-silent is a PromQL alarm on Kube "
    "State Metrics' nvidia.com/gpu capacity, which watches every GPU node the exporter runs on "
    "whatever its tags (not EKS Auto Mode's or non-amd64 ones, which Container Insights' DCGM "
    "series alone watch)"
)


def check_silence_coverage(
    uncovered: Sequence[Uncovered],
    *,
    exporter: bool,
    unreadable: str | None,
    command: str,
    silence_check: bool = True,
) -> list[Check]:
    """One line per uncovered instance (``silence-coverage:<instance id>``), or one that says
    none is. An untagged one fails (a tag fixes it); one the exporter cannot serve warns.
    Without the silence check function (``silence_check`` false: the exporter's OTLP sink) the
    tags decide nothing: one line says what watches for silence instead."""
    if not exporter:
        return [
            Check(
                SILENCE_COVERAGE,
                Verdict.OK,
                "the exporter is off (exporter_enabled=false): no silence check",
            )
        ]
    if not silence_check:
        return [Check(SILENCE_COVERAGE, Verdict.OK, _PROMQL_SILENT)]
    if unreadable is not None:
        return [
            Check(
                SILENCE_COVERAGE,
                Verdict.FAIL,
                f"could not read: {unreadable}",
                f"run {command} with read access to it",
            )
        ]
    if not uncovered:
        return [
            Check(
                SILENCE_COVERAGE,
                Verdict.OK,
                "the silence check covers every running NVIDIA GPU instance of the cluster "
                "(by its tags, and as Container Insights saw its nodes)",
            )
        ]
    return [
        Check(
            f"{SILENCE_COVERAGE}:{u.instance_id}",
            Verdict.FAIL if u.untagged else Verdict.WARN,
            f"{u.instance_type}{f' {u.node_name}' if u.node_name else ''}: {u.why}",
            u.fix,
        )
        for u in uncovered
    ]


#: "Amazon EKS waits 10 minutes before acting on the ``AcceleratedHardwareReady``
#: ``NodeConditions``, and 30 minutes for all other conditions"; "By itself, node auto repair
#: can react to the ``Ready`` condition of the ``kubelet`` ... When paired with the node
#: monitoring agent, node auto repair can react to more conditions" (node-health.adoc
#: @4d52b4d0). Auto Mode's repair is always on (research: node-repair.adoc @dbc0b729).
REPAIR_AFTER_MINUTES: Final = (("AcceleratedHardwareReady", 10), ("Ready and the others", 30))
_REPAIR_AFTER: Final = ", ".join(f"{c} {m} min" for c, m in REPAIR_AFTER_MINUTES)
NODE_REPAIR: Final = "node-repair"


@dataclass(frozen=True)
class NodeRepair:
    """What decides auto repair of the cluster's GPU nodes: Auto Mode (DescribeCluster
    ``computeConfig.enabled``), each managed node group's ``nodeRepairConfig``, and the node
    monitoring agent's add-on (None: not installed)."""

    auto_mode: bool
    nodegroups: tuple[NodeGroup, ...]
    agent: Addon | None


def check_node_repair(
    repair: NodeRepair | None, *, unreadable: str | None, command: str
) -> list[Check]:
    """One line per GPU node group (auto repair on or off, and after how long), one for Auto
    Mode, one for the node monitoring agent. Repair off warns, never fails: it is the
    operator's choice, and the alarms page either way (gpu-node-not-ready,
    gpu-node-hardware-not-ready)."""
    if unreadable is not None or repair is None:
        return [
            Check(
                NODE_REPAIR,
                Verdict.FAIL,
                f"could not read: {unreadable}",
                f"run {command} with eks:DescribeCluster, eks:ListNodegroups, "
                "eks:DescribeNodegroup and eks:DescribeAddon",
            )
        ]
    agent_ok = repair.auto_mode or (repair.agent is not None and repair.agent.status == "ACTIVE")
    reacts = (
        _REPAIR_AFTER
        if agent_ok
        else "Ready 30 min only: without the node monitoring agent no GPU condition is set"
    )
    checks = []
    for group in repair.nodegroups:
        if not is_gpu_nodegroup(group):
            continue
        if group.auto_repair:
            checks.append(
                Check(
                    f"{NODE_REPAIR}:{group.name}",
                    Verdict.OK,
                    f"auto repair on: EKS replaces or reboots an unhealthy node ({reacts})",
                )
            )
        else:
            checks.append(
                Check(
                    f"{NODE_REPAIR}:{group.name}",
                    Verdict.WARN,
                    "auto repair off: a GPU node with a failed GPU or NotReady stays until "
                    "someone replaces it (the alarms page either way)",
                    f"aws eks update-nodegroup-config --cluster-name <cluster> --nodegroup-name "
                    f"{group.name} --node-repair-config enabled=true",
                )
            )
    if repair.auto_mode:
        checks.append(
            Check(
                f"{NODE_REPAIR}:auto-mode",
                Verdict.OK,
                f"EKS Auto Mode: auto repair always on, every GPU action a replacement "
                f"({_REPAIR_AFTER}); the node monitoring agent is built in",
            )
        )
    if not checks:
        return [Check(NODE_REPAIR, Verdict.OK, "no GPU managed node group, no Auto Mode")]
    if not repair.auto_mode:
        agent = repair.agent
        checks.append(
            Check(
                f"{NODE_REPAIR}:agent",
                Verdict.OK if agent_ok else Verdict.WARN,
                f"{NODE_MONITORING_ADDON} {agent.version} {agent.status}"
                if agent is not None
                else f"{NODE_MONITORING_ADDON} not installed: no node has "
                "AcceleratedHardwareReady, so gpu-node-hardware-not-ready never pages and "
                "auto repair does not see GPU faults",
                ""
                if agent_ok
                else f"aws eks create-addon --cluster-name <cluster> --addon-name "
                f"{NODE_MONITORING_ADDON}",
            )
        )
    return checks


def _running_version(plan: Plan, facts: Facts, addon: Addon | None) -> str | None:
    """The add-on version the cluster will run: the one installed where the stack installs
    none, else the pinned ``addon_version``, else EKS's default where it was read."""
    if not plan.install_addon:
        return addon.version if addon is not None else None
    if plan.addon_version is not None:
        return plan.addon_version
    defaults = [v.version for v in facts.addon_versions if v.default]
    return max(defaults, key=lambda v: addon_version_key(v) or (0, 0, 0, 0)) if defaults else None


def check_serving_paths(plan: Plan, facts: Facts) -> Check:
    """Each inference server's data path in the plan's mode (cli/serving_paths.py, the same
    judgement as ``status``'s): a server without one leaves its models' SLO alarms silent."""
    name = "serving-data-path"
    if not plan.serving_alarms:
        return Check(name, Verdict.OK, "no serving SLO alarm in this deployment")
    addon = facts.addons.get(OBSERVABILITY_ADDON)
    elsewhere = not plan.install_addon and addon is not None
    if not plan.install_addon and (blocked := _unreadable(name, facts, "addons")) is not None:
        return blocked
    paths = running_paths(
        plan.mode,
        serving_metrics=plan.serving_metrics,
        configuration_values=addon.configuration_values if elsewhere and addon else None,
        from_values=elsewhere,
        addon_version=_running_version(plan, facts, addon),
    )
    missing = without_path(paths)
    if not missing:
        return Check(
            name,
            Verdict.OK,
            f"every server's series reach CloudWatch in {plan.mode} mode: "
            + "; ".join(p.line() for p in paths),
        )
    return Check(
        name,
        Verdict.WARN,
        f"{len(missing)} of {len(paths)} servers without a data path in {plan.mode} mode, "
        "their models' serving SLO alarms silent: " + "; ".join(p.line() for p in missing),
        "; ".join(f"{p.server}: {p.enable}" for p in missing),
    )


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
        endpoint = check_kubectl_endpoint(plan, cluster)
        if endpoint is not None:
            checks.append(endpoint)
        checks.append(check_observability_addon(plan, facts, cluster))
        checks.append(check_serving_paths(plan, facts))
    checks += check_log_groups(plan, facts)
    checks.append(check_insights_quota(plan, facts))
    if cluster is not None:
        checks += check_nodes(plan, facts, cluster)
        checks += check_node_repair(
            NodeRepair(
                cluster.auto_mode, facts.nodegroups, facts.addons.get(NODE_MONITORING_ADDON)
            ),
            unreadable=facts.unreadable.get("nodegroups") or facts.unreadable.get("addons"),
            command="preflight",
        )
        checks.append(check_exporter_reach(plan, facts))
        checks += check_silence_coverage(
            facts.silence_uncovered,
            exporter=plan.exporter,
            unreadable=facts.unreadable.get("silence_coverage"),
            command="preflight",
            silence_check=plan.silence_check,
        )
    return checks
