"""Preflight's verdicts on plain data. The rules' sources are cited in cli/preflight/checks.py:
kubectl's skew (kubernetes.io/releases/version-skew-policy/#kubectl), the Metrics Insights
alarm quota (docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-limits.html), the
Pod Identity Agent built into Auto Mode (docs.aws.amazon.com/eks/latest/userguide/
pod-id-agent-setup.html), Bottlerocket's NVIDIA_VISIBLE_DEVICES setting (bottlerocket.dev
.../api/settings/nvidia-container-runtime)."""

import json
from dataclasses import replace

import pytest

from cdk.alarms.serving_classic import CLASSIC_SERVING_ALARM_KINDS
from cdk.alarms.sizing import INSIGHTS_ALARM_QUOTA
from cdk.settings import AgentCredentials, Settings, settings_from_context
from cli.preflight.checks import (
    OBSERVABILITY_ADDON,
    Addon,
    AddonVersion,
    Cluster,
    Facts,
    GpuInstance,
    NodeGroup,
    Verdict,
    addon_modes,
    check_exporter_reach,
    check_insights_quota,
    check_kubectl,
    check_log_groups,
    check_nodegroup,
    check_nodes,
    check_observability_addon,
    check_oidc_provider,
    check_pod_identity,
    check_serving_paths,
    needs_addon_versions,
    plan_for,
    run_checks,
)
from gpu_insights_agent.contract.metrics import ExporterSink
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.silence_check.coverage import Uncovered

CLUSTER = Cluster(
    "train", "1.33", "ACTIVE", "https://oidc.eks.us-east-1.amazonaws.com/id/ABC", False
)
#: The GPU alarms alone (the 48 job alarms are counted in test_the_job_alarms_count_too), in
#: OTel mode, the one the add-on checks below are about.
PLAN = plan_for(
    Settings(
        cluster_name="train",
        job_alarms=False,
        container_insights_mode=ContainerInsightsMode.OTEL,
    )
)
PROVIDER = "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/ABC"


def facts(**kwargs: object) -> Facts:
    return replace(Facts(region="us-east-1", cluster=CLUSTER), **kwargs)  # type: ignore[arg-type]


def test_plan_names_what_the_stacks_create_by_name_and_its_insights_alarms() -> None:
    assert PLAN.fixed_log_groups == (
        "/aws/gpu-insights/train/exporter",
        "/aws/gpu-insights/train/training",
    )
    assert PLAN.required_log_group is None
    # The per-GPU kinds query Metrics Insights (one shard at the default fleet size).
    assert PLAN.insights_alarms == (
        "gpu-insights-train-gpu-low-power",
        "gpu-insights-train-gpu-lost",
        "gpu-insights-train-gpu-ecc-uncorrected",
        "gpu-insights-train-gpu-thermal-throttling",
        "gpu-insights-train-gpu-power-brake",
        "gpu-insights-train-gpu-silent",  # one alarm, not one per shard
        # and each kind's fleet count, a count over a Metrics Insights query too
        "gpu-insights-train-gpu-low-power-at-cap",
        "gpu-insights-train-gpu-lost-at-cap",
        "gpu-insights-train-gpu-ecc-uncorrected-at-cap",
        "gpu-insights-train-gpu-thermal-throttling-at-cap",
        "gpu-insights-train-gpu-power-brake-at-cap",
        "gpu-insights-train-gpu-silent-at-cap",
    )
    without_exporter = Settings(
        cluster_name="train",
        exporter_enabled=False,
        gpu_instance_type="p5.48xlarge",
        job_alarms=False,
        container_insights_mode=ContainerInsightsMode.CLASSIC,
    )
    # and Classic's serving alarms on the servers' counters and gauges (serving_metrics).
    serving = tuple(f"gpu-insights-train-{kind}" for kind in CLASSIC_SERVING_ALARM_KINDS)
    assert plan_for(without_exporter).insights_alarms == (
        "gpu-insights-train-gpu-low-power",
        *serving,
        "gpu-insights-train-gpu-low-power-at-cap",
        *(f"{name}-at-cap" for name in serving),
    )
    unserved = replace(without_exporter, serving_metrics=False)
    assert plan_for(unserved).insights_alarms == (
        "gpu-insights-train-gpu-low-power",
        "gpu-insights-train-gpu-low-power-at-cap",
    )
    # In OTel mode (the default) that alarm is a PromQL alarm, no Metrics Insights query.
    otel = replace(without_exporter, container_insights_mode=ContainerInsightsMode.OTEL)
    assert plan_for(otel).insights_alarms == ()


@pytest.mark.parametrize(
    ("version", "verdict"),
    [("1.31", Verdict.FAIL), ("1.32", Verdict.OK), ("1.33", Verdict.OK), ("1.34", Verdict.OK),
     ("1.35", Verdict.FAIL)],
)  # fmt: skip
def test_kubectl_layer_allows_one_minor_version_either_side(version: str, verdict: Verdict) -> None:
    plan = replace(PLAN, kubectl_used=True)
    assert check_kubectl(plan, replace(CLUSTER, version=version)).verdict is verdict


