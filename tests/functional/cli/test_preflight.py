"""`gpu-insights preflight` against moto (EKS clusters and node groups, EC2 instances and
instance types, IAM OIDC providers, log groups, alarms) and botocore's Stubber on a real EKS
client for the add-on API moto lacks.

AWS behaviour relied on: DescribeAddon answers ResourceNotFoundException for an add-on that is
not installed (https://docs.aws.amazon.com/eks/latest/APIReference/API_DescribeAddon.html);
an IAM OIDC provider's ARN ends with its URL without ``https://``
(https://docs.aws.amazon.com/IAM/latest/UserGuide/id_roles_providers_create_oidc.html); a
Metrics Insights alarm holds its query as a metric's ``Expression``
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Create_Metrics_Insights_Alarm.html).
"""

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from cdk.settings import AgentCredentials, Settings, missing_cluster
from cli.demo.preflight import seed_cluster, stub_addons
from cli.demo.realistic.container_insights import NODE_GPU_DIMENSION_SETS, gpu_device
from cli.demo.realistic.nodes import (
    UNTAGGED,
    auto_mode_tags,
    karpenter_tags,
    managed_node_group_tags,
)
from cli.main import main
from cli.preflight.aws import Clients, gather, read_gpu_instances, read_nodegroups
from cli.preflight.checks import PREFLIGHT_ADDONS, Check, Verdict, plan_for, run_checks
from cli.preflight.command import as_json, table
from gpu_insights_agent.contract.metrics import ExporterSink
from lambdas.shared.container_insights_mode import ContainerInsightsMode

REGION = "us-east-1"
SELECT = 'SELECT AVG(CPUUtilization) FROM SCHEMA("AWS/EC2", InstanceId)'


@pytest.fixture
def session(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "t")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "t")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        yield boto3.Session(region_name=REGION)


def _clients(session: Any, addons: Any) -> Clients:
    return Clients(
        eks=session.client("eks"),
        eks_addons=addons,
        iam=session.client("iam"),
        logs=session.client("logs"),
        cloudwatch=session.client("cloudwatch"),
        ec2=session.client("ec2"),
    )


def _verdicts(checks: list[Check]) -> dict[str, Verdict]:
    return {c.name: c.verdict for c in checks}


def _preflight(
    session: Any,
    settings: Settings,
    installed: Mapping[str, tuple[str, ...]],
    versions: Sequence[Mapping[str, Any]] = (),
) -> list[Check]:
    """Every check on ``session``'s account; the add-on API answered by a Stubber: the add-ons
    ``installed``, and the pages of DescribeAddonVersions ``versions`` where preflight asks."""
    addons = session.client("eks")
    stubber = stub_addons(addons, settings.cluster_name, installed, versions=versions)
    plan = plan_for(settings)
    checks = run_checks(plan, gather(plan, _clients(session, addons), region=REGION))
    stubber.assert_no_pending_responses()
    return checks


def test_a_ready_cluster_passes_and_the_bottlerocket_group_warns(session: Any) -> None:
    seed_cluster(session.client("eks"), session.client("iam"), "train")
    checks = _preflight(
        session,
        Settings(cluster_name="train"),
        {"eks-pod-identity-agent": ("v1.3.8-eksbuild.2", "ACTIVE")},
    )
    assert _verdicts(checks) == {
        "cluster": Verdict.OK,
        "pod-identity-agent": Verdict.OK,
        "kubectl-version": Verdict.OK,
        "observability-addon": Verdict.OK,
        "serving-data-path": Verdict.OK,
        "log-groups": Verdict.OK,
        "insights-alarm-quota": Verdict.OK,
        "nodes:gpu-al2023": Verdict.OK,
        "nodes:gpu-bottlerocket": Verdict.WARN,
        "exporter-nodes": Verdict.OK,
        "silence-coverage": Verdict.OK,
        # moto's node groups have no nodeRepairConfig and the agent's add-on is not installed:
        # warnings, never failures (test_node_repair.py reads a group with repair on).
        "node-repair:gpu-al2023": Verdict.WARN,
        "node-repair:gpu-bottlerocket": Verdict.WARN,
        "node-repair:agent": Verdict.WARN,
    }


