"""OTel mode with the exporter's OTLP sink: every per-GPU and node alarm is one PromQL alarm
(cdk/alarms/catalog.py ``otlp_alarms``), replayed over two hours of a small cluster on a real
PromQL engine (Debian's Prometheus, tests/prometheus.py), each deployed query as CloudWatch gets
it (its label names translated for the engine by ``cli.demo.promql.answering``), evaluated
every minute and its contributors' states kept as CloudWatch documents them
(cli/backtest/promql_alarm.py).

The cluster: the exporter's series every 30 s, labelled as the exporter sends them over OTLP
(DCGM's label names: lambdas/shared/dcgm.py), and Kube State Metrics' GPU capacity per node as
the add-on sends it (``kube_node_status_capacity{resource="nvidia_com_gpu"}`` with the node's
labels: cdk/alarms/promql.py ``KSM_CAPACITY``). Each node has two GPUs; one fault is planted on
each of them, the rest are steady.
"""

from collections.abc import Iterator
from typing import Final

import pytest

from cdk.alarms.catalog import AlarmSettings, promql_alarms
from cdk.alarms.model import AlarmSpec
from cdk.alarms.promql import PromQLQuery
from cli.backtest.promql_alarm import ALARM, OK, Transition, replay_range
from cli.demo.promql import answering
from cli.demo.week import START
from gpu_insights_agent.contract.metrics import GpuMetric
from lambdas.shared.dcgm import CLOUDWATCH as L
from lambdas.shared.kube_state import KSM_CAPACITY, KSM_GPU_RESOURCE
from lambdas.shared.promql import PromQLClient, endpoint_for
from tests.prometheus import Sample, serve, write_openmetrics

pytestmark = pytest.mark.promql_engine

CLUSTER: Final = "train"
REGION: Final = "us-east-1"
MINUTE: Final = 60
HOURS: Final = 2
STEP_S: Final = 30
ARCH: Final = L.node_label_prefix + "kubernetes.io/arch"
#: Node -> (its capacity from, to; its architecture), in minutes from START.
NODES: Final = {
    "steady": (0, 120, "amd64"),
    "idle": (0, 120, "amd64"),
    "faulty": (0, 120, "amd64"),
    # GPU 1's exporter series stop at 30 min; the node stays.
    "silent": (0, 120, "amd64"),
    # Drained and deleted: its exporter stops at 60 min, its Node object a minute later.
    "scaled-in": (0, 61, "amd64"),
    # Joins at 90 min; its exporter's first cycle is 3 minutes later.
    "joining": (90, 120, "amd64"),
    # A Graviton GPU node: the exporter's image does not run there (REQUIRED_NODE_EXPRESSIONS).
    "graviton": (0, 120, "arm64"),
}
SETTINGS: Final = AlarmSettings(
    cluster_name=CLUSTER,
    promql=True,
    otlp=True,
    jobs=None,
    low_power_window_minutes=15,
    throttle_window_minutes=15,
    shards=25,  # 10,000 GPUs: no shard reaches a PromQL alarm
)


def _times(first_min: float, last_min: float) -> Iterator[float]:
    at = START + first_min * MINUTE
    while at < START + last_min * MINUTE:
        yield at
        at += STEP_S


def _gpu(node: str, gpu: int, pod: str | None = None) -> dict[str, str]:
    labels = {L.cluster: CLUSTER, L.node: node, L.gpu: str(gpu), L.device: f"nvidia{gpu}"}
    if pod is not None:
        labels |= {L.namespace: "ml", L.pod: pod}
    return labels