def test_kubectl_is_no_concern_without_a_kubectl_role() -> None:
    check = check_kubectl(PLAN, replace(CLUSTER, version="1.29"))
    assert check.verdict is Verdict.OK
    assert "no kubectl_role_arn" in check.detail


@pytest.mark.parametrize(
    ("status", "verdict"),
    [("ACTIVE", Verdict.OK), ("CREATING", Verdict.WARN), ("DEGRADED", Verdict.FAIL),
     ("CREATE_FAILED", Verdict.FAIL)],
)  # fmt: skip
def test_pod_identity_agent_must_be_active(status: str, verdict: Verdict) -> None:
    addon = Addon("eks-pod-identity-agent", "v1.3.4-eksbuild.1", status)
    check = check_pod_identity(facts(addons={"eks-pod-identity-agent": addon}), CLUSTER)
    assert check.verdict is verdict
    assert check.detail == f"add-on eks-pod-identity-agent v1.3.4-eksbuild.1 is {status}"


def test_missing_pod_identity_agent_fails_with_the_command_that_installs_it() -> None:
    check = check_pod_identity(facts(addons={"eks-pod-identity-agent": None}), CLUSTER)
    assert check.verdict is Verdict.FAIL
    assert check.fix.startswith(
        "aws eks create-addon --cluster-name train --addon-name eks-pod-identity-agent"
    )


def test_auto_mode_has_the_agent_built_in_but_managed_node_groups_do_not() -> None:
    auto = replace(CLUSTER, auto_mode=True)
    no_addon = {"eks-pod-identity-agent": None}
    assert check_pod_identity(facts(addons=no_addon), auto).verdict is Verdict.OK
    mixed = facts(addons=no_addon, nodegroups=(NodeGroup("system", "AL2023_x86_64_STANDARD"),))
    check = check_pod_identity(mixed, auto)
    assert check.verdict is Verdict.FAIL
    assert "1 managed node group(s)" in check.detail


def test_irsa_needs_the_provider_of_the_clusters_issuer() -> None:
    plan = replace(PLAN, credentials=AgentCredentials.IRSA, oidc_provider_arn=PROVIDER)
    other = PROVIDER.replace("ABC", "XYZ")
    assert check_oidc_provider(plan, facts(oidc_provider_arns=(PROVIDER,)), CLUSTER).verdict is (
        Verdict.OK
    )
    missing = check_oidc_provider(plan, facts(oidc_provider_arns=(other,)), CLUSTER)
    assert missing.verdict is Verdict.FAIL
    assert missing.fix == "eksctl utils associate-iam-oidc-provider --cluster train --approve"
    wrong_setting = check_oidc_provider(
        replace(plan, oidc_provider_arn=other),
        facts(oidc_provider_arns=(other, PROVIDER)),
        CLUSTER,
    )
    assert wrong_setting.verdict is Verdict.FAIL
    assert wrong_setting.fix == f"-c oidc_provider_arn={PROVIDER}"


def test_an_installed_observability_addon_conflicts_unless_managed_elsewhere() -> None:
    installed = {"amazon-cloudwatch-observability": Addon("x", "v4.1.0-eksbuild.1", "ACTIVE")}
    conflict = check_observability_addon(PLAN, facts(addons=installed), CLUSTER)
    assert conflict.verdict is Verdict.FAIL
    assert "already exists" in conflict.detail
    assert "install_addon=false" in conflict.fix
    # An add-on without configuration values runs the chart's default, Classic.
    elsewhere = replace(PLAN, install_addon=False, mode=ContainerInsightsMode.CLASSIC)
    assert check_observability_addon(elsewhere, facts(addons=installed), CLUSTER).verdict is (
        Verdict.OK
    )
    absent = {"amazon-cloudwatch-observability": None}
    assert check_observability_addon(elsewhere, facts(addons=absent), CLUSTER).verdict is (
        Verdict.WARN
    )
    assert check_observability_addon(PLAN, facts(addons=absent), CLUSTER).verdict is Verdict.OK


def test_an_existing_agent_log_group_is_adopted_not_a_conflict() -> None:
    # The stacks make these groups idempotently (cdk/constructs/agent_log_group.py), so a
    # group the agent wrote first, or one left by `cdk destroy`, is kept and adopted.
    (check,) = check_log_groups(
        PLAN, facts(existing_log_groups=frozenset({"/aws/gpu-insights/train/training"}))
    )
    assert check.verdict is Verdict.OK
    assert check.detail == (
        "/aws/gpu-insights/train/training exist(s) and will be adopted (data kept); "
        "/aws/gpu-insights/train/exporter will be created; retention set to 30 days"
    )
    (fine,) = check_log_groups(PLAN, facts())
    assert fine.verdict is Verdict.OK
    assert fine.detail.startswith("/aws/gpu-insights/train/exporter, /aws/gpu-insights/train/")