def test_preflight_names_the_mode_the_existing_add_on_runs(session: Any) -> None:
    """DescribeAddon's ``configurationValues`` ("The configuration values that you provided",
    API_DescribeAddon.html) hold the add-on's mode; a real EKS client parses the answer."""
    seed_cluster(session.client("eks"), session.client("iam"), "train")
    otel = json.dumps(
        {"otelContainerInsights": {"enabled": True}, "containerInsights": {"enabled": False}}
    )
    installed = {
        "eks-pod-identity-agent": ("v1.3.8-eksbuild.2", "ACTIVE"),
        "amazon-cloudwatch-observability": ("v6.2.0-eksbuild.1", "ACTIVE", otel),
    }
    classic = Settings(
        cluster_name="train",
        install_addon=False,
        container_insights_mode=ContainerInsightsMode.CLASSIC,
    )
    by_name = {c.name: c for c in _preflight(session, classic, installed)}
    addon = by_name["observability-addon"]
    assert addon.verdict is Verdict.WARN
    assert addon.detail == (
        "amazon-cloudwatch-observability v6.2.0-eksbuild.1 (ACTIVE) runs otel Container "
        "Insights, managed elsewhere, but container_insights_mode=classic: the analyzers "
        "would read classic series it does not send"
    )
    assert addon.fix == "-c container_insights_mode=otel"


#: DescribeAddonVersions --addon-name amazon-cloudwatch-observability --kubernetes-version 1.31
#: as AWS answered it on 2025-09-15 (aws-samples/one-observability-demo pull request #392): its
#: first entry, v4.4.0-eksbuild.1, then the latest and the default (the older entries after it
#: are left out).
VERSIONS_1_31: dict[str, Any] = {
    "addons": [
        {
            "addonName": "amazon-cloudwatch-observability",
            "type": "observability",
            "addonVersions": [
                {
                    "addonVersion": "v4.4.0-eksbuild.1",
                    "architecture": ["amd64", "arm64"],
                    "computeTypes": ["ec2", "hybrid", "auto"],
                    "compatibilities": [
                        {
                            "clusterVersion": "1.31",
                            "platformVersions": ["*"],
                            "defaultVersion": True,
                        }
                    ],
                    "requiresConfiguration": False,
                    "requiresIamPermissions": True,
                }
            ],
        }
    ]
}
#: A later page offering the first version with the OTLP endpoint ("available in version 8.0.0
#: and later", eks-observability-addon-otlp-endpoint.html), not the default.
VERSION_8 = {
    "addons": [
        {
            "addonName": "amazon-cloudwatch-observability",
            "type": "observability",
            "addonVersions": [
                {
                    "addonVersion": "v8.0.0-eksbuild.1",
                    "architecture": ["amd64", "arm64"],
                    "compatibilities": [
                        {
                            "clusterVersion": "1.31",
                            "platformVersions": ["*"],
                            "defaultVersion": False,
                        }
                    ],
                }
            ],
        }
    ]
}


@pytest.mark.parametrize(
    ("pages", "fix"),
    [
        ([VERSIONS_1_31], "no version EKS offers for Kubernetes 1.31 is v8.0.0-eksbuild.1 or "
         "later yet: -c exporter_sink=emf"),
        ([VERSIONS_1_31 | {"nextToken": "2"}, VERSION_8],
         "-c addon_version=v8.0.0-eksbuild.1 (the newest EKS offers for Kubernetes 1.31)"),
    ],
)  # fmt: skip
def test_the_otlp_sink_fails_on_the_default_add_on_eks_would_install(
    session: Any, pages: list[dict[str, Any]], fix: str
) -> None:
    """Without addon_version the stack's AWS::EKS::Addon gets EKS's default for the cluster's
    Kubernetes version ("The version with True in the Defaultversion column is the version that
    the add-on is created with, by default", creating-an-add-on.html); read through the real
    paginator, across pages."""
    seed_cluster(session.client("eks"), session.client("iam"), "train", kubernetes_version="1.31")
    settings = Settings(
        cluster_name="train",
        container_insights_mode=ContainerInsightsMode.OTEL,
        exporter_sink=ExporterSink.OTLP,
    )
    addons = session.client("eks")
    installed = {"eks-pod-identity-agent": ("v1.3.8-eksbuild.2", "ACTIVE")}
    stubber = stub_addons(addons, "train", installed, versions=pages, kubernetes_version="1.31")
    plan = plan_for(settings)
    checks = run_checks(plan, gather(plan, _clients(session, addons), region=REGION))
    stubber.assert_no_pending_responses()
    (addon,) = [c for c in checks if c.name == "observability-addon"]
    assert addon.verdict is Verdict.FAIL
    assert addon.detail == (
        "amazon-cloudwatch-observability not installed yet: without addon_version EKS installs "
        "its default for Kubernetes 1.31, v4.4.0-eksbuild.1, older than v8.0.0-eksbuild.1, "
        "which exporter_sink=otlp (the default in OTel mode) needs (the agent's OTLP endpoint)"
    )
    assert addon.fix == fix


