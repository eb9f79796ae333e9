"""The demo's EKS control plane (cli/demo/realistic/control_plane.py): a datapoint an hour of
every AWS/EKS metric the cluster dashboard reads, the scheduler's queue one pod deep in the
hours a pod waits."""

from collections.abc import Iterator
from typing import Any

from cli.demo.realistic.control_plane import NAMESPACE, hourly_datums
from dashboards.cluster import cluster_dashboard
from lambdas.shared.container_insights_mode import ContainerInsightsMode


def _metrics(value: Any) -> Iterator[str]:
    """Each metric name in a widget's ``metrics`` rows: ``[namespace, name, ...]``."""
    if isinstance(value, list):
        if len(value) > 1 and value[0] == NAMESPACE and isinstance(value[1], str):
            yield value[1]
        for item in value:
            yield from _metrics(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _metrics(item)


def test_every_control_plane_metric_the_dashboard_reads_has_an_hourly_datapoint() -> None:
    read = set()
    for mode in ContainerInsightsMode:
        read |= set(_metrics(cluster_dashboard("train", "us-east-1", mode)))
    assert len(read) == 12  # 3 request counts, 6 verbs' p99, etcd size, 2 scheduler queues
    start = 1_796_000_400.0  # an hour's start
    datums = list(hourly_datums("train", start, start + 3 * 3600, pending={int(start) + 3600}))
    assert {d["MetricName"] for d in datums} == read
    assert len(datums) == 3 * len(read)
    assert {d["Dimensions"][0]["Value"] for d in datums} == {"train"}
    queue = {
        (d["MetricName"], d["Timestamp"].timestamp()): d["Value"]
        for d in datums
        if d["MetricName"].startswith("scheduler_pending_pods")
    }
    assert sorted(v for (_, at), v in queue.items() if at == start + 3600) == [1.0, 1.0]
    assert sum(queue.values()) == 2.0
