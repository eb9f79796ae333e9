"""Node auto repair as preflight and status read it (cli/preflight/aws.py ``read_node_repair``)
and say it (cli/preflight/checks.py ``check_node_repair``): a real botocore EKS client answered
by a Stubber, which validates each answer against EKS's service model (moto's DescribeNodegroup
returns no ``nodeRepairConfig`` and its DescribeCluster no ``computeConfig``)."""

from typing import Any

import boto3
from botocore.stub import Stubber

from cli.preflight.aws import read_node_repair
from cli.preflight.checks import NODE_MONITORING_ADDON, Verdict
from cli.status.checks import Facts, run_checks

CLUSTER = "train"
ROLE = "arn:aws:iam::123456789012:role/nodes"


def _nodegroup(name: str, ami: str, instance: str, repair: dict[str, Any] | None) -> dict[str, Any]:
    group: dict[str, Any] = {
        "nodegroupName": name,
        "clusterName": CLUSTER,
        "amiType": ami,
        "instanceTypes": [instance],
        "nodeRole": ROLE,
    }
    if repair is not None:
        group["nodeRepairConfig"] = repair
    return group


def _eks(*, auto_mode: bool, agent: str | None) -> tuple[Any, Stubber]:
    """DescribeCluster, the agent's DescribeAddon, ListNodegroups and DescribeNodegroup: a GPU
    group with repair on (and an override), a GPU group without any nodeRepairConfig, a GPU
    group with repair turned off, and a CPU group."""
    eks = boto3.client(
        "eks", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
    )
    stubber = Stubber(eks)
    cluster: dict[str, Any] = {"name": CLUSTER, "version": "1.33", "status": "ACTIVE"}
    if auto_mode:
        cluster["computeConfig"] = {"enabled": True, "nodePools": ["general-purpose"]}
    stubber.add_response("describe_cluster", {"cluster": cluster}, {"name": CLUSTER})
    params = {"clusterName": CLUSTER, "addonName": NODE_MONITORING_ADDON}
    if agent:
        addon = {"addonName": NODE_MONITORING_ADDON, "addonVersion": "v1.4.0-eksbuild.1"}
        stubber.add_response("describe_addon", {"addon": addon | {"status": agent}}, params)
    else:
        stubber.add_client_error(
            "describe_addon", "ResourceNotFoundException", http_status_code=404,
            expected_params=params,
        )  # fmt: skip
    groups = {
        "p5-repair": _nodegroup(
            "p5-repair",
            "AL2023_x86_64_NVIDIA",
            "p5.48xlarge",
            {
                "enabled": True,
                "maxUnhealthyNodeThresholdPercentage": 20,
                "nodeRepairConfigOverrides": [
                    {
                        "nodeMonitoringCondition": "AcceleratedHardwareReady",
                        "nodeUnhealthyReason": "NvidiaXID31Error",
                        "minRepairWaitTimeMins": 10,
                        "repairAction": "Reboot",
                    }
                ],
            },
        ),
        "g6-unset": _nodegroup("g6-unset", "AL2023_x86_64_NVIDIA", "g6.12xlarge", None),
        "p4d-off": _nodegroup(
            "p4d-off",
            "BOTTLEROCKET_x86_64_NVIDIA",
            "p4d.24xlarge",
            {
                "enabled": False,
            },
        ),
        "system": _nodegroup("system", "AL2023_x86_64_STANDARD", "m6i.large", {"enabled": False}),
    }
    stubber.add_response("list_nodegroups", {"nodegroups": list(groups)}, {"clusterName": CLUSTER})
    for name, group in groups.items():
        stubber.add_response(
            "describe_nodegroup",
            {"nodegroup": group},
            {"clusterName": CLUSTER, "nodegroupName": name},
        )
    stubber.activate()
    return eks, stubber