def test_every_conflict_the_account_holds_fails_its_check(session: Any) -> None:
    eks, iam = session.client("eks"), session.client("iam")
    role = iam.create_role(RoleName="eks", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    eks.create_cluster(name="train", version="1.31", roleArn=role, resourcesVpcConfig={})
    eks.create_nodegroup(
        clusterName="train",
        nodegroupName="grace",
        amiType="AL2023_ARM_64_NVIDIA",
        instanceTypes=["g5g.16xlarge"],
        nodeRole=role,
        subnets=["subnet-1"],
    )
    eks.create_nodegroup(
        clusterName="train",
        nodegroupName="system",
        amiType="AL2023_x86_64_STANDARD",
        instanceTypes=["m7i.large"],
        nodeRole=role,
        subnets=["subnet-1"],
    )
    session.client("logs").create_log_group(logGroupName="/aws/gpu-insights/train/exporter")
    cloudwatch = session.client("cloudwatch")
    for i in range(198):  # other teams' Metrics Insights alarms: 198 + 3 is over 200
        cloudwatch.put_metric_alarm(
            AlarmName=f"team-{i}",
            EvaluationPeriods=1,
            Threshold=90.0,
            ComparisonOperator="GreaterThanThreshold",
            Metrics=[{"Id": "q", "Expression": SELECT, "Period": 300, "ReturnData": True}],
        )
    # Neither a metric math alarm nor a plain one counts.
    cloudwatch.put_metric_alarm(
        AlarmName="math",
        EvaluationPeriods=1,
        Threshold=1.0,
        ComparisonOperator="GreaterThanThreshold",
        Metrics=[
            {
                "Id": "m1",
                "ReturnData": False,
                "MetricStat": {
                    "Metric": {"Namespace": "N", "MetricName": "a"},
                    "Period": 60,
                    "Stat": "Sum",
                },
            },
            {"Id": "e", "Expression": "m1 * 2", "ReturnData": True},
        ],
    )
    cloudwatch.put_metric_alarm(
        AlarmName="plain",
        EvaluationPeriods=1,
        Threshold=1.0,
        Namespace="N",
        MetricName="a",
        Period=60,
        Statistic="Sum",
        ComparisonOperator="GreaterThanThreshold",
    )
    settings = Settings(
        cluster_name="train", kubectl_role_arn="arn:aws:iam::123456789012:role/eks-admin"
    )
    checks = _preflight(
        session, settings, {"amazon-cloudwatch-observability": ("v4.1.0-eksbuild.1", "ACTIVE")}
    )
    by_name = {c.name: c for c in checks}
    assert _verdicts(checks) == {
        "cluster": Verdict.OK,
        "pod-identity-agent": Verdict.FAIL,
        "kubectl-version": Verdict.FAIL,
        "kubectl-endpoint": Verdict.OK,
        "observability-addon": Verdict.FAIL,
        "serving-data-path": Verdict.OK,
        "log-groups": Verdict.OK,
        "insights-alarm-quota": Verdict.FAIL,
        "nodes:grace": Verdict.FAIL,
        # The Grace node group's g5g (arm64) type: left out by design, and said so.
        "exporter-nodes": Verdict.WARN,
        "silence-coverage": Verdict.OK,
        "node-repair:grace": Verdict.WARN,
        "node-repair:agent": Verdict.WARN,
    }
    assert by_name["insights-alarm-quota"].detail.startswith(
        # 6 GPU alarms and 48 job alarms (6 kinds in 8 job shards), and the 12 kinds' counts.
        "198 Metrics Insights alarms exist, this deployment adds 66 (fleet_gpus=400: 1 alarm "
        "shard(s)): 264 of the default quota"
    )
    assert by_name["log-groups"].detail.startswith(
        "/aws/gpu-insights/train/exporter exist(s) and will be adopted"
    )
    assert "cluster 1.31" in by_name["kubectl-version"].detail


#: One of the Amazon Linux images moto knows (its default image list).
IMAGE = "ami-12c6146b"


def _instance(
    ec2: Any, instance_type: str, tags: dict[str, str], *, stop: bool = False, image: str = IMAGE
) -> Any:
    (instance,) = ec2.run_instances(
        ImageId=image,
        MinCount=1,
        MaxCount=1,
        InstanceType=instance_type,
        # EC2 refuses a tag specification without a tag: an untagged instance has none.
        TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
        ]
        if tags
        else [],
    )["Instances"]
    if stop:
        ec2.stop_instances(InstanceIds=[instance["InstanceId"]])
    return instance


