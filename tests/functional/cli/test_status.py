"""`gpu-insights status` on a deployed cluster in moto: a healthy deployment and a broken one.

The account holds what the deployment and the cluster really make: running p5.48xlarge
instances tagged ``kubernetes.io/cluster/<cluster>`` (a CPU node and another cluster's GPU node
beside them), the real exporter's series sent through PutMetricData from each GPU node,
Container Insights' ``node_gpu_power_draw`` in the dimension sets the agent emits
(cli/demo/realistic/container_insights.py), the alarms the alarm catalog names, the topics with
their subscriptions, and the analyzers' findings files and the weekly report where the
functions write them (lambdas/shared/publisher.py ``findings_key``, lambdas/weekly_report).

moto lacks the EKS add-on API and, without its CloudFormation extra, DescribeStacks: those go
to real botocore clients answered by Stubbers, which hold requests and answers to the
services' own models. moto confirms an email subscription at once; a real one waits for its
recipient ("PendingConfirmation" until then:
https://docs.aws.amazon.com/sns/latest/api/API_Subscription.html), so that case is stubbed too.
"""

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from cdk.constructs.addon_configuration import ObservabilityAddonConfiguration
from cdk.outputs import (
    ALARMS,
    ANALYZERS,
    CRITICAL_TOPIC_ARN,
    OBSERVABILITY,
    REPORT_BUCKET_NAME,
    REPORT_TOPIC_ARN,
    WARNING_TOPIC_ARN,
)
from cdk.settings import Settings
from cli.demo.otlp import KeptRequests, otlp_samples
from cli.demo.promql import answering
from cli.demo.realistic import otel
from cli.demo.realistic import pods as k8s
from cli.demo.realistic.container_insights import NODE_GPU_DIMENSION_SETS, gpu_device
from cli.demo.realistic.nodes import P5_48XLARGE, UNTAGGED, auto_mode_tags
from cli.main import main
from cli.preflight.checks import Check, Verdict
from cli.status.aws import Clients, expected_alarms, gather, read_coverage, read_subscriptions
from cli.status.checks import run_checks
from gpu_insights_agent.contract.metrics import ExporterSink
from gpu_insights_agent.contract.resource_names import stack_name, topic_name
from gpu_insights_agent.emf.sinks import BufferedSender, PutMetricDataSink
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from gpu_insights_agent.exporter.otlp_sink import OtlpSink
from gpu_insights_agent.exporter.simulated_trace import SimulatedGpu, node_trace
from lambdas.shared.container_insights_mode import OTEL_MIN_ADDON_VERSION, ContainerInsightsMode
from lambdas.shared.promql import promql_for
from lambdas.shared.publisher import findings_key
from lambdas.weekly_report.handler import report_prefix
from tests.prometheus import serve, write_openmetrics

REGION = "us-west-2"
CLUSTER = "ml-prod"
ACCOUNT = "123456789012"
#: One of the Amazon Linux images moto knows (its default image list).
IMAGE = "ami-12c6146b"
#: Status runs half an hour after moto launched the instances: past the 15-minute grace.
RUN_AFTER_S = 1800
INTERVAL_S = 60.0
#: A deployment in Classic mode (its add-on's, ``_addon``); OTel mode's: ``OTEL``.
SETTINGS = Settings(
    cluster_name=CLUSTER,
    region=REGION,
    account=ACCOUNT,
    container_insights_mode=ContainerInsightsMode.CLASSIC,
)