def _cluster() -> Iterator[Sample]:
    for node, (first, last, arch) in NODES.items():
        capacity = {
            L.cluster: CLUSTER,
            L.node: node,
            "node": node,
            "resource": KSM_GPU_RESOURCE,
            "unit": "integer",
            ARCH: arch,
        }
        for at in _times(first, last):
            yield (KSM_CAPACITY, capacity, at, 2)
    steady = {
        "steady": (0, 120),
        "idle": (0, 120),
        "faulty": (0, 120),
        "silent": (0, 120),
        "scaled-in": (0, 60),
        "joining": (93, 120),
    }
    for node, (first, last) in steady.items():
        for gpu in (0, 1):
            until = 30 if (node, gpu) == ("silent", 1) else last
            labels = _gpu(node, gpu, pod=f"{node}-worker-{gpu}")
            for at in _times(first, until):
                minute = (at - START) / MINUTE
                lost = (node, gpu) == ("faulty", 1) and minute >= 80
                yield (str(GpuMetric.HEALTHY), labels, at, 0 if lost else 1)
                idle = (node, gpu) == ("idle", 1) and 20 <= minute < 70
                power = 8 if idle else 85
                yield (str(GpuMetric.ALLOCATED_POWER_UTILIZATION), labels, at, power)
    yield from _faults()


def _faults() -> Iterator[Sample]:
    """The fault gauges in their non-zero hours only, the XID counters as the exporter counts
    them per GPU and code."""
    faulty = _gpu("faulty", 0, pod="faulty-worker-0")
    # A fatal XID 79 at 20 min: both counters born at their first XID (one sample each).
    yield (str(GpuMetric.XID_ERRORS), faulty | {L.xid_code: "79"}, START + 20 * MINUTE, 1)
    yield (str(GpuMetric.XID_FATAL_ERRORS), faulty | {L.xid_code: "79"}, START + 20 * MINUTE, 1)
    # XID 13 (an application fault) at 40 and 70 min, its counters sent every cycle from then.
    thirteen = faulty | {L.xid_code: "13"}
    for at in _times(40, 120):
        count = 1 if at < START + 70 * MINUTE else 2
        yield (str(GpuMetric.XID_ERRORS), thirteen, at, count)
        yield (str(GpuMetric.XID_FATAL_ERRORS), thirteen, at, 0)
    # Two new uncorrectable ECC errors in one cycle at 30:30, zeros to the end of the hour.
    for at in _times(30, 60):
        yield (str(GpuMetric.ECC_UNCORRECTED), faulty, at, 2 if at == START + 1830 else 0)
    # Thermal throttling from 60 to 100 min (its hours: 60-120), on GPU 0 of the faulty node.
    for at in _times(60, 120):
        hot = at < START + 100 * MINUTE
        yield (str(GpuMetric.THROTTLED_THERMAL), faulty, at, 1 if hot else 0)
    # A power-brake blip of two minutes: under the window, no page.
    for at in _times(60, 120):
        braked = START + 62 * MINUTE <= at < START + 64 * MINUTE
        yield (str(GpuMetric.THROTTLED_POWER), faulty, at, 1 if braked else 0)


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, list[Transition]]]:
    folder = tmp_path_factory.mktemp("otlp-alarms")
    write_openmetrics(folder / "cluster.om", _cluster())
    client = PromQLClient(endpoint=endpoint_for(REGION), region=REGION, credentials=None)
    with serve(folder / "cluster.om", folder / "data") as url, answering(REGION, url):
        yield {
            spec.key: replay_range(client, _query(spec), START, START + HOURS * 3600)
            for spec in promql_alarms(SETTINGS)
        }


def _query(spec: AlarmSpec) -> PromQLQuery:
    assert isinstance(spec.metric, PromQLQuery)
    return spec.metric


def _seen(transitions: list[Transition], *names: str) -> list[tuple[float, tuple[str, ...], str]]:
    """(minutes from START, the named labels, the state) of each transition."""
    return [
        ((t.at - START) / MINUTE, tuple(t.labels.get(n, "") for n in names), t.state)
        for t in transitions
    ]


GPU: Final = (L.node, L.gpu, L.pod)