def test_every_gpu_node_of_the_cluster_is_checked_against_the_daemonset(session: Any) -> None:
    """The cluster's GPU nodes as EC2 shows them: a managed node group's (on the accelerated AMI,
    no GPU label), Karpenter's, a self-managed one, and a node group with none running; not a
    CPU node, another cluster's GPU node, or a stopped one."""
    eks, ec2 = session.client("eks"), session.client("ec2")
    seed_cluster(eks, session.client("iam"), "train")  # gpu-al2023 (p5), gpu-bottlerocket (g6e)
    owned = {"kubernetes.io/cluster/train": "owned"}
    managed = _instance(ec2, "p5.48xlarge", {**owned, "eks:nodegroup-name": "gpu-al2023"})
    _instance(ec2, "g6e.12xlarge", {**owned, "karpenter.sh/nodepool": "gpu"})
    self_managed = _instance(ec2, "g5.12xlarge", owned)
    _instance(ec2, "m7i.2xlarge", owned)
    _instance(ec2, "p5.48xlarge", {"kubernetes.io/cluster/other": "owned"})
    _instance(ec2, "p4d.24xlarge", owned, stop=True)
    settings = Settings(cluster_name="train")
    installed = {"eks-pod-identity-agent": ("v1.3.8-eksbuild.2", "ACTIVE")}
    (reach,) = [c for c in _preflight(session, settings, installed) if c.name == "exporter-nodes"]
    assert (reach.verdict, reach.detail) == (
        Verdict.OK,
        "the exporter's DaemonSet selects 4 of the 4 NVIDIA GPU nodes AWS shows (running "
        "instances; node group types with none running) (g5.12xlarge, g6e.12xlarge, p5.48xlarge)",
    )
    # The same cluster under a DaemonSet that knew labels alone (the GPU Operator's, Karpenter's):
    # every node without one is named, with why, and the check fails.
    addons = session.client("eks")
    stub_addons(addons, "train", installed)
    plan = plan_for(settings)
    labels_only = tuple(
        t
        for t in plan.exporter_node_terms
        if t["matchExpressions"][0]["key"]
        in {"nvidia.com/gpu.present", "karpenter.k8s.aws/instance-gpu-manufacturer"}
    )
    facts = gather(plan, _clients(session, addons), region=REGION)
    (reach,) = [
        c
        for c in run_checks(replace(plan, exporter_node_terms=labels_only), facts)
        if c.name == "exporter-nodes"
    ]
    assert reach.verdict is Verdict.FAIL
    assert reach.detail.partition("; it misses ")[2].startswith(
        "node group gpu-bottlerocket (g6e.12xlarge, none running), "
        f"{managed['PrivateDnsName']} ({managed['InstanceId']}, p5.48xlarge, node group "
        f"gpu-al2023), {self_managed['PrivateDnsName']} ({self_managed['InstanceId']}, "
        "g5.12xlarge, self-managed): no GPU mark AWS can see"
    )
    assert "-c gpu_node_labels=eks.amazonaws.com/nodegroup=gpu-al2023" in reach.fix


