"""The demo's preflight: `gpu-insights preflight`'s checks against the demo's moto account.

moto has the EKS cluster, node group, IAM, Logs and CloudWatch APIs, not the EKS add-on API:
the add-on reads go to a real EKS client with botocore's Stubber answering them.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from botocore.stub import Stubber

from cdk.settings import Settings
from cli.preflight.aws import Clients, gather
from cli.preflight.checks import (
    OBSERVABILITY_ADDON,
    POD_IDENTITY_ADDON,
    PREFLIGHT_ADDONS,
    plan_for,
    run_checks,
)
from cli.preflight.command import table

#: The demo cluster's GPU node groups: one the exporter suits, one where it sees no GPU.
NODEGROUPS = {
    "gpu-al2023": ("AL2023_x86_64_NVIDIA", "p5.48xlarge"),
    "gpu-bottlerocket": ("BOTTLEROCKET_x86_64_NVIDIA", "g6e.12xlarge"),
}
KUBERNETES_VERSION = "1.33"
POD_IDENTITY_VERSION = "v1.3.8-eksbuild.2"


def seed_cluster(
    eks: Any, iam: Any, cluster: str, *, kubernetes_version: str = KUBERNETES_VERSION
) -> None:
    """The cluster and its node groups, as the demo's account holds them (moto)."""
    role = iam.create_role(
        RoleName=f"{cluster}-eks",
        AssumeRolePolicyDocument='{"Version": "2012-10-17", "Statement": []}',
    )["Role"]["Arn"]
    eks.create_cluster(
        name=cluster, version=kubernetes_version, roleArn=role, resourcesVpcConfig={}
    )
    for name, (ami, instance) in NODEGROUPS.items():
        eks.create_nodegroup(
            clusterName=cluster,
            nodegroupName=name,
            amiType=ami,
            instanceTypes=[instance],
            nodeRole=role,
            subnets=["subnet-0demo"],
        )


def stub_addons(
    eks: Any,
    cluster: str,
    installed: Mapping[str, tuple[str, ...]],
    *,
    versions: Sequence[Mapping[str, Any]] = (),
    kubernetes_version: str = KUBERNETES_VERSION,
) -> Stubber:
    """A Stubber that answers preflight's describe_addon calls, in their order, for the
    add-ons ``installed`` names (version, status, and its configuration values where given);
    the others are not found. ``versions``: the pages of DescribeAddonVersions it answers next
    for the observability add-on on ``kubernetes_version``, where preflight asks."""
    stubber = Stubber(eks)
    for name in PREFLIGHT_ADDONS:
        params = {"clusterName": cluster, "addonName": name}
        if name in installed:
            version, status, *values = installed[name]
            addon = {
                "addonName": name,
                "clusterName": cluster,
                "addonVersion": version,
                "status": status,
            }
            if values:
                addon["configurationValues"] = values[0]
            stubber.add_response("describe_addon", {"addon": addon}, params)
        else:
            stubber.add_client_error(
                "describe_addon",
                service_error_code="ResourceNotFoundException",
                service_message=f"No addon: {name} found in cluster: {cluster}",
                http_status_code=404,
                expected_params=params,
            )
    params = {"addonName": OBSERVABILITY_ADDON, "kubernetesVersion": kubernetes_version}
    for i, page in enumerate(versions):
        token = {"nextToken": versions[i - 1]["nextToken"]} if i else {}
        stubber.add_response("describe_addon_versions", dict(page), params | token)
    stubber.activate()
    return stubber


def run_preflight(session: Any, settings: Settings) -> list[str]:
    """Seed the cluster, run every check as `gpu-insights preflight` does, return its lines."""
    cluster = settings.cluster_name
    eks, iam = session.client("eks"), session.client("iam")
    seed_cluster(eks, iam, cluster)
    addons = session.client("eks")
    stubber = stub_addons(addons, cluster, {POD_IDENTITY_ADDON: (POD_IDENTITY_VERSION, "ACTIVE")})
    clients = Clients(
        eks=eks,
        eks_addons=addons,
        iam=iam,
        logs=session.client("logs"),
        cloudwatch=session.client("cloudwatch"),
        ec2=session.client("ec2"),
    )
    plan = plan_for(settings)
    checks = run_checks(plan, gather(plan, clients, region=session.region_name))
    stubber.assert_no_pending_responses()
    return table(checks).splitlines()
