"""The silence check end to end with moto, as its synthesized role: EC2 instances of the
cluster and the real exporter's series in, the silent GPUs and nodes out, and the gpu-silent
alarm replayed over what it published.

The cluster: three running p5.48xlarge instances tagged ``kubernetes.io/cluster/train`` (as
Karpenter and managed node groups tag theirs), plus instances the check must leave out: a
CPU instance of the cluster and a GPU instance of another cluster. Each node runs the real
exporter over a simulated NVML trace (eight H100s; seven where the driver lost one), sending
through PutMetricData what the agent would. moto launches instances at the real time, so the
check runs half an hour later: past the 15-minute grace period."""

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from cdk.alarms.catalog import AlarmSettings, gpu_alarms
from cdk.function_configs import silence_config
from cdk.settings import Settings
from cli.backtest.cloudwatch_history import fetch_samples
from cli.backtest.engine import backtest
from cli.backtest.evaluator import AlarmState
from cli.demo.realistic.nodes import (
    UNTAGGED,
    auto_mode_tags,
    eksctl_stack_tags,
    karpenter_tags,
    managed_node_group_tags,
)
from gpu_insights_agent.emf.sinks import BufferedSender, PutMetricDataSink
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from gpu_insights_agent.exporter.simulated_trace import SimulatedGpu, node_trace
from lambdas.silence_check import handler as silence_handler
from tests.functional.lambdas.iam import REGION, Principal, resolve, role_statements, run_as_role
from tests.functional.lambdas.iam import without as without_statement

HANDLER = "lambdas.silence_check.handler.handler"
INTERVAL_S = 60.0
#: One of the Amazon Linux images moto knows (its default image list).
IMAGE = "ami-12c6146b"
#: The check's run: half an hour after moto launched the instances.
RUN_AFTER_S = 1800


def _ec2_instance(
    ec2: Any, instance_type: str, cluster: str, tagged: dict[str, str] | None = None
) -> tuple[str, str]:
    given = {f"kubernetes.io/cluster/{cluster}": "owned"} if tagged is None else tagged
    tags = [{"Key": k, "Value": v} for k, v in given.items()]
    (instance,) = ec2.run_instances(
        ImageId=IMAGE,
        MinCount=1,
        MaxCount=1,
        InstanceType=instance_type,
        # EC2 refuses a tag specification without a tag: an untagged instance has none.
        TagSpecifications=[{"ResourceType": "instance", "Tags": tags}] if tags else [],
    )["Instances"]
    return str(instance["PrivateDnsName"]), str(instance["InstanceId"])


def _exporter(cloudwatch: Any, node: str, gpus: int, start: float, end: float) -> None:
    """The exporter on ``node`` sends a cycle every minute from ``start`` to ``end``."""
    now = [0.0]
    trace = node_trace(
        [SimulatedGpu("busy" if i % 2 else "idle") for i in range(gpus)],
        duration_s=end - start + INTERVAL_S,
        node=node,
    )
    exporter = Exporter(
        NvmlSource(FakeNvml(trace, clock=lambda: now[0], sleep=lambda _: None)),
        BufferedSender(PutMetricDataSink(cloudwatch)),
        ExporterConfig(cluster_name="train", node_name=node, interval_s=INTERVAL_S),
        clock=lambda: start + now[0],
    )
    exporter.start()
    while start + now[0] < end:
        exporter.collect_once()
        now[0] += INTERVAL_S
    exporter.shutdown()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    with mock_aws():
        session = boto3.Session(
            region_name=REGION, aws_access_key_id="t", aws_secret_access_key="t"
        )
        ec2, cloudwatch = session.client("ec2"), session.client("cloudwatch")
        launched = dict(_ec2_instance(ec2, "p5.48xlarge", "train") for _ in range(3))
        _ec2_instance(ec2, "m5.large", "train")  # no GPU: nothing to report
        _ec2_instance(ec2, "p5.48xlarge", "other")  # another cluster's
        run_at = float(int(time.time()) + RUN_AFTER_S)
        # The environment the stack sets (exporter cycles of a minute: ten minutes back).
        config = silence_config(Settings(cluster_name="train", exporter_interval_seconds=60))
        for key, value in config.environment().items():
            monkeypatch.setenv(key, value)
        yield {"ec2": ec2, "cloudwatch": cloudwatch, "nodes": list(launched),
               "instance": launched, "run_at": run_at}  # fmt: skip