def _ci_node_series(cloudwatch: Any, cluster: str, instance: Any) -> None:
    """Container Insights' node_gpu_power_draw for a node, in the agent's dimension sets."""
    full = {
        "ClusterName": cluster,
        "NodeName": instance["PrivateDnsName"],
        "InstanceId": instance["InstanceId"],
        "InstanceType": instance["InstanceType"],
        "GpuDevice": gpu_device(0),
    }
    cloudwatch.put_metric_data(
        Namespace="ContainerInsights",
        MetricData=[
            {
                "MetricName": "node_gpu_power_draw",
                "Dimensions": [{"Name": d, "Value": full[d]} for d in dimensions],
                "Value": 150.0,
            }
            for dimensions in NODE_GPU_DIMENSION_SETS
        ],
    )


def test_every_gpu_instance_the_silence_check_does_not_cover_is_named(session: Any) -> None:
    """The cluster's running NVIDIA GPU instances as each path tags them: a managed node
    group's and Karpenter's are covered; EKS Auto Mode's (no exporter there) and an arm64 one
    (no exporter image) warn; a self-managed one launched without a tag, which Container
    Insights saw as a node of the cluster, fails with the tag to add. An untagged instance
    nothing ties to the cluster, and another cluster's untagged node, are not named."""
    eks, ec2, cloudwatch = (
        session.client("eks"),
        session.client("ec2"),
        session.client("cloudwatch"),
    )
    seed_cluster(eks, session.client("iam"), "train")
    _instance(ec2, "p5.48xlarge", managed_node_group_tags("train", "gpu-al2023"))
    _instance(ec2, "g6e.12xlarge", karpenter_tags("train", "gpu", "default"))
    auto = _instance(ec2, "p5.48xlarge", auto_mode_tags("train", "gpu"))
    arm64 = ec2.describe_images(Filters=[{"Name": "architecture", "Values": ["arm64"]}])
    grace = _instance(
        ec2,
        "g5g.xlarge",
        managed_node_group_tags("train", "grace"),
        image=arm64["Images"][0]["ImageId"],
    )
    untagged = _instance(ec2, "g5.12xlarge", UNTAGGED)
    _ci_node_series(cloudwatch, "train", untagged)
    _instance(ec2, "g5.12xlarge", UNTAGGED)  # nothing says whose
    others = _instance(ec2, "g5.12xlarge", UNTAGGED)
    _ci_node_series(cloudwatch, "other", others)
    settings = Settings(cluster_name="train")
    installed = {"eks-pod-identity-agent": ("v1.3.8-eksbuild.2", "ACTIVE")}
    checks = _preflight(session, settings, installed)
    named = {c.name: c for c in checks if c.name.startswith("silence-coverage")}
    no_tag_helps = "none by tag: Container Insights' GPU metrics are all that watch its GPUs"

    def line(instance: Any) -> str:
        return f"{instance['InstanceType']} {instance['PrivateDnsName']}: "

    assert {n: (c.verdict, c.detail, c.fix) for n, c in named.items()} == {
        f"silence-coverage:{auto['InstanceId']}": (
            Verdict.WARN,
            line(auto) + "an EKS Auto Mode node: the exporter does not run there, so the "
            "silence check expects nothing of it",
            no_tag_helps,
        ),
        f"silence-coverage:{grace['InstanceId']}": (
            Verdict.WARN,
            line(grace) + "arm64: the exporter's image runs on x86_64 only, so the silence "
            "check expects nothing of it",
            no_tag_helps,
        ),
        f"silence-coverage:{untagged['InstanceId']}": (
            Verdict.FAIL,
            line(untagged) + "no tag names it cluster train's (it is node "
            f"{untagged['PrivateDnsName']} of the cluster in Container Insights' "
            "node_gpu_power_draw series), so the silence check does not see it",
            "tag it kubernetes.io/cluster/train=owned, in its launch template or Auto Scaling "
            "group (propagated at launch) so that its replacements carry it too",
        ),
    }
    # One line per instance in the table, and one entry each in --json.
    text = table(checks).splitlines()
    assert f"FAIL silence-coverage:{untagged['InstanceId']}" in "\n".join(text)
    assert sum(1 for t in text if "silence-coverage:" in t) == 3
    document = json.loads(as_json(checks, cluster="train", region=REGION))
    entry = next(c for c in document["checks"] if c["check"].endswith(untagged["InstanceId"]))
    assert entry["verdict"] == "fail"
    assert entry["fix"].startswith("tag it kubernetes.io/cluster/train=owned")
    # A tag is all it takes: tagged as the fix says, it is covered, and nothing fails.
    ec2.create_tags(
        Resources=[untagged["InstanceId"]],
        Tags=[{"Key": "kubernetes.io/cluster/train", "Value": "owned"}],
    )
    checks = _preflight(session, settings, installed)
    assert sorted(c.verdict for c in checks if c.name.startswith("silence-coverage")) == [
        Verdict.WARN,
        Verdict.WARN,
    ]