def test_the_host_log_filter_needs_its_log_group() -> None:
    plan = plan_for(Settings(cluster_name="train", xid_host_log_filter=True))
    _, host = check_log_groups(plan, facts())
    assert host.verdict is Verdict.FAIL
    assert host.detail == (
        "xid_host_log_filter needs /aws/containerinsights/train/host, which does not exist yet"
    )
    _, present = check_log_groups(
        plan, facts(existing_log_groups=frozenset({"/aws/containerinsights/train/host"}))
    )
    assert present.verdict is Verdict.OK


@pytest.mark.parametrize(
    ("existing", "verdict"),
    [(0, Verdict.OK), (168, Verdict.OK), (169, Verdict.WARN), (188, Verdict.WARN),
     (189, Verdict.FAIL)],
)  # fmt: skip
def test_insights_alarms_count_against_the_quota_of_200(existing: int, verdict: Verdict) -> None:
    assert INSIGHTS_ALARM_QUOTA == 200
    names = tuple(f"other-{i}" for i in range(existing))
    check = check_insights_quota(PLAN, facts(insights_alarms=names))
    assert check.verdict is verdict
    assert check.detail.startswith(
        f"{existing} Metrics Insights alarms exist, this deployment adds 12 "
        "(fleet_gpus=400: 1 alarm shard(s))"
    )


def test_a_fleet_of_10000_gpus_adds_132_alarms_and_fails_beside_75_others() -> None:
    """200 Metrics Insights alarms per account and Region by default ("Limits",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-limits.html)."""
    plan = plan_for(Settings(cluster_name="train", fleet_gpus=10_000, job_alarms=False))
    assert (len(plan.insights_alarms), plan.alarm_shards) == (132, 25)
    assert check_insights_quota(plan, facts()).detail == (
        "0 Metrics Insights alarms exist, this deployment adds 132 (fleet_gpus=10,000: 25 alarm "
        "shard(s)): 132 of the default quota of 200 per Region"
    )
    others = tuple(f"other-{i}" for i in range(75))
    assert check_insights_quota(plan, facts(insights_alarms=others)).verdict is Verdict.FAIL


def test_the_job_alarms_count_too() -> None:
    """6 job alarm kinds in 8 job shards beside the 6 GPU alarms of one shard, and the 12
    kinds' fleet counts."""
    plan = plan_for(Settings(cluster_name="train"))
    assert len(plan.insights_alarms) == 6 + 48 + 12
    assert check_insights_quota(plan, facts()).detail.startswith(
        "0 Metrics Insights alarms exist, this deployment adds 66 (fleet_gpus=400: 1 alarm "
        "shard(s)): 66 of"
    )


def test_a_redeploy_does_not_count_its_own_alarms_twice() -> None:
    names = (*PLAN.insights_alarms, "other-0")
    check = check_insights_quota(PLAN, facts(insights_alarms=names))
    assert check.detail.startswith(
        "1 Metrics Insights alarms exist, this deployment adds 12 (fleet_gpus=400: 1 alarm "
        "shard(s)): 13 of"
    )


@pytest.mark.parametrize(
    ("ami", "verdict", "words"),
    [
        ("AL2023_x86_64_NVIDIA", Verdict.OK, "every GPU (amd64)"),
        ("AL2_x86_64_GPU", Verdict.OK, "every GPU (amd64)"),
        ("AL2023_ARM_64_NVIDIA", Verdict.FAIL, "built for amd64 only"),
        ("BOTTLEROCKET_ARM_64_NVIDIA", Verdict.FAIL, "built for amd64 only"),
        ("BOTTLEROCKET_x86_64_NVIDIA", Verdict.WARN, "does not honour NVIDIA_VISIBLE_DEVICES"),
        ("BOTTLEROCKET_x86_64_NVIDIA_FIPS", Verdict.WARN, "does not honour"),
    ],
)
def test_gpu_node_os_and_architecture(ami: str, verdict: Verdict, words: str) -> None:
    check = check_nodegroup(PLAN, NodeGroup("gpu", ami, ("p5.48xlarge",)))
    assert check is not None
    assert check.name == "nodes:gpu"
    assert check.verdict is verdict
    assert words in check.detail


def test_bottlerocket_fix_names_the_setting() -> None:
    check = check_nodegroup(PLAN, NodeGroup("gpu", "BOTTLEROCKET_x86_64_NVIDIA"))
    assert check is not None
    assert (
        "settings.nvidia-container-runtime.visible-devices-envvar-when-unprivileged = true"
        in check.fix
    )