def test_each_planted_fault_pages_once_within_its_window_and_the_steady_gpus_do_not(
    replayed: dict[str, list[Transition]],
) -> None:
    # 20-70 min under 30% of its limit: the first 5-minute range all under it is the one
    # evaluated at 25, then pending 10 minutes; its 70:00 sample works again, so it is absent
    # from the evaluation at 70, and OK 5 minutes later.
    assert _seen(replayed["gpu-low-power"], *GPU) == [
        (35.0, ("idle", "1", "idle-worker-1"), ALARM),
        (75.0, ("idle", "1", "idle-worker-1"), OK),
    ]
    # The counters' first sample pages at once; 5 minutes in range, 5 more to recover.
    assert _seen(replayed["gpu-xid-fatal"], *GPU, L.xid_code) == [
        (20.0, ("faulty", "0", "faulty-worker-0", "79"), ALARM),
        (30.0, ("faulty", "0", "faulty-worker-0", "79"), OK),
    ]
    # XID 13 at 40 (a counter born) and at 70 (sent every cycle, it steps 1 -> 2): once each;
    # never under gpu-xid-fatal, whose count of code 13 stays 0; code 79 never here.
    assert _seen(replayed["gpu-xid"], *GPU, L.xid_code) == [
        (40.0, ("faulty", "0", "faulty-worker-0", "13"), ALARM),
        (50.0, ("faulty", "0", "faulty-worker-0", "13"), OK),
        (70.0, ("faulty", "0", "faulty-worker-0", "13"), ALARM),
        (80.0, ("faulty", "0", "faulty-worker-0", "13"), OK),
    ]
    assert _seen(replayed["gpu-ecc-uncorrected"], *GPU) == [
        (31.0, ("faulty", "0", "faulty-worker-0"), ALARM),
        (41.0, ("faulty", "0", "faulty-worker-0"), OK),
    ]
    # Throttled from 60, the top of a quiet hour: the gauge's first sample breaches at once
    # (nothing before it in its range), held the 15-minute window; the 5-minute average falls
    # under 0.5 at 103 (3 of its 10 samples throttled), OK 5 minutes on.
    assert _seen(replayed["gpu-thermal-throttling"], *GPU) == [
        (75.0, ("faulty", "0", "faulty-worker-0"), ALARM),
        (108.0, ("faulty", "0", "faulty-worker-0"), OK),
    ]
    assert replayed["gpu-power-brake"] == []
    # Lost from 80: every sample of the last two minutes is 0 at 82.
    assert _seen(replayed["gpu-lost"], *GPU) == [(82.0, ("faulty", "1", "faulty-worker-1"), ALARM)]
    # No kind's fleet count: one or two series breach at once, far from 90.
    assert not [k for k, seen in replayed.items() if k.endswith("-at-cap") and seen]


def test_a_silent_gpu_pages_its_node_while_it_exists_and_a_scaled_in_node_never_pages(
    replayed: dict[str, list[Transition]],
) -> None:
    """GPU 1 of node "silent" sends nothing from 30 min: out of the 10-minute range at 40,
    pending 5 minutes, ALARM at 45 and still in ALARM at the end, two hours in. The node scaled
    in, the node joining (its exporter 3 minutes behind its capacity) and the Graviton node
    (no exporter there by design) never page."""
    assert _seen(replayed["gpu-silent"], L.cluster, L.node) == [(45.0, (CLUSTER, "silent"), ALARM)]
    (raised,) = replayed["gpu-silent"]
    assert set(raised.labels) == {L.cluster, L.node}  # the node, nothing else


def test_every_contributor_carries_only_the_labels_a_page_needs(
    replayed: dict[str, list[Transition]],
) -> None:
    per_gpu = {L.cluster, L.node, L.gpu, L.namespace, L.pod}
    for key, transitions in replayed.items():
        if key in ("gpu-silent",) or not transitions:
            continue
        want = per_gpu | ({L.xid_code} if key.startswith("gpu-xid") else set())
        assert {frozenset(t.labels) for t in transitions} == {frozenset(want)}, key
