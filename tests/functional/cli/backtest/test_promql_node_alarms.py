"""OTel mode's GPU node and crash-looping GPU pod alarms (cdk/alarms/nodes.py) replayed over two
hours of Kube State Metrics on a real PromQL engine (Debian's Prometheus, tests/prometheus.py),
the deployed queries as CloudWatch gets them (label names translated for the engine by
``cli.demo.promql.answering``), evaluated every minute, contributors kept as CloudWatch
documents them (cli/backtest/promql_alarm.py).

The series are shaped as KSM's (kube-state-metrics docs/metrics/cluster/node-metrics.md,
workload/pod-metrics.md) reach CloudWatch through the add-on (lambdas/shared/kube_state.py):
every 30 s, the node as ``@resource.k8s.node.name`` beside KSM's own ``node``;
``kube_node_status_condition`` one series per status (true, false, unknown), 1 on the one that
holds; ``kube_node_spec_unschedulable`` 0 or 1; ``kube_node_status_capacity`` per resource.
"""

from collections.abc import Iterator
from typing import Final

import pytest

from cdk.alarms.catalog import AlarmSettings, promql_alarms
from cdk.alarms.cluster import ClusterAlarmSettings
from cdk.alarms.model import AlarmSpec
from cdk.alarms.nodes import (
    GPU_NODE_CORDONED,
    GPU_NODE_HARDWARE,
    GPU_NODE_NOT_READY,
    GPU_POD_CRASH_LOOP,
    NODE_ALARM_KINDS,
)
from cdk.alarms.promql import PromQLQuery
from cli.backtest.promql_alarm import ALARM, OK, Transition, replay_range
from cli.demo.promql import answering
from cli.demo.week import START
from lambdas.shared.dcgm import CLOUDWATCH as L
from lambdas.shared.kube_state import (
    KSM_CAPACITY,
    KSM_NODE_CONDITION,
    KSM_NODE_UNSCHEDULABLE,
    KSM_POD_REQUESTS,
    KSM_WAITING_REASON,
    NODE_GPUS,
    POD_GPUS,
)
from lambdas.shared.promql import PromQLClient, endpoint_for
from tests.prometheus import Sample, serve, write_openmetrics

pytestmark = pytest.mark.promql_engine

CLUSTER: Final = "train"
REGION: Final = "us-east-1"
MINUTE: Final = 60
HOURS: Final = 2
STEP_S: Final = 30
END_MIN: Final = HOURS * 60
#: Node -> (GPUs, Ready False from/to, cordoned from/to, AcceleratedHardwareReady False
#: from/to), minutes from START; (0, 0) never.
NODES: Final = {
    # NotReady from 10 to 40: pages at 15 (5 minutes), OK once the range holds no False.
    "gpu-a": (8, (10, 40), (0, 0), (0, 0)),
    # Cordoned from 20 to the end: pages at 80 (60 minutes).
    "gpu-b": (4, (0, 0), (20, END_MIN), (0, 0)),
    # The agent marks its GPUs bad at 30: pages at 31; NotReady 3 minutes at 50: no page.
    "gpu-c": (8, (50, 53), (0, 0), (30, END_MIN)),
    # A CPU node NotReady and cordoned all along: never this product's page.
    "cpu-1": (0, (0, END_MIN), (0, END_MIN), (0, 0)),
}
#: Pod -> (namespace, node, GPUs requested, CrashLoopBackOff from/to).
PODS: Final = {
    # Two GPUs, crash looping from 60 to the end: pages at 70 (10 minutes).
    "vllm-llama-0": ("serve", "gpu-a", 2, (60, END_MIN)),
    # Crash looping 6 minutes, then runs: no page.
    "train-0": ("ml", "gpu-c", 8, (20, 26)),
    # A CPU pod crash looping all along: not this alarm's.
    "api-0": ("web", "cpu-1", 0, (0, END_MIN)),
}
SETTINGS: Final = AlarmSettings(
    cluster_name=CLUSTER, jobs=None, promql=True, cluster=ClusterAlarmSettings()
)


def _times(first_min: float = 0, last_min: float = END_MIN) -> Iterator[float]:
    at = START + first_min * MINUTE
    while at < START + last_min * MINUTE:
        yield at
        at += STEP_S


def _during(at: float, span: tuple[int, int]) -> bool:
    return START + span[0] * MINUTE <= at < START + span[1] * MINUTE