def test_non_gpu_groups_are_skipped_and_custom_gpu_groups_warned() -> None:
    assert check_nodegroup(PLAN, NodeGroup("sys", "AL2023_x86_64_STANDARD", ("m5.large",))) is None
    assert check_nodegroup(PLAN, NodeGroup("sys", "CUSTOM", ("c7g.large",))) is None
    custom = check_nodegroup(PLAN, NodeGroup("gpu", "CUSTOM", ("g5g.xlarge",)))
    assert custom is not None
    assert custom.verdict is Verdict.WARN


def test_without_the_exporter_node_os_does_not_matter() -> None:
    plan = replace(PLAN, exporter=False)
    check = check_nodegroup(plan, NodeGroup("gpu", "AL2023_ARM_64_NVIDIA"))
    assert check is not None
    assert check.verdict is Verdict.OK
    (auto,) = check_nodes(plan, facts(), replace(CLUSTER, auto_mode=True))
    assert auto.verdict is Verdict.OK


def test_auto_mode_warns_that_the_exporter_sees_no_gpu() -> None:
    (check,) = check_nodes(PLAN, facts(), replace(CLUSTER, auto_mode=True))
    assert check.name == "nodes:auto-mode"
    assert check.verdict is Verdict.WARN
    assert "exporter_enabled=false" in check.fix


def test_an_unreadable_fact_fails_its_check_with_the_reason() -> None:
    denied = facts(unreadable={"alarms": "AccessDenied: not authorized"})
    check = check_insights_quota(PLAN, denied)
    assert check.verdict is Verdict.FAIL
    assert check.detail == "could not read: AccessDenied: not authorized"


def test_a_missing_cluster_skips_the_cluster_checks() -> None:
    checks = run_checks(PLAN, Facts(region="eu-west-1", cluster=None))
    assert [c.name for c in checks] == ["cluster", "log-groups", "insights-alarm-quota"]
    assert checks[0].verdict is Verdict.FAIL
    assert checks[0].detail == "no EKS cluster 'train' in eu-west-1"


def test_a_ready_cluster_passes_every_check() -> None:
    ready = facts(
        addons={
            "eks-pod-identity-agent": Addon("eks-pod-identity-agent", "v1", "ACTIVE"),
            "amazon-cloudwatch-observability": None,
            "eks-node-monitoring-agent": Addon("eks-node-monitoring-agent", "v1.4.0", "ACTIVE"),
        },
        nodegroups=(NodeGroup("gpu", "AL2023_x86_64_NVIDIA", ("p5.48xlarge",), auto_repair=True),),
        nvidia_instance_types={"p5.48xlarge": "amd64"},
    )
    checks = run_checks(PLAN, ready)
    assert [c.name for c in checks] == [
        "cluster", "pod-identity-agent", "kubectl-version", "observability-addon",
        "serving-data-path", "log-groups", "insights-alarm-quota", "nodes:gpu",
        "node-repair:gpu", "node-repair:agent", "exporter-nodes", "silence-coverage",
    ]  # fmt: skip
    assert {c.verdict for c in checks} == {Verdict.OK}


def test_with_the_otlp_sink_silence_coverage_is_gpu_silents_promql_alarm() -> None:
    """OTel mode's default sink: no silence check function, so an untagged GPU instance is no
    failure (gpu-silent reads Kube State Metrics' capacity, not EC2's tags): one line says so."""
    otlp = plan_for(settings_from_context({"cluster_name": "train", "region": "us-east-1"}))
    assert (otlp.exporter_sink, otlp.silence_check, PLAN.silence_check) == (
        ExporterSink.OTLP,
        False,
        True,
    )
    untagged = Uncovered(
        "i-0a1b2c3d4e5f67890", "p5.48xlarge", "ip-10-0-1-17.ec2.internal", "no tag", "tag it", True
    )
    ready = facts(
        addons={
            "eks-pod-identity-agent": Addon("eks-pod-identity-agent", "v1", "ACTIVE"),
            "amazon-cloudwatch-observability": None,
        },
        silence_uncovered=(untagged,),
    )
    (line,) = [c for c in run_checks(otlp, ready) if c.name.startswith("silence-coverage")]
    assert (line.name, line.verdict) == ("silence-coverage", Verdict.OK)
    assert line.detail.startswith("no silence check function with exporter_sink=otlp: gpu-silent")
    (emf,) = [c for c in run_checks(PLAN, ready) if c.name.startswith("silence-coverage")]
    assert (emf.name, emf.verdict) == ("silence-coverage:i-0a1b2c3d4e5f67890", Verdict.FAIL)


#: What EC2's DescribeInstanceTypes says of the fleet's types: NVIDIA GPUs, and the architecture.
NVIDIA = {
    "p5.48xlarge": "amd64",
    "g6e.12xlarge": "amd64",
    "g5.12xlarge": "amd64",
    "g5g.xlarge": "arm64",
}