def test_a_node_group_s_labels_are_read_for_the_daemonset(session: Any) -> None:
    eks, iam = session.client("eks"), session.client("iam")
    role = iam.create_role(RoleName="eks", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    eks.create_cluster(name="train", version="1.33", roleArn=role, resourcesVpcConfig={})
    eks.create_nodegroup(
        clusterName="train",
        nodegroupName="gpu",
        amiType="AL2023_x86_64_NVIDIA",
        instanceTypes=["p5.48xlarge"],
        labels={"example.com/accelerator": "h100"},
        nodeRole=role,
        subnets=["subnet-1"],
    )
    clients = _clients(session, session.client("eks"))
    nodegroups = read_nodegroups(clients.eks, "train")
    assert nodegroups[0].labels == {"example.com/accelerator": "h100"}
    instances, types = read_gpu_instances(clients.ec2, "train", nodegroups)
    assert (instances, types) == ((), {"p5.48xlarge": "amd64"})


def test_irsa_finds_the_provider_of_the_clusters_issuer(session: Any) -> None:
    eks, iam = session.client("eks"), session.client("iam")
    seed_cluster(eks, iam, "train")
    issuer = eks.describe_cluster(name="train")["cluster"]["identity"]["oidc"]["issuer"]
    settings = Settings(
        cluster_name="train",
        agent_credentials=AgentCredentials.IRSA,
        oidc_provider_arn="arn:aws:iam::123456789012:oidc-provider/x",
    )
    checks = _preflight(session, settings, {})
    (missing,) = [c for c in checks if c.name == "oidc-provider"]
    assert missing.verdict is Verdict.FAIL
    assert missing.detail == f"no IAM OIDC provider for the cluster's issuer {issuer}"
    arn = iam.create_open_id_connect_provider(
        Url=issuer, ThumbprintList=["9e99a48a9960b14926bb7f3b02e22da2b0ab7280"]
    )["OpenIDConnectProviderArn"]
    checks = _preflight(
        session,
        Settings(
            cluster_name="train", agent_credentials=AgentCredentials.IRSA, oidc_provider_arn=arn
        ),
        {},
    )
    (found,) = [c for c in checks if c.name == "oidc-provider"]
    assert (found.verdict, found.detail) == (Verdict.OK, f"IAM OIDC provider {arn}")


def test_auto_mode_needs_no_agent_add_on_and_warns_about_the_exporter(session: Any) -> None:
    # moto's DescribeCluster has no computeConfig: the EKS client is stubbed whole here.
    eks = session.client("eks")
    stubber = Stubber(eks)
    cluster = {
        "name": "auto",
        "version": "1.34",
        "status": "ACTIVE",
        "computeConfig": {"enabled": True, "nodePools": ["general-purpose"]},
    }
    stubber.add_response("describe_cluster", {"cluster": cluster}, {"name": "auto"})
    for name in PREFLIGHT_ADDONS:
        stubber.add_client_error(
            "describe_addon",
            "ResourceNotFoundException",
            http_status_code=404,
            expected_params={"clusterName": "auto", "addonName": name},
        )
    stubber.add_response("list_nodegroups", {"nodegroups": []}, {"clusterName": "auto"})
    stubber.activate()
    clients = Clients(
        eks=eks,
        eks_addons=eks,
        iam=session.client("iam"),
        logs=session.client("logs"),
        cloudwatch=session.client("cloudwatch"),
        ec2=session.client("ec2"),
    )
    plan = plan_for(Settings(cluster_name="auto"))
    checks = run_checks(plan, gather(plan, clients, region=REGION))
    stubber.assert_no_pending_responses()
    by_name = {c.name: c for c in checks}
    assert by_name["pod-identity-agent"].detail == "built into EKS Auto Mode nodes"
    assert by_name["pod-identity-agent"].verdict is Verdict.OK
    assert by_name["nodes:auto-mode"].verdict is Verdict.WARN
    # Auto Mode repairs its nodes whatever the add-ons: one line, OK, and no agent line.
    assert by_name["node-repair:auto-mode"].verdict is Verdict.OK
    assert "node-repair:agent" not in by_name
    assert by_name["cluster"].detail == "auto: Kubernetes 1.34, ACTIVE, EKS Auto Mode"


KUBECTL_ROLE = "arn:aws:iam::123456789012:role/eks-admin"


@pytest.mark.parametrize(
    ("vpc_config", "network", "verdict", "said"),
    [
        # "endpointPublicAccess": false, private access on: reachable from the VPC only
        # (https://docs.aws.amazon.com/eks/latest/userguide/cluster-endpoint.html).
        (
            {"endpointPublicAccess": False, "endpointPrivateAccess": True},
            {},
            Verdict.FAIL,
            "private only",
        ),
        (
            {"endpointPublicAccess": True, "publicAccessCidrs": ["203.0.113.0/24"]},
            {},
            Verdict.WARN,
            "public only to 203.0.113.0/24",
        ),
        (
            {"endpointPublicAccess": False, "endpointPrivateAccess": True},
            {
                "kubectl_vpc_id": "vpc-0a1b2c3d",
                "kubectl_subnet_ids": ("subnet-0a1b2c3d",),
                "kubectl_security_group_id": "sg-0a1b2c3d",
            },
            Verdict.OK,
            "runs in vpc-0a1b2c3d",
        ),
        ({"endpointPublicAccess": True}, {}, Verdict.OK, "public endpoint"),
    ],
)
def test_the_kubectl_provider_must_reach_the_api_endpoint(
    session: Any, vpc_config: dict[str, Any], network: dict[str, Any], verdict: Verdict, said: str
) -> None:
    eks, iam = session.client("eks"), session.client("iam")
    role = iam.create_role(RoleName="eks", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    eks.create_cluster(
        name="ml-prod",
        version="1.33",
        roleArn=role,
        resourcesVpcConfig={"subnetIds": ["subnet-0a1b2c3d"], **vpc_config},
    )
    settings = Settings(cluster_name="ml-prod", kubectl_role_arn=KUBECTL_ROLE, **network)
    (check,) = [c for c in _preflight(session, settings, {}) if c.name == "kubectl-endpoint"]
    assert check.verdict is verdict
    assert said in check.detail
    if verdict is not Verdict.OK:
        assert "kubectl_subnet_ids" in check.fix


def test_a_denied_read_fails_its_check_and_names_the_error(session: Any) -> None:
    seed_cluster(session.client("eks"), session.client("iam"), "train")
    cloudwatch = session.client("cloudwatch")
    stubber = Stubber(cloudwatch)
    # The silence check's coverage first lists Container Insights' node GPU series: none.
    stubber.add_response(
        "list_metrics",
        {"Metrics": []},
        {
            "Namespace": "ContainerInsights",
            "MetricName": "node_gpu_power_draw",
            "Dimensions": [{"Name": "ClusterName", "Value": "train"}],
            "RecentlyActive": "PT3H",
        },
    )
    stubber.add_client_error(
        "describe_alarms",
        "AccessDenied",
        "not authorized to perform: cloudwatch:DescribeAlarms",
        http_status_code=403,
        expected_params={"AlarmTypes": ["MetricAlarm"]},
    )
    stubber.activate()
    addons = session.client("eks")
    stub_addons(addons, "train", {"eks-pod-identity-agent": ("v1", "ACTIVE")})
    clients = Clients(
        eks=session.client("eks"),
        eks_addons=addons,
        iam=session.client("iam"),
        logs=session.client("logs"),
        cloudwatch=cloudwatch,
        ec2=session.client("ec2"),
    )
    plan = plan_for(Settings(cluster_name="train"))
    checks = run_checks(plan, gather(plan, clients, region=REGION))
    (quota,) = [c for c in checks if c.name == "insights-alarm-quota"]
    assert quota.verdict is Verdict.FAIL
    assert quota.detail == (
        "could not read: AccessDenied: not authorized to perform: cloudwatch:DescribeAlarms"
    )


def test_command_exits_1_on_a_missing_cluster_and_prints_json(
    session: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    empty = tmp_path / "cdk.json"
    empty.write_text("{}")
    status = main(
        [
            "preflight",
            "-c",
            "cluster_name=gone",
            "--region",
            REGION,
            "--json",
            "--cdk-json",
            str(empty),
        ]
    )
    assert status == 1
    document = json.loads(capsys.readouterr().out)
    assert document["failed"] is True
    assert document["checks"][0] == {
        "check": "cluster",
        "verdict": "fail",
        "detail": f"no EKS cluster 'gone' in {REGION}",
        "fix": "name the cluster with -c cluster_name=NAME and its Region with --region",
    }


@pytest.mark.parametrize(
    ("cdk_json", "argv", "said"),
    [
        ({}, [], missing_cluster("--cluster-name")),
        ({"cluster": "ml-prod"}, [], "unknown setting 'cluster': did you mean 'cluster_name'?"),
        ({}, ["-c", "cluster=ml-prod"], "unknown setting 'cluster': did you mean 'cluster_name'?"),
        (
            {"cluster_name": "ml-prod", "sns_topic_arn": "arn:aws:sns:us-west-2:1:oncall"},
            [],
            "unknown setting 'sns_topic_arn': did you mean 'critical_topic_arn'?",
        ),
        (
            {"@aws-cdk/core:newStyleStackSynthesis": True},
            ["-c", "sns_topic_arn=arn:aws:sns:us-west-2:1:oncall"],
            "unknown setting 'sns_topic_arn': did you mean 'critical_topic_arn'?",
        ),
    ],
)
def test_command_refuses_what_synth_refuses_in_the_same_words(
    cdk_json: dict[str, Any],
    argv: list[str],
    said: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """Preflight reads the settings as `cdk synth` does (cdk.json, then -c) and refuses a key
    that is not a setting, or a missing cluster name, with synth's own line (naming its own
    --cluster-name first for the cluster)
    (tests/unit/cdk/test_app.py), exit 2."""
    path = tmp_path / "cdk.json"
    path.write_text(json.dumps({"context": cdk_json}))
    assert main(["preflight", "--cdk-json", str(path), *argv]) == 2
    assert capsys.readouterr().err == f"gpu-insights preflight: {said}\n"


def test_command_refuses_otel_mode_where_aws_does_not_offer_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """OTel Container Insights in a Region AWS does not offer it in (OTEL_REGIONS): refused,
    exit 2, in synth's one line, whether the Region is the setting's or ``--region``'s."""
    path = tmp_path / "cdk.json"
    path.write_text(json.dumps({"context": {"cluster_name": "t"}}))
    otel = ["-c", "container_insights_mode=otel"]
    for where in (["--region", "eu-central-1"], ["-c", "region=eu-central-1"]):
        assert main(["preflight", "--cdk-json", str(path), *otel, *where]) == 2
        said = capsys.readouterr().err
        assert said.startswith("gpu-insights preflight: setting container_insights_mode='otel'")
        assert "-c container_insights_mode=classic in eu-central-1" in said
        assert said.count("\n") == 1


def test_command_takes_cdk_s_own_keys_beside_the_settings(
    session: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "cdk.json"
    flags = {"@aws-cdk/core:newStyleStackSynthesis": True, "acknowledged-issue-numbers": [1]}
    path.write_text(json.dumps({"context": {**flags, "cluster_name": "gone"}}))
    argv = ["preflight", "--cdk-json", str(path), "--region", REGION, "--json"]
    assert main([*argv, "-c", "@aws-cdk/aws-lambda:recognizeLayerVersion=true"]) == 1
    assert json.loads(capsys.readouterr().out)["checks"][0]["detail"] == (
        f"no EKS cluster 'gone' in {REGION}"
    )