def _instance(
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


def _exporter(cloudwatch: Any, node: str, start: float, end: float) -> None:
    """The real exporter on ``node`` (eight H100s) sends a cycle a minute from start to end."""
    now = [0.0]
    trace = node_trace(
        [SimulatedGpu("busy") for _ in range(P5_48XLARGE.gpu_count)],
        duration_s=end - start + INTERVAL_S,
        node=node,
    )
    exporter = Exporter(
        NvmlSource(FakeNvml(trace, clock=lambda: now[0], sleep=lambda _: None)),
        BufferedSender(PutMetricDataSink(cloudwatch)),
        ExporterConfig(cluster_name=CLUSTER, node_name=node, interval_s=INTERVAL_S),
        clock=lambda: start + now[0],
    )
    exporter.start()
    while start + now[0] < end:
        exporter.collect_once()
        now[0] += INTERVAL_S
    exporter.shutdown()


def _otlp_exporter(node: str, start: float, end: float) -> Iterator[Any]:
    """The real exporter on ``node`` with its OTLP sink (OTel mode's default), a cycle a minute
    from start to end: its requests as the samples CloudWatch's PromQL holds."""
    now = [0.0]
    trace = node_trace(
        [SimulatedGpu("busy") for _ in range(P5_48XLARGE.gpu_count)],
        duration_s=end - start + INTERVAL_S,
        node=node,
    )
    kept = KeptRequests()
    exporter = Exporter(
        NvmlSource(FakeNvml(trace, clock=lambda: now[0], sleep=lambda _: None)),
        BufferedSender(OtlpSink("http://local", exporter=kept, start_ns=int(start * 1e9))),
        ExporterConfig(cluster_name=CLUSTER, node_name=node, interval_s=INTERVAL_S),
        clock=lambda: start + now[0],
    )
    exporter.start()
    while start + now[0] < end:
        exporter.collect_once()
        now[0] += INTERVAL_S
    exporter.shutdown()
    return otlp_samples(kept.requests)


def _container_insights(cloudwatch: Any, nodes: dict[str, str], start: float, end: float) -> None:
    """node_gpu_power_draw a minute per GPU, in each of the agent's node_gpu_* dimension sets."""
    at = start
    while at < end:
        data = []
        for node, instance_id in nodes.items():
            for gpu in range(P5_48XLARGE.gpu_count):
                full = {
                    "ClusterName": CLUSTER,
                    "NodeName": node,
                    "InstanceId": instance_id,
                    "InstanceType": P5_48XLARGE.name,
                    "GpuDevice": gpu_device(gpu),
                }
                for dimension_set in NODE_GPU_DIMENSION_SETS:
                    data.append(
                        {
                            "MetricName": "node_gpu_power_draw",
                            "Dimensions": [{"Name": d, "Value": full[d]} for d in dimension_set],
                            "Timestamp": datetime.fromtimestamp(at, UTC),
                            "Value": 650.0,
                        }
                    )
        for i in range(0, len(data), 1000):
            cloudwatch.put_metric_data(Namespace="ContainerInsights", MetricData=data[i : i + 1000])
        at += 60


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "t")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "t")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        session = boto3.Session(region_name=REGION)
        ec2 = session.client("ec2")
        nodes = dict(_instance(ec2, P5_48XLARGE.name, CLUSTER) for _ in range(3))
        _instance(ec2, "m5.large", CLUSTER)  # a CPU node: nothing to report
        _instance(ec2, P5_48XLARGE.name, "other")  # another cluster's GPU node
        run_at = float(int(time.time()) + RUN_AFTER_S)
        sns = session.client("sns")
        topics = {
            purpose: sns.create_topic(Name=topic_name(CLUSTER, purpose))["TopicArn"]
            for purpose in ("critical", "warning", "reports")
        }
        s3 = session.client("s3")
        bucket = "gpuinsights-ml-prod-analyzers-reportbucket-1a2b3c4d5e6f"
        s3.create_bucket(
            Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
        )
        yield {
            "session": session,
            "nodes": nodes,
            "run_at": run_at,
            "topics": topics,
            "bucket": bucket,
        }


def _stacks(account: dict[str, Any], *, deployed: bool = True) -> Any:
    """DescribeStacks for the deployment's three stacks, as CloudFormation answers."""
    client = account["session"].client("cloudformation")
    stubber = Stubber(client)
    created = datetime.fromtimestamp(account["run_at"], UTC) - timedelta(days=10)
    outputs = {
        OBSERVABILITY: {},
        ALARMS: {
            CRITICAL_TOPIC_ARN: account["topics"]["critical"],
            WARNING_TOPIC_ARN: account["topics"]["warning"],
        },
        ANALYZERS: {
            REPORT_TOPIC_ARN: account["topics"]["reports"],
            REPORT_BUCKET_NAME: account["bucket"],
        },
    }
    for part, values in outputs.items():
        name = stack_name(CLUSTER, part)
        if not deployed and part == ANALYZERS:
            stubber.add_client_error(
                "describe_stacks",
                "ValidationError",
                f"Stack with id {name} does not exist",
                400,
                expected_params={"StackName": name},
            )
            continue
        stack = {
            "StackName": name,
            "StackId": f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/{name}/1a2b3c4d",
            "CreationTime": created,
            "StackStatus": "UPDATE_COMPLETE",
            "Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in values.items()],
        }
        stubber.add_response("describe_stacks", {"Stacks": [stack]}, {"StackName": name})
    stubber.activate()
    return client