def _cluster() -> Iterator[Sample]:
    for node, (gpus, not_ready, cordoned, hardware) in NODES.items():
        labels = {L.cluster: CLUSTER, L.node: node, "node": node}
        for at in _times():
            yield KSM_CAPACITY, labels | {"resource": "cpu", "unit": "core"}, at, 96.0
            if gpus:
                gpu_resource = {"resource": "nvidia_com_gpu", "unit": "integer"}
                yield KSM_CAPACITY, labels | gpu_resource, at, float(gpus)
            ready = "false" if _during(at, not_ready) else "true"
            for status in ("true", "false", "unknown"):
                condition = labels | {"condition": "Ready", "status": status}
                yield KSM_NODE_CONDITION, condition, at, float(status == ready)
            if gpus:  # the node monitoring agent runs on the GPU nodes
                bad = "false" if _during(at, hardware) else "true"
                for status in ("true", "false", "unknown"):
                    agent = labels | {"condition": "AcceleratedHardwareReady", "status": status}
                    yield KSM_NODE_CONDITION, agent, at, float(status == bad)
            yield KSM_NODE_UNSCHEDULABLE, labels, at, float(_during(at, cordoned))
    for pod, (namespace, node, gpus, looping) in PODS.items():
        pod_labels: dict[str, str] = {
            L.cluster: CLUSTER,
            L.namespace: namespace,
            L.pod: pod,
            "namespace": namespace,
            "pod": pod,
            "uid": f"uid-{pod}",
            "container": "main",
        }
        requests: list[tuple[str, str, float]] = [("cpu", "core", 4.0)] + (
            [("nvidia_com_gpu", "integer", gpus)] if gpus else []
        )
        for at in _times():
            for resource, unit, value in requests:
                request = pod_labels | {
                    L.node: node,
                    "node": node,
                    "resource": resource,
                    "unit": unit,
                }
                yield KSM_POD_REQUESTS, request, at, float(value)
        for at in _times(*looping):
            yield KSM_WAITING_REASON, pod_labels | {"reason": "CrashLoopBackOff"}, at, 1.0


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, list[Transition]]]:
    folder = tmp_path_factory.mktemp("node-alarms")
    write_openmetrics(folder / "nodes.om", _cluster())
    client = PromQLClient(endpoint=endpoint_for(REGION), region=REGION, credentials=None)
    kinds = {spec.key: spec for spec in promql_alarms(SETTINGS)}
    with serve(folder / "nodes.om", folder / "data") as url, answering(REGION, url):
        yield {
            key: replay_range(client, _query(kinds[key]), START, START + HOURS * 3600)
            for key in (*NODE_ALARM_KINDS, *(f"{k}-at-cap" for k in NODE_ALARM_KINDS))
        }


def _query(spec: AlarmSpec) -> PromQLQuery:
    assert isinstance(spec.metric, PromQLQuery)
    return spec.metric


def _seen(transitions: list[Transition], *names: str) -> list[tuple[object, ...]]:
    return [
        ((t.at - START) / MINUTE, *(t.labels.get(n, "") for n in names), t.state)
        for t in transitions
    ]


def test_a_gpu_node_not_ready_pages_at_its_fifth_minute_and_a_cpu_node_never(
    replayed: dict[str, list[Transition]],
) -> None:
    """gpu-a NotReady from 10: ALARM at 15 (pending 5 minutes); Ready again at 40 (KSM's
    ``status="false"`` series goes to 0, the newest sample in the range), so absent from the
    evaluation at 40 and OK after the 5-minute recovery, at 45. gpu-c's 3 minutes and cpu-1's
    two hours never page."""
    assert _seen(replayed[GPU_NODE_NOT_READY], L.node, NODE_GPUS) == [
        (15.0, "gpu-a", "8", ALARM),
        (45.0, "gpu-a", "8", OK),
    ]
    assert {frozenset(t.labels) for t in replayed[GPU_NODE_NOT_READY]} == {
        frozenset({L.cluster, L.node, NODE_GPUS})
    }


def test_cordoned_hardware_and_crash_loop_page_after_their_settings(
    replayed: dict[str, list[Transition]],
) -> None:
    assert _seen(replayed[GPU_NODE_CORDONED], L.node, NODE_GPUS) == [(80.0, "gpu-b", "4", ALARM)]
    assert _seen(replayed[GPU_NODE_HARDWARE], L.node, NODE_GPUS) == [(31.0, "gpu-c", "8", ALARM)]
    assert _seen(replayed[GPU_POD_CRASH_LOOP], L.namespace, L.pod, L.node, POD_GPUS) == [
        (70.0, "serve", "vllm-llama-0", "gpu-a", "2", ALARM)
    ]
    for kind in NODE_ALARM_KINDS:  # one or two at once, far from 90
        assert replayed[f"{kind}-at-cap"] == []