def _instance(n: int, instance_type: str, **kwargs: object) -> GpuInstance:
    node = f"ip-10-0-0-{n}.us-west-2.compute.internal"
    return GpuInstance(f"i-0{n}", instance_type, node, NVIDIA[instance_type], **kwargs)  # type: ignore[arg-type]


MANAGED = _instance(1, "p5.48xlarge", nodegroup="gpu-p5")
KARPENTER = _instance(2, "g6e.12xlarge", nodepool="gpu")
SELF_MANAGED = _instance(3, "g5.12xlarge")
#: A managed node group with a node on the accelerated AMI and only the device plugin, one
#: scaled to zero, a Karpenter node and a self-managed one: no GPU label AWS can see on the
#: first, third and fourth.
FLEET = facts(
    nodegroups=(
        NodeGroup("gpu-p5", "AL2023_x86_64_NVIDIA", ("p5.48xlarge",)),
        NodeGroup("gpu-idle", "AL2023_x86_64_NVIDIA", ("g5.12xlarge",)),
        NodeGroup("system", "AL2023_x86_64_STANDARD", ("m7i.2xlarge",)),
    ),
    gpu_instances=(MANAGED, KARPENTER, SELF_MANAGED),
    nvidia_instance_types=NVIDIA,
)
#: The DaemonSet's rule before it knew instance types: the GPU Operator's and Karpenter's
#: labels alone.
LABELS_ONLY = tuple(
    t
    for t in PLAN.exporter_node_terms
    if t["matchExpressions"][0]["key"]
    in {"nvidia.com/gpu.present", "karpenter.k8s.aws/instance-gpu-manufacturer"}
)


def test_every_gpu_node_aws_shows_is_reached_whatever_provisioned_it() -> None:
    check = check_exporter_reach(PLAN, FLEET)
    assert check.verdict is Verdict.OK
    assert check.detail.startswith("the exporter's DaemonSet selects 4 of the 4 NVIDIA GPU nodes")
    assert check.detail.endswith("(g5.12xlarge, g6e.12xlarge, p5.48xlarge)")


def test_each_gpu_node_the_daemonset_misses_is_named_with_why_and_fails() -> None:
    check = check_exporter_reach(replace(PLAN, exporter_node_terms=LABELS_ONLY), FLEET)
    assert check.verdict is Verdict.FAIL
    assert check.detail.startswith("the exporter's DaemonSet selects 1 of the 4 NVIDIA GPU nodes")
    missed = check.detail.partition("; it misses ")[2]
    assert missed == (
        "node group gpu-idle (g5.12xlarge, none running), "
        "ip-10-0-0-1.us-west-2.compute.internal (i-01, p5.48xlarge, node group gpu-p5), "
        "ip-10-0-0-3.us-west-2.compute.internal (i-03, g5.12xlarge, self-managed): no GPU mark "
        "AWS can see: its type is not in the exporter's NVIDIA instance types, and no label of "
        "it in EKS or Karpenter marks it (GPU feature discovery, NFD or the GPU Operator may, "
        "inside the cluster)"
    )
    assert "i-02" not in check.detail  # Karpenter labels its GPU nodes
    assert check.fix.startswith("mark them with a label they carry: ")
    assert "-c gpu_node_labels=eks.amazonaws.com/nodegroup=gpu-idle" in check.fix
    # A node group's own Kubernetes labels count: marked by one the settings name, it is reached.
    labelled = replace(
        FLEET,
        nodegroups=(replace(FLEET.nodegroups[0], labels={"example.com/gpu": "h100"}),),
        gpu_instances=(MANAGED,),
    )
    plan = replace(
        PLAN,
        exporter_node_terms=(
            *LABELS_ONLY,
            *plan_for(
                Settings(cluster_name="train", gpu_node_labels=("example.com/gpu=h100",))
            ).exporter_node_terms[-1:],
        ),
    )
    assert check_exporter_reach(plan, labelled).verdict is Verdict.OK


def test_arm64_and_auto_mode_gpu_nodes_are_named_and_left_to_container_insights() -> None:
    fleet = facts(
        gpu_instances=(
            _instance(4, "g5g.xlarge", nodepool="arm"),
            _instance(5, "g6e.12xlarge", auto_mode=True),
            MANAGED,
        ),
        nvidia_instance_types=NVIDIA,
    )
    check = check_exporter_reach(PLAN, fleet)
    assert check.verdict is Verdict.WARN
    assert (
        "ip-10-0-0-4.us-west-2.compute.internal (i-04, g5g.xlarge, Karpenter NodePool arm): "
        "not amd64: the exporter's image is built for linux/amd64 only" in check.detail
    )
    assert (
        "ip-10-0-0-5.us-west-2.compute.internal (i-05, g6e.12xlarge, EKS Auto Mode): an EKS "
        "Auto Mode node: the exporter sees no GPU there" in check.detail
    )
    assert "selects 1 of the 3" in check.detail