def _as_role(aws: dict[str, Any], templates: Any, monkeypatch: Any, drop: Any = None) -> Principal:
    statements = list(resolve(role_statements(templates, HANDLER), {}))
    if drop is not None:
        statements = without_statement(statements, drop)
    principal = run_as_role(statements, monkeypatch, "silence-check")
    for service in ("ec2", "cloudwatch"):
        monkeypatch.setitem(silence_handler._clients, service, principal.role(service))
        aws[service] = principal.admin(service)  # moto authorizes every call from here on
    return principal


def _run(at: float) -> dict[str, Any]:
    event = {"time": datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    return silence_handler.handler(event, None)


def _silent_series(cloudwatch: Any) -> set[tuple[str, str]]:
    listed = cloudwatch.list_metrics(Namespace="GpuInsights", MetricName="gpu_silent")["Metrics"]
    found = set()
    for metric in listed:
        dims = {d["Name"]: d["Value"] for d in metric["Dimensions"]}
        if "NodeName" in dims:
            found.add((dims["NodeName"], dims["GpuIndex"]))
    return found


def test_an_exporter_that_stops_on_one_node_of_three_pages(
    aws: dict[str, Any], templates: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node 2's exporter stops 25 minutes before the last run; the others go on. Three runs,
    five minutes apart, each find node 2 silent (all 8 GPUs); gpu-silent, replayed over what
    the runs published, goes into ALARM with node 2 as its contributor."""
    one, two, three = aws["nodes"]
    run_at = aws["run_at"]
    for node in (one, three):
        _exporter(aws["cloudwatch"], node, 8, run_at - 1200, run_at)
    _exporter(aws["cloudwatch"], two, 8, run_at - 1800, run_at - 1500)
    _as_role(aws, templates, monkeypatch)
    results = [_run(run_at + offset) for offset in (-600, -300, 0)]
    last = results[-1]
    assert (last["expected_nodes"], last["expected_gpus"], last["young_nodes"]) == (3, 24, 0)
    assert (last["silent_nodes"], last["silent_gpus"]) == (1, 8)
    assert last["silent"] == [f"{two} ({aws['instance'][two]}, p5.48xlarge): all 8 GPUs silent"]
    assert all(r["silent_gpus"] == 8 for r in results)
    assert _silent_series(aws["cloudwatch"]) == {(two, "all")}
    # The alarm the app deploys, replayed over what CloudWatch holds (as `gpu-insights
    # backtest --cloudwatch` reads it).
    specs = [s for s in gpu_alarms(AlarmSettings(cluster_name="train")) if s.key == "gpu-silent"]
    window = (run_at - 1200, run_at + 300)
    (result,) = backtest(
        specs,
        fetch_samples(aws["cloudwatch"], specs, start=window[0], end=window[1]),
        start=window[0],
        end=window[1],
    )
    assert result.contributors_alarmed == [("train", two, "all")]
    assert result.transitions[-1].new is AlarmState.ALARM
    assert result.transitions[-1].reason == "1 out of 1 time series evaluated to ALARM"


def test_a_node_scaled_down_does_not_page(
    aws: dict[str, Any], templates: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node 3 is drained and terminated: its exporter stopped with it, and a terminated
    instance is no longer expected. The run publishes a count of 0 (its heartbeat)."""
    one, two, three = aws["nodes"]
    run_at = aws["run_at"]
    for node in (one, two):
        _exporter(aws["cloudwatch"], node, 8, run_at - 900, run_at)
    _exporter(aws["cloudwatch"], three, 8, run_at - 1500, run_at - 1200)
    aws["ec2"].terminate_instances(InstanceIds=[aws["instance"][three]])
    _as_role(aws, templates, monkeypatch)
    result = _run(run_at)
    assert (result["expected_nodes"], result["silent_gpus"], result["silent"]) == (2, 0, [])
    assert _silent_series(aws["cloudwatch"]) == set()
    heartbeat = aws["cloudwatch"].get_metric_statistics(
        Namespace="GpuInsights",
        MetricName="gpu_silent",
        Dimensions=[{"Name": "ClusterName", "Value": "train"}],
        StartTime=datetime.fromtimestamp(run_at - 60, UTC),
        EndTime=datetime.fromtimestamp(run_at + 60, UTC),
        Period=60,
        Statistics=["SampleCount", "Maximum"],
    )["Datapoints"]
    assert [(d["SampleCount"], d["Maximum"]) for d in heartbeat] == [(1.0, 0.0)]


def test_a_gpu_missing_from_a_nodes_report_pages(
    aws: dict[str, Any], templates: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver on node 1 lists seven of its eight GPUs: the exporter reports 0 to 6, and
    the check names GPU 7."""
    one, two, three = aws["nodes"]
    run_at = aws["run_at"]
    _exporter(aws["cloudwatch"], one, 7, run_at - 900, run_at)
    for node in (two, three):
        _exporter(aws["cloudwatch"], node, 8, run_at - 900, run_at)
    _as_role(aws, templates, monkeypatch)
    result = _run(run_at)
    assert (result["silent_nodes"], result["silent_gpus"]) == (1, 1)
    assert result["silent"] == [f"{one} ({aws['instance'][one]}, p5.48xlarge): GPU 7 silent"]
    assert _silent_series(aws["cloudwatch"]) == {(one, "7")}


def test_new_nodes_are_not_expected_within_the_grace_period(
    aws: dict[str, Any], templates: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five minutes after launch no exporter has reported yet, and none is expected to."""
    _as_role(aws, templates, monkeypatch)
    result = _run(aws["run_at"] - RUN_AFTER_S + 300)
    assert (result["expected_nodes"], result["young_nodes"], result["silent"]) == (0, 3, [])


@pytest.mark.parametrize(
    "tag",
    [
        ("kubernetes.io/cluster/train", "shared"),
        ("eks:cluster-name", "train"),
        ("eks:eks-cluster-name", "train"),
        ("alpha.eksctl.io/cluster-name", "train"),
        ("eksctl.cluster.k8s.io/v1alpha1/cluster-name", "train"),
    ],
)
def test_any_one_tag_of_a_provisioning_path_makes_a_gpu_instance_expected(
    aws: dict[str, Any], templates: Any, monkeypatch: pytest.MonkeyPatch, tag: tuple[str, str]
) -> None:
    """Each tag a provisioning path sets names the cluster on its own
    (lambdas/shared/cluster_tags.py): a GPU instance with only that one is expected to report,
    and, with no exporter on it, is silent."""
    node, instance_id = _ec2_instance(aws["ec2"], "p5.48xlarge", "train", dict([tag]))
    _as_role(aws, templates, monkeypatch)
    result = _run(aws["run_at"])
    assert result["expected_nodes"] == 4
    assert f"{node} ({instance_id}, p5.48xlarge): all 8 GPUs silent" in result["silent"]


def test_the_check_expects_the_gpu_instances_each_path_tags_as_the_cluster_s(
    aws: dict[str, Any], templates: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Instances tagged as each provisioning path tags them (cli/demo/realistic/nodes.py): a
    managed node group's, Karpenter's and one eksctl's stack tags alone name are expected; an
    EKS Auto Mode instance (no exporter there), an untagged one and another cluster's one
    whose Name is "train" are not. Nothing reports: every expected node is silent."""
    ec2, run_at = aws["ec2"], aws["run_at"]
    expected = dict(
        _ec2_instance(ec2, "g5.12xlarge", "train", tags)
        for tags in (
            managed_node_group_tags("train", "gpu"),
            karpenter_tags("train", "gpu", "default"),
            eksctl_stack_tags("train"),
        )
    )
    for tags in (
        auto_mode_tags("train", "gpu"),
        UNTAGGED,
        {**managed_node_group_tags("other", "gpu"), "Name": "train"},
    ):
        _ec2_instance(ec2, "g5.12xlarge", "train", tags)
    _as_role(aws, templates, monkeypatch)
    result = _run(run_at)
    assert (result["expected_nodes"], result["expected_gpus"]) == (6, 3 * 8 + 3 * 4)
    silent = {line.partition(" (")[0] for line in result["silent"]}
    assert silent == set(aws["nodes"]) | set(expected)


@pytest.mark.parametrize(
    ("statement", "operation"),
    [
        ("ReadGpuInstances", "DescribeInstances"),
        ("ReadExporterSeries", "ListMetrics"),
        ("PublishSilence", "PutMetricData"),
    ],
)
def test_each_statement_of_the_role_is_needed(
    aws: dict[str, Any],
    templates: Any,
    monkeypatch: pytest.MonkeyPatch,
    statement: str,
    operation: str,
) -> None:
    """Without any one statement the run fails, and so publishes no heartbeat: the
    gpu-silence-check alarm pages rather than the cluster reading as quiet."""
    _as_role(aws, templates, monkeypatch, drop=statement)
    # moto words the refusal per protocol; both name the operation and say "not authorized".
    denied = rf"(?s)when calling the {operation} operation.*not authorized to perform"
    with pytest.raises(ClientError, match=denied):
        _run(aws["run_at"])