def _lines(checks: list[Any]) -> dict[str, tuple[Verdict, str, str]]:
    return {c.name: (c.verdict, c.detail, c.fix) for c in checks if c.name.startswith("node-")}


def test_each_gpu_node_group_says_whether_auto_repair_is_on_and_after_how_long() -> None:
    eks, stubber = _eks(auto_mode=False, agent="ACTIVE")
    repair = read_node_repair(eks, CLUSTER)
    stubber.assert_no_pending_responses()
    assert repair is not None
    assert {g.name: g.auto_repair for g in repair.nodegroups} == {
        "p5-repair": True, "g6-unset": False, "p4d-off": False, "system": False,
    }  # fmt: skip
    lines = _lines(run_checks(Facts(cluster=CLUSTER, now=0, stacks={}, node_repair=repair)))
    fix = (
        "aws eks update-nodegroup-config --cluster-name <cluster> --nodegroup-name {} "
        "--node-repair-config enabled=true"
    )
    off = (
        "auto repair off: a GPU node with a failed GPU or NotReady stays until someone "
        "replaces it (the alarms page either way)"
    )
    # The CPU group is not named; the agent's add-on is active, so the GPU conditions count.
    assert lines == {
        "node-repair:p5-repair": (
            Verdict.OK,
            "auto repair on: EKS replaces or reboots an unhealthy node "
            "(AcceleratedHardwareReady 10 min, Ready and the others 30 min)",
            "",
        ),
        "node-repair:g6-unset": (Verdict.WARN, off, fix.format("g6-unset")),
        "node-repair:p4d-off": (Verdict.WARN, off, fix.format("p4d-off")),
        "node-repair:agent": (Verdict.OK, f"{NODE_MONITORING_ADDON} v1.4.0-eksbuild.1 ACTIVE", ""),
    }


def test_without_the_agent_repair_sees_only_ready_and_the_hardware_alarm_never_pages() -> None:
    eks, _ = _eks(auto_mode=False, agent=None)
    repair = read_node_repair(eks, CLUSTER)
    lines = _lines(run_checks(Facts(cluster=CLUSTER, now=0, stacks={}, node_repair=repair)))
    assert lines["node-repair:p5-repair"][1].endswith(
        "(Ready 30 min only: without the node monitoring agent no GPU condition is set)"
    )
    verdict, detail, fix = lines["node-repair:agent"]
    assert verdict is Verdict.WARN
    assert "gpu-node-hardware-not-ready never pages" in detail
    assert (
        fix == f"aws eks create-addon --cluster-name <cluster> --addon-name {NODE_MONITORING_ADDON}"
    )


def test_auto_mode_repairs_always_and_needs_no_agent_line() -> None:
    eks, _ = _eks(auto_mode=True, agent=None)
    repair = read_node_repair(eks, CLUSTER)
    lines = _lines(run_checks(Facts(cluster=CLUSTER, now=0, stacks={}, node_repair=repair)))
    assert lines["node-repair:auto-mode"] == (
        Verdict.OK,
        "EKS Auto Mode: auto repair always on, every GPU action a replacement "
        "(AcceleratedHardwareReady 10 min, Ready and the others 30 min); the node monitoring "
        "agent is built in",
        "",
    )
    assert "node-repair:agent" not in lines
    # Its managed GPU node groups are still named one by one.
    assert lines["node-repair:g6-unset"][0] is Verdict.WARN


def test_status_without_the_read_says_nothing_and_a_denied_read_fails() -> None:
    assert _lines(run_checks(Facts(cluster=CLUSTER, now=0, stacks={}))) == {}
    denied = Facts(
        cluster=CLUSTER,
        now=0,
        stacks={},
        unreadable={"node_repair": "AccessDeniedException: not authorized"},
    )
    ((verdict, detail, fix),) = _lines(run_checks(denied)).values()
    assert verdict is Verdict.FAIL
    assert detail == "could not read: AccessDeniedException: not authorized"
    assert "eks:DescribeNodegroup" in fix
