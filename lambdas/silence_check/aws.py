"""AWS adapters of the silence check: the cluster's GPU instances from EC2, the GPUs the
exporter reported from CloudWatch, and the check's own metrics. Clients are injected.

Which instances are the cluster's: those a tag of any provisioning path names the cluster's
(lambdas/shared/cluster_tags.py), read in two DescribeInstances calls. Only ``running``
instances are asked for: a stopping or terminated one is a scale-down, not silence. Of them the
check expects those it covers (lambdas/silence_check/coverage.py): not EKS Auto Mode's, which
the exporter leaves out (cdk/node_config/manifest.py), nor architectures its image is not built
for; ``gpu-insights preflight`` and ``status`` name the ones it does not cover.
"""

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final

from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_NODE,
    NAMESPACE_GPU,
    gpu_schema,
)
from lambdas.shared.cluster_tags import instance_filters, matching_tags, tags_of
from lambdas.shared.metric_fetcher import MetricQuery, fetch, listed_dimensions, window_period
from lambdas.silence_check.coverage import ClusterInstance, covered
from lambdas.silence_check.silence import REPORTING_METRIC, Check, GpuNode, metric_data

#: DescribeInstanceTypes takes at most 100 types a call.
TYPES_PER_CALL: Final = 100
#: PutMetricData takes at most 1,000 metric data a call
#: (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricData.html).
DATA_PER_PUT: Final = 1000
GPU_MANUFACTURER: Final = "NVIDIA"


class SilenceReadError(Exception):
    """CloudWatch could not say whether a GPU reported: a check that cannot read must fail
    (and so stop its heartbeat), not call the GPU silent or healthy."""


RUNNING: Final = {"Name": "instance-state-name", "Values": ["running"]}


def running_instances(ec2: Any, filters: Sequence[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Running instances that pass ``filters``, through DescribeInstances' paginator."""
    pages = ec2.get_paginator("describe_instances").paginate(Filters=[*filters, RUNNING])
    for page in pages:
        for reservation in page["Reservations"]:
            yield from reservation["Instances"]


def cluster_instances(
    ec2: Any, cluster: str, architectures: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """The running instances a tag names ``cluster``'s, each once (of ``architectures`` only,
    where given): one call for each of ``instance_filters``, each match checked by
    ``matching_tags``."""
    arch = [{"Name": "architecture", "Values": list(architectures)}] if architectures else []
    found: dict[str, dict[str, Any]] = {}
    for filters in instance_filters(cluster):
        for instance in running_instances(ec2, [*filters, *arch]):
            if matching_tags(tags_of(instance), cluster):
                found.setdefault(instance["InstanceId"], instance)
    return list(found.values())


def cluster_instance(instance: dict[str, Any], seen_as: str = "") -> ClusterInstance:
    """DescribeInstances' description of an instance, as coverage.py judges it."""
    return ClusterInstance(
        instance_id=instance["InstanceId"],
        instance_type=instance["InstanceType"],
        node_name=instance.get("PrivateDnsName", ""),
        architecture=instance.get("Architecture", ""),
        tags=tags_of(instance),
        managed=bool(instance.get("Operator", {}).get("Managed", False)),
        seen_as=seen_as,
    )


def nvidia_gpus(ec2: Any, instance_types: Iterable[str]) -> dict[str, int]:
    """Each instance type's NVIDIA GPUs (0 for none), from EC2's own GpuInfo."""
    types = sorted(set(instance_types))
    counts: dict[str, int] = {}
    for i in range(0, len(types), TYPES_PER_CALL):
        chunk = types[i : i + TYPES_PER_CALL]
        pages = ec2.get_paginator("describe_instance_types").paginate(InstanceTypes=chunk)
        for page in pages:
            for described in page["InstanceTypes"]:
                gpus = described.get("GpuInfo", {}).get("Gpus", [])
                nvidia = [g for g in gpus if g.get("Manufacturer") == GPU_MANUFACTURER]
                counts[described["InstanceType"]] = sum(int(g.get("Count", 0)) for g in nvidia)
    return counts


def gpu_nodes(ec2: Any, cluster: str, architectures: Sequence[str]) -> list[GpuNode]:
    """The cluster's running instances with NVIDIA GPUs that the check covers."""
    instances = [
        i
        for i in cluster_instances(ec2, cluster, architectures)
        if covered(cluster_instance(i), cluster, architectures)
    ]
    gpus = nvidia_gpus(ec2, (i["InstanceType"] for i in instances))
    return [
        GpuNode(
            instance_id=i["InstanceId"],
            instance_type=i["InstanceType"],
            private_dns_name=i.get("PrivateDnsName", ""),
            gpus=gpus.get(i["InstanceType"], 0),
            launched=i["LaunchTime"].timestamp(),
        )
        for i in instances
        if gpus.get(i["InstanceType"], 0)
    ]


def reported_gpus(
    cloudwatch: Any, cluster: str, *, now: float, lookback_s: int
) -> tuple[dict[str, set[str]], set[str]]:
    """(NodeName -> GPU indices that sent ``REPORTING_METRIC`` in the look back, every NodeName
    of a series active in the last three hours). One metric requested per GPU a run."""
    schema = set(gpu_schema(REPORTING_METRIC))
    found = listed_dimensions(
        cloudwatch,
        NAMESPACE_GPU,
        str(REPORTING_METRIC),
        {DIM_CLUSTER: cluster},
        recently_active=True,
    )
    listed = [dims for dims in found if set(dims) == schema]
    start = now - lookback_s
    period = window_period(start, now)
    queries = [
        MetricQuery(
            (dims[DIM_NODE], dims[DIM_GPU_INDEX]),
            NAMESPACE_GPU,
            str(REPORTING_METRIC),
            tuple(dims.items()),  # as listed: moto matches them in order
            "SampleCount",
            period,
        )
        for dims in listed
    ]
    reported: dict[str, set[str]] = {}
    for batch in fetch(cloudwatch, queries, start=start, end=now):
        for series in batch:
            if series.error:
                node, gpu = series.query.key
                raise SilenceReadError(f"{node} GPU {gpu}: {series.error}")
            if any(v > 0 for v in series.values):
                node, gpu = series.query.key
                reported.setdefault(node, set()).add(gpu)
    return reported, {dims[DIM_NODE] for dims in listed}


def publish(cloudwatch: Any, cluster: str, check: Check, now: float) -> int:
    """PutMetricData in calls of at most 1,000 data; the count sent."""
    data = metric_data(cluster, check, now)
    for i in range(0, len(data), DATA_PER_PUT):
        cloudwatch.put_metric_data(Namespace=NAMESPACE_GPU, MetricData=data[i : i + DATA_PER_PUT])
    return len(data)