def test_no_exporter_no_gpu_node_or_no_read_says_so() -> None:
    off = check_exporter_reach(replace(PLAN, exporter=False), FLEET)
    assert (off.verdict, off.detail) == (Verdict.OK, "the exporter is off (exporter_enabled=false)")
    cpu_only = facts(nodegroups=(NodeGroup("system", "AL2023_x86_64_STANDARD", ("m7i.2xlarge",)),))
    none = check_exporter_reach(PLAN, cpu_only)
    assert none.verdict is Verdict.OK
    assert none.detail.startswith("no running instance of the cluster and no node group has")
    denied = facts(unreadable={"instances": "UnauthorizedOperation: ec2:DescribeInstances"})
    check = check_exporter_reach(PLAN, denied)
    assert check.verdict is Verdict.FAIL
    assert check.detail == "could not read: UnauthorizedOperation: ec2:DescribeInstances"


OTEL_VALUES = json.dumps(
    {"otelContainerInsights": {"enabled": True}, "containerInsights": {"enabled": False}}
)


@pytest.mark.parametrize(
    ("values", "modes"),
    [
        # The chart's defaults (values.yaml): containerInsights on, otelContainerInsights off.
        (None, {"classic"}),
        ("", {"classic"}),
        ('{"containerLogs": {"enabled": false}}', {"classic"}),
        (OTEL_VALUES, {"otel"}),
        ('{"otelContainerInsights": {"enabled": true}}', {"otel", "classic"}),
        ('{"containerInsights": {"enabled": false}}', set()),
        ("otelContainerInsights:\n  enabled: true\n", None),
    ],
)
def test_the_addons_mode_is_read_from_its_configuration_values(
    values: str | None, modes: set[str] | None
) -> None:
    found = addon_modes(Addon(OBSERVABILITY_ADDON, "v6.2.0-eksbuild.1", "ACTIVE", values))
    assert (None if found is None else set(found)) == modes


def test_preflight_names_the_running_mode_and_never_lets_a_deploy_switch_it_silently() -> None:
    classic = {OBSERVABILITY_ADDON: Addon("x", "v5.1.0-eksbuild.1", "ACTIVE")}
    otel = {OBSERVABILITY_ADDON: Addon("x", "v6.2.0-eksbuild.1", "ACTIVE", OTEL_VALUES)}
    # The stack would install its own (otel) add-on over a Classic one: refused, and said.
    conflict = check_observability_addon(PLAN, facts(addons=classic), CLUSTER)
    assert conflict.verdict is Verdict.FAIL
    assert conflict.detail == (
        "amazon-cloudwatch-observability v5.1.0-eksbuild.1 (ACTIVE) runs classic Container "
        "Insights: the stack's AWS::EKS::Addon would fail with 'already exists'; deploying "
        "this project's add-on would switch it to otel mode"
    )
    assert conflict.fix.endswith("; to keep its mode, -c container_insights_mode=classic")
    # Managed elsewhere, in the other mode: the analyzers would read what it does not send.
    elsewhere = replace(PLAN, install_addon=False)
    wrong = check_observability_addon(elsewhere, facts(addons=classic), CLUSTER)
    assert wrong.verdict is Verdict.WARN
    assert wrong.detail.endswith(
        "container_insights_mode=otel: the analyzers would read otel series it does not send"
    )
    assert wrong.fix == "-c container_insights_mode=classic"
    same = check_observability_addon(elsewhere, facts(addons=otel), CLUSTER)
    assert same.verdict is Verdict.OK
    assert same.detail == (
        "amazon-cloudwatch-observability v6.2.0-eksbuild.1 (ACTIVE) runs otel Container "
        "Insights, managed elsewhere"
    )
    as_classic = replace(elsewhere, mode=ContainerInsightsMode.CLASSIC)
    assert check_observability_addon(as_classic, facts(addons=otel), CLUSTER).fix == (
        "-c container_insights_mode=otel"
    )


def test_otel_mode_on_an_add_on_too_old_for_it_warns() -> None:
    old = {
        OBSERVABILITY_ADDON: Addon("x", "v5.1.0-eksbuild.1", "ACTIVE", OTEL_VALUES),
    }
    check = check_observability_addon(
        replace(PLAN, install_addon=False), facts(addons=old), CLUSTER
    )
    assert check.verdict is Verdict.WARN
    assert "needs v6.2.0-eksbuild.1 or later" in check.detail


