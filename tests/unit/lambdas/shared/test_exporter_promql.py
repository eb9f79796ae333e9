"""The exporter's OTLP series read with PromQL: the pure parts (the counter arithmetic, the node
batches and their patterns). The queries themselves run on a real engine in
tests/functional/lambdas/test_exporter_otlp_readers.py."""

import re

import pytest

from lambdas.shared.exporter_promql import (
    NODES_PER_QUERY,
    ExporterQueries,
    counter_increase,
    node_batches,
    node_pattern,
    range_selector,
)
from lambdas.shared.promql import MAX_SERIES


def test_a_counter_counts_its_steps_after_the_base() -> None:
    # 3 before: the base. Then 3 -> 4 -> 4 -> 6: three XIDs.
    assert counter_increase([(0, 3), (10, 4), (20, 4), (30, 6)], since=0) == 3


def test_a_counter_born_after_the_base_counts_whole() -> None:
    assert counter_increase([(10, 1), (20, 2)], since=0) == 2


def test_a_restart_counts_the_new_count_whole() -> None:
    # 5 -> 7 (2), the exporter restarts: 1 (1 new), then 2 (1): 4.
    assert counter_increase([(0, 5), (10, 7), (20, 1), (30, 2)], since=0) == 4


def test_the_last_value_at_or_before_the_base_time_is_the_base() -> None:
    assert counter_increase([(30, 6), (-10, 2), (0, 5)], since=0) == 1
    assert counter_increase([(0, 5)], since=0) == 0


def test_a_node_pattern_matches_exactly_its_nodes() -> None:
    pattern = re.compile(node_pattern(["ip-10-0-0-1.ec2.internal", "gpu(a)"]))
    assert pattern.fullmatch("ip-10-0-0-1.ec2.internal")
    assert pattern.fullmatch("gpu(a)")
    assert not pattern.fullmatch("ip-10-0-0-1xec2.internal")


@pytest.mark.parametrize("nodes", [1, NODES_PER_QUERY, NODES_PER_QUERY + 1, 1250])
def test_each_batch_stays_under_the_series_a_response_may_hold(nodes: int) -> None:
    names = [f"node-{i:04d}" for i in range(nodes)]
    batches = node_batches(names + names[:1])
    assert sorted(n for b in batches for n in b) == sorted(names)
    assert all(len(b) * 16 < MAX_SERIES for b in batches)


def test_per_gpu_queries_keep_only_the_node_and_gpu() -> None:
    """A pod starting on a GPU adds a series; summed by node and GPU it is one GPU's."""
    query = ExporterQueries("train").gpu_mean("gpu_power_utilization", ["n1"])
    assert query == (
        'sum by ("@resource.k8s.node.name", gpu) (sum_over_time({__name__='
        '"gpu_power_utilization", "@resource.k8s.cluster.name"="train", '
        '"@resource.k8s.node.name"=~"n1"}[1h])) / sum by ("@resource.k8s.node.name", gpu) '
        '(count_over_time({__name__="gpu_power_utilization", "@resource.k8s.cluster.name"='
        '"train", "@resource.k8s.node.name"=~"n1"}[1h]))'
    )


def test_a_window_of_minutes_reads_the_gpus_each_node_sent() -> None:
    """``gpu-insights status``'s reads (cli/status/aws.py): one series a node, its value the
    GPUs that sent in the last 15 minutes, and one node's GPU indices."""
    queries = ExporterQueries("train")
    selector = '{__name__="gpu_healthy", "@resource.k8s.cluster.name"="train"%s}[15m]'
    assert queries.gpus_by_node("gpu_healthy", 900) == (
        'count by ("@resource.k8s.node.name") (count by ("@resource.k8s.node.name", gpu) '
        f"(count_over_time({selector % ''})))"
    )
    assert queries.node_gpus("gpu_healthy", "ip-10-0-0-1.ec2.internal", 900) == (
        "count by (gpu) (count_over_time("
        + selector % ', "@resource.k8s.node.name"=~"ip-10-0-0-1\\\\.ec2\\\\.internal"'
        + "))"
    )


@pytest.mark.parametrize("seconds", [0, -60, 90])
def test_a_range_is_whole_minutes(seconds: int) -> None:
    with pytest.raises(ValueError, match=f"a range of {seconds} s: whole minutes"):
        range_selector(seconds)