def _addon(account: dict[str, Any], status: str) -> Any:
    client = account["session"].client("eks")
    stubber = Stubber(client)
    stubber.add_response(
        "describe_addon",
        {
            "addon": {
                "addonName": "amazon-cloudwatch-observability",
                "clusterName": CLUSTER,
                "addonVersion": "v4.1.0-eksbuild.1",
                "status": status,
            }
        },
        {"clusterName": CLUSTER, "addonName": "amazon-cloudwatch-observability"},
    )
    stubber.activate()
    return client


def _clients(account: dict[str, Any], cloudformation: Any, addons: Any, sns: Any = None) -> Clients:
    session = account["session"]
    return Clients(
        eks_addons=addons,
        cloudformation=cloudformation,
        cloudwatch=session.client("cloudwatch"),
        ec2=session.client("ec2"),
        sns=sns or session.client("sns"),
        s3=session.client("s3"),
    )


def _alarms(
    account: dict[str, Any], states: dict[str, str], settings: Settings = SETTINGS
) -> list[str]:
    """The alarms ``settings``' deployment makes (plain metric alarms under their names), in
    the given states; a name mapped to "" is not created."""
    cloudwatch = account["session"].client("cloudwatch")
    names = expected_alarms(settings)
    for name in names:
        state = states.get(name, "OK")
        if not state:
            continue
        cloudwatch.put_metric_alarm(
            AlarmName=name,
            Namespace="GpuInsights",
            MetricName="gpu_healthy",
            Statistic="SampleCount",
            Period=60,
            EvaluationPeriods=1,
            Threshold=1,
            ComparisonOperator="LessThanThreshold",
        )
        cloudwatch.set_alarm_state(AlarmName=name, StateValue=state, StateReason="test")
    return names


def _analyzed(account: dict[str, Any], *, days_ago: int, report: bytes = b"{}") -> None:
    s3 = account["session"].client("s3")
    day = datetime.fromtimestamp(account["run_at"], UTC).date() - timedelta(days=days_ago)
    finding = {"kind": "ebs_idle_volume", "resource": "vol-0a1b2c3d4e5f67890"}
    for analyzer, lines in (("storage", [finding, finding]), ("training", [])):
        body = "".join(json.dumps(f) + "\n" for f in lines).encode()
        s3.put_object(Bucket=account["bucket"], Key=findings_key(CLUSTER, analyzer, day), Body=body)
    year, week, _ = (day - timedelta(days=7)).isocalendar()
    key = report_prefix(CLUSTER, f"{year}-W{week:02d}") + "report.json"
    s3.put_object(Bucket=account["bucket"], Key=key, Body=report)


