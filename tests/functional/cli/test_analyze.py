"""`gpu-insights analyze` against moto: its clients come from the handlers' session, so they
parse GetMetricData's timestamps with the handlers' parser and a run costs the CPU it costs in
Lambda (benchmarks/analyze_cli.py measures it).

CloudWatch's JSON protocol sends GetMetricData's ``Timestamps`` as epoch seconds
(botocore's cloudwatch model: "protocols": ["smithy-rpc-v2-cbor", "json", "query"], json
being the first botocore supports; getmoto/moto PR #9562 answers it so)."""

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.utils import parse_timestamp
from moto import mock_aws

from cli.demo.promql import answering
from cli.demo.realistic import otel
from cli.main import main
from lambdas.shared import aws_clients

# One GPU's day, held at 27% of its power limit (the fixture ``clients``).
from tests.functional.lambdas.test_training_config import CLUSTER, clients  # noqa: F401
from tests.prometheus import serve, write_openmetrics

REGION = "us-east-1"
HOURS = 48


@pytest.fixture
def no_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "t")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "t")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def volume(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """One gp3 volume the EBS CSI driver tagged for cluster train, attached to a node, its
    operations and queue length published every hour of the last two days."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "t")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "t")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        session = boto3.Session(region_name=REGION)
        ec2, cloudwatch = session.client("ec2"), session.client("cloudwatch")
        image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
        node = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1)["Instances"][0]
        volume_id = ec2.create_volume(
            AvailabilityZone=node["Placement"]["AvailabilityZone"],
            Size=500,
            VolumeType="gp3",
            TagSpecifications=[
                {
                    "ResourceType": "volume",
                    "Tags": [{"Key": "kubernetes.io/cluster/train", "Value": "owned"}],
                }
            ],
        )["VolumeId"]
        ec2.attach_volume(VolumeId=volume_id, InstanceId=node["InstanceId"], Device="/dev/sdf")
        now = datetime.now(UTC).timestamp() // 3600 * 3600
        for metric in ("VolumeReadOps", "VolumeWriteOps", "VolumeQueueLength"):
            cloudwatch.put_metric_data(
                Namespace="AWS/EBS",
                MetricData=[
                    {
                        "MetricName": metric,
                        "Dimensions": [{"Name": "VolumeId", "Value": volume_id}],
                        "Timestamp": datetime.fromtimestamp(now - h * 3600, UTC),
                        "Value": 180.0,
                    }
                    for h in range(1, HOURS + 1)
                ],
            )
        yield volume_id


def test_analyze_reads_with_the_handlers_timestamp_parser(
    volume: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    parsed: list[Any] = []
    handlers_parser = aws_clients.epoch_timestamp

    def counting(value: Any) -> datetime:
        parsed.append(value)
        return handlers_parser(value)

    monkeypatch.setattr(aws_clients, "epoch_timestamp", counting)
    argv = ["analyze", "storage", "--cluster-name", "train", "--region", REGION, "--days", "3"]
    assert main([*argv, "--json"]) == 0
    capsys.readouterr()
    # GetMetricData's points (the queue length's window maximum, at least) came back as epoch
    # seconds and went through the handlers' parser, which gives botocore's datetimes.
    epochs = [value for value in parsed if isinstance(value, int | float)]
    assert epochs
    assert all(handlers_parser(e) == parse_timestamp(e) for e in epochs)  # type: ignore[arg-type]


@pytest.mark.usefixtures("no_profile")
def test_analyze_training_runs_the_attribution_with_the_settings_low_power_line(
    clients: dict[str, Any],  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The handler's run, GPU-hour attribution included, with the configuration its construct
    builds: a GPU at 27% of its limit is held without work under the default 30, working
    under ``-c low_power_percent=25`` or the same setting in cdk.json."""
    cdk_json = tmp_path / "cdk.json"
    cdk_json.write_text('{"context": {}}')
    # The GPUs' series are seeded as Classic Container Insights publishes them.
    argv = [
        *("analyze", "training", "--cluster-name", CLUSTER, "--region", REGION, "--json"),
        *("-c", "container_insights_mode=classic"),
    ]

    def kinds(*more: str) -> list[str]:
        assert main([*argv, *more]) == 0
        lines = capsys.readouterr().out.splitlines()
        return [json.loads(line)["kind"] for line in lines if line]

    assert "gpu_held_not_working" in kinds("--cdk-json", str(cdk_json))
    # Each finding as the function publishes it: named by its cluster, dated by the window.
    assert main([*argv, "--cdk-json", str(cdk_json)]) == 0
    for line in filter(None, capsys.readouterr().out.splitlines()):
        finding = json.loads(line)
        assert finding["cluster"] == CLUSTER
        assert finding["detected_at"].endswith("+00:00")
    assert "gpu_held_not_working" not in kinds(
        "--cdk-json", str(cdk_json), "-c", "low_power_percent=25"
    )
    cdk_json.write_text('{"context": {"low_power_percent": 25}}')  # and classic, from argv
    assert "gpu_held_not_working" not in kinds("--cdk-json", str(cdk_json))


@contextmanager
def _other_clusters_series(tmp_path: Path) -> Iterator[None]:
    """CloudWatch's PromQL API for the Region, answered by Prometheus holding the series of
    cluster ml-prod only (one GPU's DCGM utilization): in OTel mode with the OTLP sink, the
    default in us-east-1, the training analyzer reads the emitter's and exporter's series there."""
    now = time.time()
    labels = otel.dcgm_promql_labels("ml-prod", "ip-10-0-1-17.ec2.internal", 0, None)
    samples = [("DCGM_FI_DEV_GPU_UTIL", labels, now - 600 + 30 * i, 87.0) for i in range(20)]
    write_openmetrics(tmp_path / "other.om", samples)
    with serve(tmp_path / "other.om", tmp_path / "data") as url, answering(REGION, url):
        yield


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("storage", ["no EBS volume tagged for or attached to cluster 'ml-prd'", "in us-east-1"]),
        pytest.param(
            "training",
            [
                "cluster 'ml-prd' has no training job metrics (the emitter's OTLP series, by "
                "PromQL) and no GPU-hours in Container Insights (DCGM's series, by PromQL)",
            ],
            marks=pytest.mark.promql_engine,
        ),
    ],
)
def test_analyze_of_a_cluster_with_nothing_says_so_not_no_findings(
    target: str,
    words: list[str],
    no_profile: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A typo in the cluster's name (ml-prd for ml-prod) finds no volume, job or GPU-hour: exit
    3 and one line, where "No findings." and 0 read as a clean bill of health. The training
    analyzer reads PromQL (OTel mode's default OTLP sink): a query that answers no series is
    nothing to analyze, not a failed read."""
    monkeypatch.chdir(tmp_path)
    handlers_logs = logging.getLogger("lambdas")
    before = handlers_logs.level
    engine = _other_clusters_series(tmp_path) if target == "training" else nullcontext()
    with mock_aws(), engine:
        argv = ["analyze", target, "--cluster-name", "ml-prd", "--region", REGION]
        assert main(argv) == 3
    # The run quiets the handlers' warnings for itself only: before, it left them at ERROR for
    # the rest of the process, and a notifier test in the same worker heard no warning.
    assert handlers_logs.level == before
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.strip().splitlines()
    assert line.startswith("gpu-insights analyze: ")
    for word in words:
        assert word in line
