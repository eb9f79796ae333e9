"""OTel mode's pending GPU pod alarm (cdk/alarms/cluster.py ``gpu_pending_query``) replayed over
two hours of Kube State Metrics on a real PromQL engine (Debian's Prometheus, tests/prometheus.py),
the deployed query as CloudWatch gets it (its label names translated for the engine by
``cli.demo.promql.answering``), evaluated every minute and its contributors' states kept as
CloudWatch documents them (cli/backtest/promql_alarm.py).

The series are shaped as the add-on sends KSM's (lambdas/shared/kube_state.py): every 30 s (the
add-on's metricResolution), the pod's namespace and name as ``@resource.k8s.*`` attributes and
as KSM's own ``namespace`` and ``pod`` labels; ``kube_pod_container_resource_requests`` one
series per container and resource (``resource="nvidia_com_gpu"``, ``unit="integer"``), and
``kube_pod_status_unschedulable`` (1) only while the pod's PodScheduled condition is False.
"""

from collections.abc import Iterator
from typing import Final

import pytest

from cdk.alarms.catalog import AlarmSettings, promql_alarms
from cdk.alarms.cluster import GPU_PENDING, ClusterAlarmSettings
from cdk.alarms.model import AlarmSpec
from cdk.alarms.promql import PromQLQuery
from cli.backtest.promql_alarm import ALARM, OK, Transition, replay_range
from cli.demo.promql import answering
from cli.demo.week import START
from lambdas.shared.dcgm import CLOUDWATCH as L
from lambdas.shared.kube_state import GPUS_REQUESTED, KSM_POD_REQUESTS, KSM_POD_UNSCHEDULABLE
from lambdas.shared.promql import PromQLClient, endpoint_for
from tests.prometheus import Sample, serve, write_openmetrics

pytestmark = pytest.mark.promql_engine

CLUSTER: Final = "train"
REGION: Final = "us-east-1"
MINUTE: Final = 60
HOURS: Final = 2
STEP_S: Final = 30
#: Pod -> (cluster, namespace, its containers' requests (resource, value), unschedulable from,
#: to, in minutes from START).
PODS: Final = {
    # 8 GPUs asked for, no node for 60 minutes, then placed: pages at 25, OK after.
    "llama-train-worker-0": (CLUSTER, "ml", (("nvidia_com_gpu", 8), ("cpu", 32)), 10, 70),
    # Placed 10 minutes in, when the autoscaler's node joined: under the 15 minutes, no page.
    "bert-eval-0": (CLUSTER, "ml", (("nvidia_com_gpu", 1),), 20, 30),
    # A CPU pod the scheduler cannot place: not this alarm's (control-plane-unschedulable-pods).
    "api-0": (CLUSTER, "web", (("cpu", 2), ("memory", 4 * 2**30)), 0, 120),
    # Two containers of 4 GPUs each: 8 asked for, waiting from 40 to the end.
    "mixtral-serve-0": (CLUSTER, "serve", (("nvidia_com_gpu", 4), ("nvidia_com_gpu", 4)), 40, 120),
    # Running on its node all along.
    "resnet-train-0": (CLUSTER, "ml", (("nvidia_com_gpu", 8),), 0, 0),
    # Another cluster's pending GPU pod: not this cluster's alarm.
    "other-cluster-0": ("train-eu", "ml", (("nvidia_com_gpu", 8),), 0, 120),
}
SETTINGS: Final = AlarmSettings(
    cluster_name=CLUSTER, jobs=None, promql=True, cluster=ClusterAlarmSettings()
)


def _times(first_min: float, last_min: float) -> Iterator[float]:
    at = START + first_min * MINUTE
    while at < START + last_min * MINUTE:
        yield at
        at += STEP_S


def _cluster() -> Iterator[Sample]:
    for pod, (cluster, namespace, requests, first, last) in PODS.items():
        labels = {
            L.cluster: cluster,
            L.namespace: namespace,
            L.pod: pod,
            "namespace": namespace,
            "pod": pod,
            "uid": f"uid-{pod}",
        }
        for index, (resource, value) in enumerate(requests):
            container = f"c{index}"
            unit = {"cpu": "core", "memory": "byte"}.get(resource, "integer")
            request = labels | {
                "@resource.k8s.container.name": container,
                "container": container,
                "resource": resource,
                "unit": unit,
            }
            for at in _times(0, HOURS * 60):
                yield KSM_POD_REQUESTS, request, at, float(value)
        for at in _times(first, last):
            yield KSM_POD_UNSCHEDULABLE, labels, at, 1.0


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, list[Transition]]]:
    folder = tmp_path_factory.mktemp("cluster-alarms")
    write_openmetrics(folder / "cluster.om", _cluster())
    client = PromQLClient(endpoint=endpoint_for(REGION), region=REGION, credentials=None)
    kinds = {spec.key: spec for spec in promql_alarms(SETTINGS)}
    with serve(folder / "cluster.om", folder / "data") as url, answering(REGION, url):
        yield {
            key: replay_range(client, _query(kinds[key]), START, START + HOURS * 3600)
            for key in (GPU_PENDING, f"{GPU_PENDING}-at-cap")
        }


def _query(spec: AlarmSpec) -> PromQLQuery:
    assert isinstance(spec.metric, PromQLQuery)
    return spec.metric


def _seen(transitions: list[Transition]) -> list[tuple[float, str, str, str, str]]:
    return [
        (
            (t.at - START) / MINUTE,
            t.labels.get(L.namespace, ""),
            t.labels.get(L.pod, ""),
            t.labels.get(GPUS_REQUESTED, ""),
            t.state,
        )
        for t in transitions
    ]


def test_each_gpu_pod_waiting_past_the_setting_pages_once_with_the_gpus_it_asked_for(
    replayed: dict[str, list[Transition]],
) -> None:
    """llama: unschedulable from 10, pending 15 minutes, ALARM at 25; its last unschedulable
    sample is at 69:30, in the 2-minute range until the evaluation at 72 finds none, OK five
    minutes later. mixtral: from 40, ALARM at 55, its two containers' GPUs summed (8), still in
    ALARM at the end. The pod placed after 10 minutes, the CPU pod, the running pod and the
    other cluster's pod never page."""
    assert _seen(replayed[GPU_PENDING]) == [
        (25.0, "ml", "llama-train-worker-0", "8", ALARM),
        (55.0, "serve", "mixtral-serve-0", "8", ALARM),
        (77.0, "ml", "llama-train-worker-0", "8", OK),
    ]
    # The contributor is the pod: cluster, namespace, pod and the GPUs, nothing else.
    assert {frozenset(t.labels) for t in replayed[GPU_PENDING]} == {
        frozenset({L.cluster, L.namespace, L.pod, GPUS_REQUESTED})
    }
    assert replayed[f"{GPU_PENDING}-at-cap"] == []  # two at once, far from 90