def _by_name(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


def test_a_working_deployment_is_all_ok(account: dict[str, Any]) -> None:
    run_at = account["run_at"]
    cloudwatch = account["session"].client("cloudwatch")
    for node in account["nodes"]:
        _exporter(cloudwatch, node, run_at - 1200, run_at)
    _container_insights(cloudwatch, account["nodes"], run_at - 900, run_at)
    _alarms(account, {})
    sns = account["session"].client("sns")
    sns.subscribe(
        TopicArn=account["topics"]["critical"], Protocol="email", Endpoint="oncall@example.com"
    )
    sns.subscribe(
        TopicArn=account["topics"]["warning"], Protocol="email", Endpoint="gpu@example.com"
    )
    sns.subscribe(
        TopicArn=account["topics"]["reports"], Protocol="email", Endpoint="lead@example.com"
    )
    _analyzed(account, days_ago=1)
    clients = _clients(account, _stacks(account), _addon(account, "ACTIVE"))
    checks = run_checks(gather(SETTINGS, clients, now=run_at))
    by_name = _by_name(checks)
    assert {c.name: c.verdict for c in checks} == {
        "stacks": Verdict.OK,
        "observability-addon": Verdict.OK,
        "container-insights-gpu": Verdict.OK,
        "exporter-nodes": Verdict.OK,
        "silence-coverage": Verdict.OK,
        "alarms": Verdict.OK,
        "topic:critical": Verdict.OK,
        "topic:warning": Verdict.OK,
        "topic:report": Verdict.OK,
        "analyzer:storage": Verdict.OK,
        "analyzer:training": Verdict.OK,
        "weekly-report": Verdict.OK,
        "lemon-nodes": Verdict.OK,
    }
    # 3 nodes x 8 GPUs, one ClusterName-only series a minute per GPU over 15 minutes.
    assert by_name["container-insights-gpu"].detail == (
        "node_gpu_power_draw: 360 samples in the last 15 minutes"
    )
    assert by_name["exporter-nodes"].detail == (
        "3 GPU nodes, 24 GPUs reported in the last 15 minutes"
    )
    assert by_name["topic:critical"].detail == "1 confirmed: email:oncall@example.com"
    assert by_name["analyzer:storage"].detail.endswith(": 2 findings")
    assert by_name["analyzer:training"].detail.endswith(": 0 findings")


def test_each_lemon_node_of_the_newest_report_is_named_with_what_to_do(
    account: dict[str, Any],
) -> None:
    """The newest weekly report's lemon nodes (report.json ``lemons``), one warning a node with
    its numbers and the report's action; a report that is not JSON is said, not read as none."""
    lemon = {
        "node": "ip-10-0-1-17.ec2.internal", "score": 3.43, "events": 6, "gpu_hours": 720.0,
        "failures": 2, "fail_slows": 1, "xids": 4, "action": "cordon it (kubectl cordon ...",
    }  # fmt: skip
    _analyzed(account, days_ago=1, report=json.dumps({"lemons": {"lemons": [lemon]}}).encode())
    clients = _clients(account, _stacks(account), _addon(account, "ACTIVE"))
    by_name = _by_name(run_checks(gather(SETTINGS, clients, now=account["run_at"])))
    check = by_name["lemon-node:ip-10-0-1-17.ec2.internal"]
    assert check.verdict is Verdict.WARN
    assert check.detail.startswith(
        "3.43x the fleet's failures, fail-slows and XIDs per GPU-hour over 30 days: 2 failed "
        "runs, 1 fail-slows, 4 XIDs on 720.0 GPU-hours (report "
    )
    assert check.fix == "cordon it (kubectl cordon ..."
    assert "lemon-nodes" not in by_name
    _analyzed(account, days_ago=1, report=b"<html>")
    clients = _clients(account, _stacks(account), _addon(account, "ACTIVE"))
    by_name = _by_name(run_checks(gather(SETTINGS, clients, now=account["run_at"])))
    assert by_name["lemon-nodes"].verdict is not Verdict.OK
    assert "is not JSON" in by_name["lemon-nodes"].detail


def test_a_broken_deployment_names_what_is_wrong(account: dict[str, Any]) -> None:
    run_at = account["run_at"]
    cloudwatch = account["session"].client("cloudwatch")
    silent, *reporting = list(account["nodes"])
    for node in reporting:
        _exporter(cloudwatch, node, run_at - 1200, run_at)
    # No Container Insights GPU series: the add-on is degraded.
    names = _alarms(
        account,
        {
            expected_alarms(SETTINGS)[0]: "INSUFFICIENT_DATA",
            expected_alarms(SETTINGS)[-2]: "",  # the notifier's failure alarm: missing
        },
    )
    clients = _clients(account, _stacks(account, deployed=False), _addon(account, "DEGRADED"))
    checks = run_checks(gather(SETTINGS, clients, now=run_at))
    by_name = _by_name(checks)
    assert {c.name: c.verdict for c in checks} == {
        "stacks": Verdict.FAIL,
        "observability-addon": Verdict.FAIL,
        "container-insights-gpu": Verdict.FAIL,
        "exporter-nodes": Verdict.FAIL,
        "silence-coverage": Verdict.OK,
        "alarms": Verdict.FAIL,
        "topic:critical": Verdict.FAIL,
        "topic:warning": Verdict.WARN,
        "topic:report": Verdict.FAIL,
        "report-bucket": Verdict.FAIL,
    }
    assert by_name["stacks"].detail == "GpuInsights-ml-prod-Analyzers not deployed"
    assert "DEGRADED" in by_name["observability-addon"].detail
    detail = by_name["exporter-nodes"].detail
    assert detail.startswith("1 of 3 GPU nodes silent: ")
    assert f"{silent} (" in detail
    assert "all 8 GPUs silent" in detail
    assert by_name["alarms"].detail == (
        f"1 of {len(names)} alarms missing: gpu-insights-ml-prod-notifier-failing"
    )
    assert by_name["topic:critical"].detail == "no confirmed subscriber"


def test_status_names_the_gpu_instances_the_silence_check_does_not_cover(
    account: dict[str, Any],
) -> None:
    """Beside the three tagged GPU nodes that report: an EKS Auto Mode GPU instance (tagged as
    Auto Mode tags them: no exporter there) and a self-managed one launched without a tag that
    Container Insights reports as a node of the cluster. exporter-nodes still judges the three;
    each of the others is one silence-coverage line, the untagged one failing with its tag."""
    run_at = account["run_at"]
    session = account["session"]
    ec2, cloudwatch = session.client("ec2"), session.client("cloudwatch")
    auto_node, auto_id = _instance(ec2, P5_48XLARGE.name, CLUSTER, auto_mode_tags(CLUSTER, "gpu"))
    bare_node, bare_id = _instance(ec2, P5_48XLARGE.name, CLUSTER, UNTAGGED)
    for node in account["nodes"]:
        _exporter(cloudwatch, node, run_at - 1200, run_at)
    _container_insights(cloudwatch, {**account["nodes"], bare_node: bare_id}, run_at - 900, run_at)
    clients = _clients(account, _stacks(account), _addon(account, "ACTIVE"))
    checks = run_checks(gather(SETTINGS, clients, now=run_at))
    by_name = _by_name(checks)
    assert by_name["exporter-nodes"].detail == (
        "3 GPU nodes, 24 GPUs reported in the last 15 minutes"
    )
    lines = {c.name: (c.verdict, c.detail, c.fix) for c in checks if "silence-coverage" in c.name}
    assert lines == {
        f"silence-coverage:{auto_id}": (
            Verdict.WARN,
            f"p5.48xlarge {auto_node}: an EKS Auto Mode node: the exporter does not run there, "
            "so the silence check expects nothing of it",
            "none by tag: Container Insights' GPU metrics are all that watch its GPUs",
        ),
        f"silence-coverage:{bare_id}": (
            Verdict.FAIL,
            f"p5.48xlarge {bare_node}: no tag names it cluster {CLUSTER}'s (it is node "
            f"{bare_node} of the cluster in Container Insights' node_gpu_power_draw series), "
            "so the silence check does not see it",
            f"tag it kubernetes.io/cluster/{CLUSTER}=owned, in its launch template or Auto "
            "Scaling group (propagated at launch) so that its replacements carry it too",
        ),
    }


def test_in_otel_mode_the_dcgm_series_node_names_find_an_untagged_gpu_instance(
    account: dict[str, Any],
) -> None:
    """OTel mode's evidence is the node names of the DCGM series the container-insights-gpu
    check read: an untagged GPU instance named there is described by its private DNS name
    (tests/unit/cli/test_silence_coverage.py holds what is sent for a name with wildcards)."""
    ec2 = account["session"].client("ec2")
    bare_node, bare_id = _instance(ec2, P5_48XLARGE.name, CLUSTER, UNTAGGED)
    _instance(ec2, P5_48XLARGE.name, CLUSTER, UNTAGGED)  # named by nothing: not the cluster's
    clients = _clients(account, _stacks(account), _addon(account, "ACTIVE"))
    (uncovered,) = read_coverage(clients, CLUSTER, dcgm_nodes={*account["nodes"], bare_node})
    assert (uncovered.instance_id, uncovered.untagged) == (bare_id, True)
    assert f"(it is node {bare_node} of the cluster in its DCGM series)" in uncovered.why


def test_alarms_without_data_and_pending_subscriptions_are_named(
    account: dict[str, Any],
) -> None:
    names = _alarms(account, {expected_alarms(SETTINGS)[0]: "INSUFFICIENT_DATA"})
    # A real email subscription waits for its recipient: ListSubscriptionsByTopic's answer.
    sns = account["session"].client("sns")
    stubber = Stubber(sns)
    critical = account["topics"]["critical"]
    stubber.add_response(
        "list_subscriptions_by_topic",
        {
            "Subscriptions": [
                {
                    "SubscriptionArn": "PendingConfirmation",
                    "Owner": ACCOUNT,
                    "Protocol": "email",
                    "Endpoint": "oncall@example.com",
                    "TopicArn": critical,
                },
                {
                    "SubscriptionArn": f"{critical}:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0",
                    "Owner": ACCOUNT,
                    "Protocol": "https",
                    "Endpoint": "https://events.pagerduty.com/integration/KEY/enqueue",
                    "TopicArn": critical,
                },
            ]
        },
        {"TopicArn": critical},
    )
    stubber.activate()
    subscriptions = read_subscriptions(sns, critical)
    stubber.assert_no_pending_responses()
    assert subscriptions is not None
    assert subscriptions.pending == ("email:oncall@example.com",)
    clients = _clients(account, _stacks(account), _addon(account, "ACTIVE"))
    checks = _by_name(run_checks(gather(SETTINGS, clients, now=account["run_at"])))
    alarms = checks["alarms"]
    assert alarms.verdict is Verdict.WARN
    assert alarms.detail == (
        f"{len(names)} alarms; without data (INSUFFICIENT_DATA): {expected_alarms(SETTINGS)[0]}"
    )


def test_the_command_exits_1_and_prints_json_when_a_check_fails(
    account: dict[str, Any], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command as a user runs it, its clients made as every command makes them; the two
    APIs moto lacks answered by their Stubbers (the Analyzers stack not deployed)."""
    from lambdas.shared import aws_clients

    stubbed = {
        "cloudformation": _stacks(account, deployed=False),
        "eks": _addon(account, "ACTIVE"),
    }
    made = aws_clients.client
    monkeypatch.setattr(
        # Each Stubber answers the first client of its service (the add-on's reads); the node
        # repair reads get moto's, which has no such cluster, so status names no node group.
        aws_clients,
        "client",
        lambda service, **kw: stubbed.pop(service, None) or made(service, **kw),
    )
    status = main(["status", "-c", f"cluster_name={CLUSTER}", "--region", REGION, "--json"])
    out = capsys.readouterr()
    assert status == 1, out.err
    document = json.loads(out.out)
    assert document["cluster"] == CLUSTER
    assert document["failed"] is True
    verdicts = {c["check"]: c["verdict"] for c in document["checks"]}
    assert verdicts["stacks"] == "fail"
    assert verdicts["observability-addon"] == "ok"
    # The three GPU nodes were launched just now: inside their grace period, not silent.
    (exporter,) = [c for c in document["checks"] if c["check"] == "exporter-nodes"]
    assert exporter["verdict"] == "warn"
    assert "(3 inside their grace period)" in exporter["detail"]


# OTel mode: the add-on sends DCGM's series over OTLP, read with PromQL through CloudWatch's
# query API; here Debian's Prometheus answers that API's host (cli/demo/promql.py) with the
# realistic model's DCGM series (cli/demo/realistic/otel.py), moto the rest.
OTEL = replace(SETTINGS, container_insights_mode=ContainerInsightsMode.OTEL)


def _otel_addon(account: dict[str, Any], version: str = OTEL_MIN_ADDON_VERSION) -> Any:
    """The add-on as the Observability stack configures it in OTel mode (at ``version``)."""
    client = account["session"].client("eks")
    stubber = Stubber(client)
    configuration = ObservabilityAddonConfiguration.for_gpu_cluster(
        cluster_name=CLUSTER,
        container_logs=OTEL.container_logs,
        tolerate_all_taints=OTEL.tolerate_all_taints,
        gpu_taint_keys=OTEL.gpu_taint_keys,
        mode=OTEL.container_insights_mode,
    )
    stubber.add_response(
        "describe_addon",
        {
            "addon": {
                "addonName": "amazon-cloudwatch-observability",
                "clusterName": CLUSTER,
                "addonVersion": version,
                "status": "ACTIVE",
                "configurationValues": configuration.to_json(),
            }
        },
        {"clusterName": CLUSTER, "addonName": "amazon-cloudwatch-observability"},
    )
    stubber.activate()
    return client


def _dcgm(nodes: dict[str, str], start: float, end: float, lost: tuple[str, int]) -> Iterator[Any]:
    """Each node's eight GPUs' DCGM_FI_DEV_GPU_UTIL every 30 s (the add-on's default
    metricResolution), GPU 0 held by a training pod; the ``lost`` GPU sends nothing."""
    pod = k8s.job_pods("vision", "resnet-healthy", 1, indexed=True)[0]
    for node in nodes:
        for gpu in range(P5_48XLARGE.gpu_count):
            if (node, gpu) == lost:
                continue
            labels = otel.dcgm_promql_labels(CLUSTER, node, gpu, pod if gpu == 0 else None)
            at = start
            while at < end:
                yield "DCGM_FI_DEV_GPU_UTIL", labels, at, 87.0
                at += otel.SCRAPE_INTERVAL_S


@pytest.fixture
def dcgm_engine(account: dict[str, Any], tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Prometheus holding 20 minutes of DCGM series of two of the three GPU nodes (the third
    sends none), one GPU of the second lost, answering the Region's query API host."""
    run_at = account["run_at"]
    silent, lost, full = list(account["nodes"])
    nodes = {n: account["nodes"][n] for n in (lost, full)}
    write_openmetrics(tmp_path / "dcgm.om", _dcgm(nodes, run_at - 1200, run_at, (lost, 5)))
    with serve(tmp_path / "dcgm.om", tmp_path / "data") as url, answering(REGION, url) as api:
        yield {"silent": silent, "lost": lost, "full": full, "api": api}


@pytest.mark.promql_engine
def test_otel_mode_reads_each_gpu_nodes_dcgm_series_with_promql(
    account: dict[str, Any], dcgm_engine: dict[str, Any]
) -> None:
    cloudwatch = account["session"].client("cloudwatch")
    promql = promql_for(cloudwatch)
    clients = replace(_clients(account, _stacks(account), _otel_addon(account)), promql=promql)
    checks = _by_name(run_checks(gather(OTEL, clients, now=account["run_at"])))
    check = checks["container-insights-gpu"]
    assert check.verdict is Verdict.FAIL
    silent, lost = dcgm_engine["silent"], dcgm_engine["lost"]
    assert check.detail.startswith(
        "2 of 3 GPU nodes without DCGM_FI_DEV_GPU_UTIL in the last 15 minutes: "
    )
    assert f"{silent} (" in check.detail
    assert "all 8 GPUs silent" in check.detail
    assert f"{lost} (" in check.detail
    assert "GPU 5 silent" in check.detail
    assert dcgm_engine["full"] not in check.detail
    # One query for every node's GPUs, one for the indices of the node short of GPUs, and one
    # for the serving alarms' models (cli/status/aws.py read_serving_seen).
    assert promql.requests == 3
    # Sent SigV4-signed to the Region's monitoring host, as CloudWatch takes them.
    sent = dcgm_engine["api"].answered
    assert [r.full_url for r in sent] == [
        "https://monitoring.us-west-2.amazonaws.com/api/v1/query"
    ] * 3
    for request in sent:
        authorization = request.get_header("Authorization")
        assert authorization.startswith("AWS4-HMAC-SHA256 Credential=")
        assert "/us-west-2/monitoring/aws4_request" in authorization


@pytest.mark.promql_engine
def test_otel_status_command_is_ok_when_every_gpu_node_sends_dcgm(
    account: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The README's command line with the OTel setting: the PromQL client made beside the
    CloudWatch client, answered at the Region's monitoring host."""
    from lambdas.shared import aws_clients

    run_at = account["run_at"]
    exporter = [s for n in account["nodes"] for s in _otlp_exporter(n, run_at - 1200, run_at)]
    write_openmetrics(
        tmp_path / "dcgm.om",
        [*_dcgm(account["nodes"], run_at - 1200, run_at, ("", -1)), *exporter],
    )
    stubbed = {"cloudformation": _stacks(account), "eks": _otel_addon(account)}
    made = aws_clients.client
    monkeypatch.setattr(
        # Each Stubber answers the first client of its service (the add-on's reads); the node
        # repair reads get moto's, which has no such cluster, so status names no node group.
        aws_clients,
        "client",
        lambda service, **kw: stubbed.pop(service, None) or made(service, **kw),
    )
    monkeypatch.setattr("time.time", lambda: run_at)
    with serve(tmp_path / "dcgm.om", tmp_path / "data") as url, answering(REGION, url):
        main(
            [
                "status",
                "-c",
                f"cluster_name={CLUSTER}",
                "-c",
                "container_insights_mode=otel",
                "--region",
                REGION,
                "--json",
            ]
        )
    document = json.loads(capsys.readouterr().out)
    checks = {c["check"]: c for c in document["checks"]}
    check = checks["container-insights-gpu"]
    assert check["verdict"] == "ok", check
    assert check["detail"] == (
        "DCGM_FI_DEV_GPU_UTIL: 3 GPU nodes, 24 GPUs in the last 15 minutes (PromQL)"
    )
    # The exporter's sink is OTLP by default in OTel mode: its series read with PromQL.
    exporter_check = checks["exporter-nodes"]
    assert exporter_check["verdict"] == "ok", exporter_check
    assert exporter_check["detail"] == (
        "3 GPU nodes, 24 GPUs reported in the last 15 minutes (gpu_healthy, PromQL)"
    )
    assert checks["silence-coverage"]["verdict"] == "ok"
    assert checks["silence-coverage"]["detail"].startswith(
        "no silence check function with exporter_sink=otlp: gpu-silent is a PromQL alarm"
    )


@pytest.mark.promql_engine
def test_with_the_otlp_sink_the_exporter_series_are_read_with_promql(
    account: dict[str, Any], tmp_path: Path
) -> None:
    """OTel mode, the exporter's OTLP sink: two of the three GPU nodes' exporters send, the
    third is silent, and it is named from the PromQL read (GpuInsights holds nothing). No
    silence check function runs: the untagged GPU instance beside them is no
    silence-coverage line, as gpu-silent reads Kube State Metrics' capacity, not tags."""
    run_at = account["run_at"]
    silent, *sending = list(account["nodes"])
    _instance(account["session"].client("ec2"), P5_48XLARGE.name, CLUSTER, UNTAGGED)
    samples = [s for n in sending for s in _otlp_exporter(n, run_at - 1200, run_at)]
    write_openmetrics(tmp_path / "exporter.om", samples)
    otlp = replace(OTEL, exporter_sink=ExporterSink.OTLP)
    cloudwatch = account["session"].client("cloudwatch")
    promql = promql_for(cloudwatch)
    clients = replace(_clients(account, _stacks(account), _otel_addon(account)), promql=promql)
    with serve(tmp_path / "exporter.om", tmp_path / "data") as url, answering(REGION, url):
        checks = run_checks(gather(otlp, clients, now=run_at))
    by_name = _by_name(checks)
    exporter = by_name["exporter-nodes"]
    assert exporter.verdict is Verdict.FAIL
    assert exporter.detail.startswith("1 of 3 GPU nodes silent (gpu_healthy, PromQL): ")
    assert f"{silent} (" in exporter.detail
    assert "all 8 GPUs silent" in exporter.detail
    assert [c.name for c in checks if c.name.startswith("silence-coverage")] == ["silence-coverage"]
    assert by_name["silence-coverage"].verdict is Verdict.OK
    assert "watches every GPU node the exporter runs on whatever its tags" in (
        by_name["silence-coverage"].detail
    )


def test_a_mode_the_add_on_does_not_run_fails_the_check(account: dict[str, Any]) -> None:
    """Settings in OTel mode, the add-on in Classic (its chart's defaults): said, not read."""
    clients = _clients(account, _stacks(account), _addon(account, "ACTIVE"))
    checks = _by_name(run_checks(gather(OTEL, clients, now=account["run_at"])))
    check = checks["container-insights-gpu"]
    assert check.verdict is Verdict.FAIL
    assert check.detail == (
        "the add-on runs classic Container Insights, but container_insights_mode=otel: the "
        "analyzers read series it does not send"
    )
