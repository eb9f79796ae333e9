"""Read-only AWS reads for ``gpu-insights preflight``: each takes an injected client and returns
the plain data ``cli.preflight.checks`` judges. A denied read becomes an ``unreadable`` fact
(its check fails and says why); no credentials or no Region is an error of the whole run.

The cluster's GPU nodes are its running instances a tag names the cluster's (each provisioning
path's tags: lambdas/shared/cluster_tags.py says by whose word) whose type EC2's
DescribeInstanceTypes gives an NVIDIA GPU. How each was provisioned is in its tags:
``eks:nodegroup-name`` on a managed node group's (the tag keys the EKS node group service
role's policy, AWSServiceRoleForAmazonEKSNodegroup, lets it put on the group's Auto Scaling
group, which propagates them at launch), ``karpenter.sh/nodepool`` on Karpenter's
(aws/karpenter-provider-aws pkg/providers/instance, the NodePool tag), and ``Operator.Managed``
or ``eks:kubernetes-node-pool-name`` on EKS Auto Mode's (lambdas/silence_check/coverage.py).
The running GPU instances of the cluster the silence check does not cover are read by
cli/silence_coverage.py.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from cdk.settings import AgentCredentials
from cli.failures import AwsFailureError
from cli.preflight.checks import (
    NODE_MONITORING_ADDON,
    OBSERVABILITY_ADDON,
    PREFLIGHT_ADDONS,
    Addon,
    AddonVersion,
    Cluster,
    Facts,
    GpuInstance,
    NodeGroup,
    NodeRepair,
    Plan,
    needs_addon_versions,
)
from cli.silence_coverage import read_ci_gpu_nodes, read_uncovered
from lambdas.silence_check.aws import (
    GPU_MANUFACTURER,
    TYPES_PER_CALL,
    cluster_instance,
    cluster_instances,
)
from lambdas.silence_check.config import DEFAULT_ARCHITECTURES
from lambdas.silence_check.coverage import Uncovered

T = TypeVar("T")


class PreflightAccessError(AwsFailureError):
    """AWS could not be asked at all (no credentials, no Region, no endpoint)."""


@dataclass(frozen=True)
class Clients:
    """The clients preflight reads with. ``eks_addons`` serves the EKS add-on API
    (DescribeAddon, DescribeAddonVersions): the same client as ``eks`` in use; tests give it a
    Stubber, as moto has no add-on API."""

    eks: Any
    eks_addons: Any
    iam: Any
    logs: Any
    cloudwatch: Any
    ec2: Any


def _not_found(err: ClientError) -> bool:
    return err.response.get("Error", {}).get("Code") == "ResourceNotFoundException"


def read_cluster(eks: Any, name: str) -> Cluster | None:
    try:
        cluster = eks.describe_cluster(name=name)["cluster"]
    except ClientError as err:
        if _not_found(err):
            return None
        raise
    network = cluster.get("resourcesVpcConfig", {})
    return Cluster(
        name=cluster["name"],
        version=cluster.get("version", ""),
        status=cluster.get("status", ""),
        oidc_issuer=cluster.get("identity", {}).get("oidc", {}).get("issuer"),
        auto_mode=bool(cluster.get("computeConfig", {}).get("enabled", False)),
        endpoint_public=bool(network.get("endpointPublicAccess", True)),
        public_access_cidrs=tuple(network.get("publicAccessCidrs", ("0.0.0.0/0",))),
        vpc_id=network.get("vpcId"),
    )


def read_addons(eks: Any, cluster: str, names: Iterable[str]) -> dict[str, Addon | None]:
    found: dict[str, Addon | None] = {}
    for name in names:
        try:
            addon = eks.describe_addon(clusterName=cluster, addonName=name)["addon"]
        except ClientError as err:
            if not _not_found(err):
                raise
            found[name] = None
        else:
            found[name] = Addon(
                name,
                addon.get("addonVersion", ""),
                addon.get("status", ""),
                addon.get("configurationValues"),
            )
    return found


def read_addon_versions(eks: Any, name: str, kubernetes_version: str) -> tuple[AddonVersion, ...]:
    """The versions of add-on ``name`` EKS offers for ``kubernetes_version``, each marked where
    its ``compatibilities`` entry for that version is the default (DescribeAddonVersions,
    https://docs.aws.amazon.com/eks/latest/APIReference/API_DescribeAddonVersions.html)."""
    pages = eks.get_paginator("describe_addon_versions").paginate(
        addonName=name, kubernetesVersion=kubernetes_version
    )
    found = []
    for page in pages:
        for addon in page["addons"]:
            if addon.get("addonName") != name:
                continue
            for offered in addon.get("addonVersions", []):
                compatible = [
                    c
                    for c in offered.get("compatibilities", [])
                    if c.get("clusterVersion") == kubernetes_version
                ]
                if compatible:
                    default = any(c.get("defaultVersion", False) for c in compatible)
                    found.append(AddonVersion(offered["addonVersion"], default))
    return tuple(found)


def read_nodegroups(eks: Any, cluster: str) -> tuple[NodeGroup, ...]:
    groups = []
    for page in eks.get_paginator("list_nodegroups").paginate(clusterName=cluster):
        for name in page["nodegroups"]:
            group = eks.describe_nodegroup(clusterName=cluster, nodegroupName=name)["nodegroup"]
            groups.append(
                NodeGroup(
                    name=name,
                    ami_type=group.get("amiType", ""),
                    instance_types=tuple(group.get("instanceTypes") or ()),
                    labels=dict(group.get("labels") or {}),
                    auto_repair=bool((group.get("nodeRepairConfig") or {}).get("enabled")),
                )
            )
    return tuple(groups)


#: EC2's ``ProcessorInfo.SupportedArchitectures`` as Kubernetes' ``kubernetes.io/arch`` names
#: them (aws/karpenter-provider-aws pkg/apis/v1/labels.go ``AWSToKubeArchitectures``).
KUBE_ARCH: Final = {"x86_64": "amd64", "arm64": "arm64"}


def read_nvidia_types(ec2: Any, instance_types: Iterable[str]) -> dict[str, str]:
    """Of ``instance_types``, those whose GpuInfo has an NVIDIA GPU, with their architecture."""
    types = sorted(set(instance_types))
    found: dict[str, str] = {}
    for i in range(0, len(types), TYPES_PER_CALL):
        pages = ec2.get_paginator("describe_instance_types").paginate(
            InstanceTypes=types[i : i + TYPES_PER_CALL]
        )
        for page in pages:
            for described in page["InstanceTypes"]:
                gpus = described.get("GpuInfo", {}).get("Gpus", [])
                if any(g.get("Manufacturer") == GPU_MANUFACTURER for g in gpus):
                    arches = described.get("ProcessorInfo", {}).get("SupportedArchitectures", [])
                    arch = next((KUBE_ARCH[a] for a in arches if a in KUBE_ARCH), "unknown")
                    found[described["InstanceType"]] = arch
    return found


def read_gpu_instances(
    ec2: Any, cluster: str, nodegroups: Iterable[NodeGroup]
) -> tuple[tuple[GpuInstance, ...], dict[str, str]]:
    """The cluster's running instances with NVIDIA GPUs, and which of their and the node
    groups' types have NVIDIA GPUs (with the type's architecture)."""
    instances = cluster_instances(ec2, cluster)
    types = {i["InstanceType"] for i in instances}
    nvidia = read_nvidia_types(ec2, types.union(*(g.instance_types for g in nodegroups)))
    found = []
    for i in instances:
        if i["InstanceType"] not in nvidia:
            continue
        tags = {t["Key"]: t["Value"] for t in i.get("Tags", [])}
        found.append(
            GpuInstance(
                instance_id=i["InstanceId"],
                instance_type=i["InstanceType"],
                node_name=i.get("PrivateDnsName", ""),
                arch=nvidia[i["InstanceType"]],
                nodegroup=tags.get("eks:nodegroup-name"),
                nodepool=tags.get("karpenter.sh/nodepool"),
                auto_mode=cluster_instance(i).auto_mode,
            )
        )
    return tuple(found), nvidia


def read_oidc_provider_arns(iam: Any) -> tuple[str, ...]:
    providers = iam.list_open_id_connect_providers()["OpenIDConnectProviderList"]
    return tuple(p["Arn"] for p in providers)


def read_existing_log_groups(logs: Any, names: Iterable[str]) -> frozenset[str]:
    """Of ``names``, those that exist. An exact name sorts first among those it prefixes."""
    existing = set()
    for name in names:
        page = logs.describe_log_groups(logGroupNamePrefix=name, limit=1)
        if any(g["logGroupName"] == name for g in page["logGroups"]):
            existing.add(name)
    return frozenset(existing)


def read_insights_alarms(cloudwatch: Any) -> tuple[str, ...]:
    """Metric alarms whose metrics include a Metrics Insights query (``SELECT ...``)."""
    names = []
    for page in cloudwatch.get_paginator("describe_alarms").paginate(AlarmTypes=["MetricAlarm"]):
        for alarm in page["MetricAlarms"]:
            expressions = (m.get("Expression", "") for m in alarm.get("Metrics", []))
            if any(e.lstrip().upper().startswith("SELECT ") for e in expressions):
                names.append(alarm["AlarmName"])
    return tuple(names)


def _read(unreadable: dict[str, str], fact: str, read: Callable[[], T], empty: T) -> T:
    try:
        return read()
    except ClientError as err:
        error = err.response.get("Error", {})
        unreadable[fact] = f"{error.get('Code', 'error')}: {error.get('Message', err)}"
        return empty


def read_node_repair(eks: Any, cluster: str) -> NodeRepair | None:
    """Auto Mode, the node groups' repair and the node monitoring agent, for ``status`` (None:
    no such cluster)."""
    found = read_cluster(eks, cluster)
    if found is None:
        return None
    agent = read_addons(eks, cluster, (NODE_MONITORING_ADDON,))[NODE_MONITORING_ADDON]
    return NodeRepair(found.auto_mode, read_nodegroups(eks, cluster), agent)


def gather(plan: Plan, clients: Clients, *, region: str) -> Facts:
    """Every fact the checks need, read-only."""
    unreadable: dict[str, str] = {}
    try:
        cluster = read_cluster(clients.eks, plan.cluster_name)
        addons: dict[str, Addon | None] = {}
        addon_versions: tuple[AddonVersion, ...] = ()
        nodegroups: tuple[NodeGroup, ...] = ()
        gpu_instances: tuple[GpuInstance, ...] = ()
        nvidia_types: dict[str, str] = {}
        uncovered: tuple[Uncovered, ...] = ()
        if cluster is not None:
            addons = _read(
                unreadable,
                "addons",
                lambda: read_addons(
                    clients.eks_addons,
                    plan.cluster_name,
                    PREFLIGHT_ADDONS,
                ),
                {},
            )
            if "addons" not in unreadable and needs_addon_versions(
                plan, addons.get(OBSERVABILITY_ADDON)
            ):
                addon_versions = _read(
                    unreadable,
                    "addon_versions",
                    lambda: read_addon_versions(
                        clients.eks_addons, OBSERVABILITY_ADDON, cluster.version
                    ),
                    (),
                )
            nodegroups = _read(
                unreadable,
                "nodegroups",
                lambda: read_nodegroups(clients.eks, plan.cluster_name),
                (),
            )
            if plan.exporter:
                nothing: tuple[tuple[GpuInstance, ...], dict[str, str]] = ((), {})
                gpu_instances, nvidia_types = _read(
                    unreadable,
                    "instances",
                    lambda: read_gpu_instances(clients.ec2, plan.cluster_name, nodegroups),
                    nothing,
                )
                if plan.silence_check:
                    uncovered = _read(
                        unreadable,
                        "silence_coverage",
                        lambda: read_uncovered(
                            clients.ec2,
                            plan.cluster_name,
                            DEFAULT_ARCHITECTURES,
                            seen_ids=read_ci_gpu_nodes(clients.cloudwatch, plan.cluster_name),
                        ),
                        (),
                    )
        log_groups = plan.fixed_log_groups + (
            (plan.required_log_group,) if plan.required_log_group else ()
        )
        return Facts(
            region=region,
            cluster=cluster,
            addons=addons,
            addon_versions=addon_versions,
            oidc_provider_arns=(
                _read(
                    unreadable, "oidc_providers", lambda: read_oidc_provider_arns(clients.iam), ()
                )
                if plan.credentials is AgentCredentials.IRSA
                else ()
            ),
            existing_log_groups=_read(
                unreadable,
                "log_groups",
                lambda: read_existing_log_groups(clients.logs, log_groups),
                frozenset(),
            ),
            insights_alarms=_read(
                unreadable, "alarms", lambda: read_insights_alarms(clients.cloudwatch), ()
            ),
            nodegroups=nodegroups,
            gpu_instances=gpu_instances,
            nvidia_instance_types=nvidia_types,
            silence_uncovered=uncovered,
            unreadable=unreadable,
        )
    except ClientError as err:  # describe_cluster itself refused: nothing can be checked
        raise PreflightAccessError(f"cannot describe cluster {plan.cluster_name}: {err}") from err
    except BotoCoreError as err:
        raise PreflightAccessError(str(err)) from err