#: exporter_sink=otlp sends to the agent's OTLP endpoint, "available in version 8.0.0 and later
#: of the Amazon CloudWatch Observability Amazon EKS add-on" ("OTLP ingestion",
#: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/eks-observability-addon-otlp-endpoint.html).
OTLP = plan_for(
    Settings(
        cluster_name="train",
        job_alarms=False,
        container_insights_mode=ContainerInsightsMode.OTEL,
        exporter_sink=ExporterSink.OTLP,
    )
)
#: DescribeAddonVersions for Kubernetes 1.31 on 2025-09-15: v4.4.0-eksbuild.1, the latest then,
#: with ``"defaultVersion": true`` (aws-samples/one-observability-demo pull request #392).
DEFAULT_1_31 = AddonVersion("v4.4.0-eksbuild.1", default=True)
#: The first version with the OTLP endpoint (the page above), offered beside the default.
FIRST_OTLP = AddonVersion("v8.0.0-eksbuild.1")
UPDATE = (
    "aws eks update-addon --cluster-name train --addon-name amazon-cloudwatch-observability "
    "--addon-version "
)
#: The default sink's other way out: keep the old add-on and send EMF.
EMF_INSTEAD = ", or keep it with -c exporter_sink=emf"


def test_the_otlp_sink_fails_on_an_installed_add_on_older_than_8_0_0() -> None:
    """The add-on that runs OTel mode (6.2.0) still has no OTLP endpoint for the exporter."""
    otel = {OBSERVABILITY_ADDON: Addon("x", "v6.2.0-eksbuild.1", "ACTIVE", OTEL_VALUES)}
    elsewhere = replace(OTLP, install_addon=False)
    check = check_observability_addon(elsewhere, facts(addons=otel), CLUSTER)
    assert check.verdict is Verdict.FAIL
    assert check.detail == (
        "amazon-cloudwatch-observability v6.2.0-eksbuild.1 (ACTIVE) runs otel Container "
        "Insights, managed elsewhere; it is older than v8.0.0-eksbuild.1, which "
        "exporter_sink=otlp (the default in OTel mode) needs (the agent's OTLP endpoint)"
    )
    assert check.fix == UPDATE + "<v8.0.0-eksbuild.1 or later>" + EMF_INSTEAD
    # With the versions EKS offers for the cluster read, the fix names the newest that fits.
    offered = facts(addons=otel, addon_versions=(DEFAULT_1_31, FIRST_OTLP))
    assert check_observability_addon(elsewhere, offered, CLUSTER).fix == (
        UPDATE + "v8.0.0-eksbuild.1" + EMF_INSTEAD
    )
    # Installed by the stack too: the collision fails as before, and says the version.
    clash = check_observability_addon(OTLP, offered, CLUSTER)
    assert clash.verdict is Verdict.FAIL
    assert clash.detail.endswith(
        "'already exists'; it is older than v8.0.0-eksbuild.1, which exporter_sink=otlp "
        "(the default in OTel mode) needs (the agent's OTLP endpoint)"
    )
    assert clash.fix.endswith("; to keep it, first " + UPDATE + "v8.0.0-eksbuild.1" + EMF_INSTEAD)
    # 8.0.0 serves the endpoint; the EMF sink needs no such version.
    new = {OBSERVABILITY_ADDON: Addon("x", "v8.0.0-eksbuild.1", "ACTIVE", OTEL_VALUES)}
    assert check_observability_addon(elsewhere, facts(addons=new), CLUSTER).verdict is (Verdict.OK)
    emf = replace(elsewhere, exporter_sink=ExporterSink.EMF)
    assert check_observability_addon(emf, facts(addons=otel), CLUSTER).verdict is Verdict.OK


def test_the_default_sink_names_itself_on_an_add_on_older_than_8_0_0() -> None:
    """A deployment that never set exporter_sink gets OTLP in OTel mode: against an add-on
    managed elsewhere at 7.x the line says the sink is the default and how to keep EMF."""
    context = {"cluster_name": "train", "job_alarms": False, "install_addon": False}
    plan = plan_for(settings_from_context(context))
    old = {OBSERVABILITY_ADDON: Addon("x", "v7.0.0-eksbuild.1", "ACTIVE", OTEL_VALUES)}
    check = check_observability_addon(plan, facts(addons=old), CLUSTER)
    assert check.verdict is Verdict.FAIL
    assert check.detail.endswith(
        "managed elsewhere; it is older than v8.0.0-eksbuild.1, which exporter_sink=otlp "
        "(the default in OTel mode) needs (the agent's OTLP endpoint)"
    )
    assert check.fix == UPDATE + "<v8.0.0-eksbuild.1 or later>" + EMF_INSTEAD
    emf = plan_for(settings_from_context({**context, "exporter_sink": "emf"}))
    assert check_observability_addon(emf, facts(addons=old), CLUSTER).verdict is Verdict.OK


