"""The one table of NVIDIA GPU instance types, held to AWS's own two lists of them: the
instance types the amazon-cloudwatch-observability add-on schedules its DCGM exporter on (its
chart's values, vendored in tests/data/), and the types EC2's DescribeInstanceTypes says have an
NVIDIA GPU (moto answers it from AWS's published instance type data)."""

from typing import Any

import boto3
from moto import mock_aws

from cdk.alarms.power_table import GPU_POWER
from cdk.node_config.gpu_instance_types import (
    NVIDIA_GPU_INSTANCE_TYPES,
    is_nvidia_gpu_instance_type,
    node_instance_types,
)
from tests.unit.reference_data import observability_chart_values


def _chart_dcgm_instance_types() -> list[str]:
    """dcgmExporter.affinity's node.kubernetes.io/instance-type values ("NVIDIA GPU instance
    types"), as the add-on's chart lists them."""
    affinity = observability_chart_values()["dcgmExporter"]["affinity"]["nodeAffinity"]
    (term,) = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    (types,) = [
        e["values"]
        for e in term["matchExpressions"]
        if e["key"] == "node.kubernetes.io/instance-type"
    ]
    return list(types)


def _ec2_instance_types() -> list[dict[str, Any]]:
    with mock_aws():
        ec2 = boto3.client(
            "ec2", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        pages = ec2.get_paginator("describe_instance_types").paginate()
        return [dict(t) for page in pages for t in page["InstanceTypes"]]


def _manufacturers(described: dict[str, Any]) -> set[str]:
    return {g["Manufacturer"] for g in described.get("GpuInfo", {}).get("Gpus", [])}


#: The chart lists the g4ad sizes among its "NVIDIA GPU instance types", but "G4ad instances
#: feature the latest AMD Radeon Pro V520 GPUs" (https://aws.amazon.com/ec2/instance-types/g4/).
AMD_IN_THE_CHART = {
    f"g4ad.{size}" for size in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")
}


def test_the_table_is_the_add_ons_list_less_amd_and_every_type_ec2_gives_an_nvidia_gpu() -> None:
    chart = _chart_dcgm_instance_types()
    chart_ec2 = {t for t in chart if not t.startswith("ml.")}
    assert chart_ec2 >= AMD_IN_THE_CHART
    described = _ec2_instance_types()
    assert len(described) > 1000  # EC2's whole catalogue, not a sample
    nvidia = {t["InstanceType"] for t in described if "NVIDIA" in _manufacturers(t)}
    assert {"p5.48xlarge", "g6e.12xlarge", "p5.4xlarge", "g6f.large"} <= nvidia
    assert (chart_ec2 - AMD_IN_THE_CHART) | nvidia == NVIDIA_GPU_INSTANCE_TYPES
    # No type EC2 gives another maker's GPU (or none) is in the table.
    others = {t["InstanceType"] for t in described if "NVIDIA" not in _manufacturers(t)}
    assert not NVIDIA_GPU_INSTANCE_TYPES & others


def test_hyperpod_names_and_the_power_table_are_covered() -> None:
    """Every SageMaker HyperPod name the chart lists (``ml.`` and the type) is a value of the
    exporter's instance-type term; every type the low-power alarm knows the power of is in
    the table."""
    values = node_instance_types()
    assert {t for t in _chart_dcgm_instance_types() if t.startswith("ml.")} - {
        f"ml.{t}" for t in AMD_IN_THE_CHART
    } <= set(values)
    assert len(values) == 2 * len(NVIDIA_GPU_INSTANCE_TYPES) == len(set(values))
    assert set(GPU_POWER) <= NVIDIA_GPU_INSTANCE_TYPES
    assert is_nvidia_gpu_instance_type("ml.p5.48xlarge")
    assert not is_nvidia_gpu_instance_type("g4ad.xlarge")
    assert not is_nvidia_gpu_instance_type("m7i.2xlarge")
