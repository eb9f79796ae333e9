"""What the ``silence-coverage`` lines of ``gpu-insights preflight`` and ``status`` read: every
running NVIDIA GPU instance of the cluster that the silence check does not cover
(lambdas/silence_check/coverage.py judges; cli/preflight/checks.py ``check_silence_coverage``
words them).

Which instances are the cluster's, by any evidence:

- a tag of any provisioning path names the cluster (lambdas/shared/cluster_tags.py), read as
  the check reads them (two DescribeInstances calls);
- Container Insights saw it as a node of the cluster: Classic's ``node_gpu_power_draw`` series
  carry (ClusterName, NodeName, InstanceId) (Container-Insights-metrics-enhanced-EKS.html;
  cli/demo/realistic/container_insights.py ``NODE_GPU_DIMENSION_SETS``), listed in one
  ListMetrics call over the last three hours; OTel mode's DCGM series carry the node's name,
  read by PromQL (``status`` only). The add-on runs its DCGM exporter on NVIDIA instance types
  whatever the instance's tags (cdk/node_config/gpu_instance_types.py, from its chart), so a
  self-managed GPU node launched without a tag is seen there; those not seen by tag are then
  described by instance id or private DNS name, 100 to a call. What is shown of them is EC2's
  own description (id, type, private DNS name), never a series' dimension value.

A GPU node neither tagged nor running the add-on's DCGM exporter leaves no trace AWS can read
without the Kubernetes API; docs/alarms.md says so.
"""

import re
from collections.abc import Iterable, Sequence
from typing import Any, Final

from gpu_insights_agent.contract.metrics import (
    CI_NODE_GPU_POWER_METRIC,
    DIM_CLUSTER,
    NAMESPACE_CONTAINER_INSIGHTS,
)
from lambdas.shared.metric_fetcher import listed_dimensions
from lambdas.silence_check.aws import (
    cluster_instance,
    cluster_instances,
    nvidia_gpus,
    running_instances,
)
from lambdas.silence_check.coverage import ClusterInstance, Uncovered, uncovered_instances

#: The most values one DescribeInstances filter is given at a time: EC2's Filter reference states
#: no limit, and requests with more than 200 values are refused in practice (apache/druid#1954,
#: "EC2 autoscaler: avoid hitting aws filter limits", which settled on 100).
VALUES_PER_FILTER: Final = 100
#: Container Insights' node GPU series carry the node's instance id under this dimension.
DIM_INSTANCE_ID: Final = "InstanceId"
#: What an instance id and an EKS node's name (its private DNS name) look like. Values read from
#: series anyone may write are filter values here, where EC2 takes ``*`` and ``?`` as wildcards
#: (EC2 User Guide, "List and filter your resources"): any other value is dropped, not sent.
_INSTANCE_ID: Final = re.compile(r"i-[0-9a-f]{8,17}")
_NODE_NAME: Final = re.compile(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?")


def read_ci_gpu_nodes(cloudwatch: Any, cluster: str) -> set[str]:
    """The instance ids of the nodes Container Insights (Classic) sent ``node_gpu_power_draw``
    for in the last three hours."""
    found = listed_dimensions(
        cloudwatch,
        NAMESPACE_CONTAINER_INSIGHTS,
        CI_NODE_GPU_POWER_METRIC,
        {DIM_CLUSTER: cluster},
        recently_active=True,
    )
    return {d[DIM_INSTANCE_ID] for d in found if DIM_INSTANCE_ID in d}


def _chunks(values: Iterable[str], shape: re.Pattern[str]) -> Iterable[list[str]]:
    """Sorted well-formed ``values``, ``VALUES_PER_FILTER`` at a time."""
    valid = sorted(v for v in set(values) if shape.fullmatch(v))
    for i in range(0, len(valid), VALUES_PER_FILTER):
        yield valid[i : i + VALUES_PER_FILTER]


def read_uncovered(
    ec2: Any,
    cluster: str,
    architectures: Sequence[str],
    *,
    seen_ids: Iterable[str] = (),
    seen_names: Iterable[str] = (),
) -> tuple[Uncovered, ...]:
    """The cluster's running NVIDIA GPU instances the check does not cover: those a tag names
    the cluster's, and those Container Insights saw as its nodes (``seen_ids``: instance ids of
    its node series; ``seen_names``: node names of its DCGM series)."""
    tagged = cluster_instances(ec2, cluster)
    known = {i["InstanceId"] for i in tagged}
    instances: list[ClusterInstance] = [cluster_instance(i) for i in tagged]

    def add(found: Iterable[dict[str, Any]], series: str) -> None:
        for i in found:
            if i["InstanceId"] not in known:
                known.add(i["InstanceId"])
                name = i.get("PrivateDnsName") or i["InstanceId"]
                instances.append(cluster_instance(i, f"node {name} of the cluster in {series}"))

    for chunk in _chunks(set(seen_ids) - known, _INSTANCE_ID):
        add(
            running_instances(ec2, [{"Name": "instance-id", "Values": chunk}]),
            f"Container Insights' {CI_NODE_GPU_POWER_METRIC} series",
        )
    names = {i.node_name for i in instances}
    for chunk in _chunks(set(seen_names) - names, _NODE_NAME):
        add(
            running_instances(ec2, [{"Name": "private-dns-name", "Values": chunk}]),
            "its DCGM series",
        )
    gpus = nvidia_gpus(ec2, {i.instance_type for i in instances})
    nvidia = [i for i in instances if gpus.get(i.instance_type, 0)]
    return tuple(uncovered_instances(nvidia, cluster, architectures))