def test_the_otlp_sink_fails_where_eks_would_install_a_default_older_than_8_0_0() -> None:
    absent = {OBSERVABILITY_ADDON: None}
    old_cluster = replace(CLUSTER, version="1.31")
    only_default = facts(addons=absent, addon_versions=(DEFAULT_1_31,))
    check = check_observability_addon(OTLP, only_default, old_cluster)
    assert check.verdict is Verdict.FAIL
    assert check.detail == (
        "amazon-cloudwatch-observability not installed yet: without addon_version EKS installs "
        "its default for Kubernetes 1.31, v4.4.0-eksbuild.1, older than v8.0.0-eksbuild.1, "
        "which exporter_sink=otlp (the default in OTel mode) needs (the agent's OTLP endpoint)"
    )
    assert check.fix == (
        "no version EKS offers for Kubernetes 1.31 is v8.0.0-eksbuild.1 or later yet: "
        "-c exporter_sink=emf"
    )
    offered = facts(addons=absent, addon_versions=(DEFAULT_1_31, FIRST_OTLP))
    assert check_observability_addon(OTLP, offered, old_cluster).fix == (
        "-c addon_version=v8.0.0-eksbuild.1 (the newest EKS offers for Kubernetes 1.31)"
    )
    default_8 = facts(addons=absent, addon_versions=(replace(FIRST_OTLP, default=True),))
    ok = check_observability_addon(OTLP, default_8, old_cluster)
    assert ok.verdict is Verdict.OK
    assert ok.detail == (
        "amazon-cloudwatch-observability not installed yet: EKS installs its default "
        "v8.0.0-eksbuild.1 for Kubernetes 1.31, otel mode with the agent's OTLP endpoint"
    )
    none_default = facts(addons=absent, addon_versions=(FIRST_OTLP,))
    no_default = check_observability_addon(OTLP, none_default, old_cluster)
    assert no_default.verdict is Verdict.FAIL
    assert "EKS names no default version of it for Kubernetes 1.31" in no_default.detail
    unread = facts(addons=absent, unreadable={"addon_versions": "AccessDeniedException: no"})
    assert check_observability_addon(OTLP, unread, old_cluster).detail == (
        "could not read: AccessDeniedException: no"
    )


def test_the_add_on_versions_are_read_only_where_they_decide_a_verdict() -> None:
    old = Addon(OBSERVABILITY_ADDON, "v6.2.0-eksbuild.1", "ACTIVE", OTEL_VALUES)
    new = Addon(OBSERVABILITY_ADDON, "v8.0.0-eksbuild.1", "ACTIVE", OTEL_VALUES)
    assert needs_addon_versions(OTLP, None)  # EKS's default would be installed
    assert needs_addon_versions(OTLP, old)  # the version to update to is named
    assert not needs_addon_versions(OTLP, new)
    assert not needs_addon_versions(replace(OTLP, addon_version="v8.0.0-eksbuild.1"), None)
    assert not needs_addon_versions(replace(OTLP, install_addon=False), None)
    assert not needs_addon_versions(PLAN, None)  # the EMF sink
    # plan_for carries the two settings the verdict turns on.
    assert OTLP.exporter_sink is ExporterSink.OTLP
    assert OTLP.addon_version is None


def test_serving_data_path_names_each_server_whose_alarms_would_be_silent() -> None:
    """Before a deploy, each inference server's series in the plan's mode (cli/serving_paths.py,
    status's judgement too): OTel mode without serving_metrics leaves Triton and NIM without a
    path, so their models' SLO alarms would never fire; an add-on managed elsewhere is read
    from its own configuration values and version (Ray Serve from 8.0.0)."""
    assert (PLAN.serving_alarms, PLAN.serving_metrics) == (True, True)
    ok = check_serving_paths(PLAN, facts())
    assert ok.verdict is Verdict.OK
    assert "every server's series reach CloudWatch in otel mode" in ok.detail
    bare = replace(PLAN, serving_metrics=False)
    warned = check_serving_paths(bare, facts())
    assert warned.verdict is Verdict.WARN
    assert warned.detail.startswith(
        "2 of 4 servers without a data path in otel mode, their models' serving SLO alarms "
        "silent: nim-llm (port 8000 /v1/metrics): no path"
    )
    assert warned.fix == (
        "nim-llm: deploy with -c serving_metrics=true; triton: deploy with -c serving_metrics=true"
    )
    # Managed elsewhere: an add-on of 6.4.0 without this project's values.
    elsewhere = replace(PLAN, install_addon=False)
    old = Addon("amazon-cloudwatch-observability", "v6.4.0-eksbuild.1", "ACTIVE", "{}")
    check = check_serving_paths(elsewhere, facts(addons={"amazon-cloudwatch-observability": old}))
    assert check.verdict is Verdict.WARN
    assert check.detail.startswith("3 of 4 servers without a data path")
    assert "ray-serve: update the add-on from v6.4.0-eksbuild.1 to v8.0.0-eksbuild.1" in check.fix
    assert "triton: give the add-on this project's configuration values" in check.fix
    # Classic without the scrape makes no serving alarm: nothing silent.
    classic = plan_for(
        Settings(
            cluster_name="train",
            container_insights_mode=ContainerInsightsMode.CLASSIC,
            serving_metrics=False,
        )
    )
    assert classic.serving_alarms is False
    assert check_serving_paths(classic, facts()).detail == "no serving SLO alarm in this deployment"
