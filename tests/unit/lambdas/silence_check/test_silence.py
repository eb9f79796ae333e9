"""Which GPUs are silent, on plain data: the rules of lambdas/silence_check/silence.py."""

from lambdas.silence_check.silence import GpuNode, find_silent

NOW = 1_764_000_000.0
OLD = NOW - 3600  # launched an hour ago: past any grace period


def _node(n: int, gpus: int = 8, launched: float = OLD) -> GpuNode:
    """EC2's shapes: a private DNS name ip-10-0-1-N.ec2.internal, an instance id."""
    return GpuNode(f"i-0{n:016x}", "p5.48xlarge", f"ip-10-0-1-{n}.ec2.internal", gpus, launched)


def _all(n: int) -> dict[str, set[str]]:
    return {f"ip-10-0-1-{n}.ec2.internal": {str(g) for g in range(8)}}


def test_an_exporter_that_stops_on_one_node_of_three_is_one_silent_node() -> None:
    nodes = [_node(1), _node(2), _node(3)]
    check = find_silent(nodes, {**_all(1), **_all(3)}, now=NOW, grace_s=900)
    assert (check.expected_nodes, check.expected_gpus, check.young_nodes) == (3, 24, 0)
    assert [(s.node, s.gpu, s.count) for s in check.silent] == [
        ("ip-10-0-1-2.ec2.internal", "all", 8)
    ]
    assert (check.silent_nodes, check.silent_gpus) == (1, 8)
    assert check.silent[0].line() == (
        "ip-10-0-1-2.ec2.internal (i-00000000000000002, p5.48xlarge): all 8 GPUs silent"
    )


def test_a_gpu_missing_from_a_nodes_report_is_named_by_its_index() -> None:
    reported = {"ip-10-0-1-1.ec2.internal": {"0", "1", "2", "4", "5", "6", "7"}}
    check = find_silent([_node(1)], reported, now=NOW, grace_s=900)
    assert [(s.node, s.gpu, s.count) for s in check.silent] == [
        ("ip-10-0-1-1.ec2.internal", "3", 1)
    ]


def test_a_node_younger_than_the_grace_period_is_not_expected_yet() -> None:
    young = _node(2, launched=NOW - 600)
    check = find_silent([_node(1), young], _all(1), now=NOW, grace_s=900)
    assert (check.expected_nodes, check.young_nodes, check.silent) == (1, 1, ())
    # Past it, the same node is silent.
    later = find_silent([_node(1), young], _all(1), now=NOW + 301, grace_s=900)
    assert [s.instance_id for s in later.silent] == [young.instance_id]


def test_a_scaled_down_node_is_simply_not_among_the_running_instances() -> None:
    """The adapter asks EC2 for running instances only: the node that went away is not in
    ``nodes``, and its last series (still listed for three hours) names nothing."""
    listed = ["ip-10-0-1-1.ec2.internal", "ip-10-0-1-9.ec2.internal"]
    check = find_silent([_node(1)], _all(1), listed, now=NOW, grace_s=900)
    assert check.silent == ()


def test_the_exporters_node_name_may_be_the_host_part_or_the_instance_id() -> None:
    """Kubernetes names an EKS node by its private DNS name by default; a node the exporter
    calls by the host part or the instance id is the same node."""
    node = _node(4)
    for name in ("ip-10-0-1-4", node.instance_id):
        reported = {name: {str(g) for g in range(8)}}
        assert find_silent([node], reported, now=NOW, grace_s=900).silent == ()
    # Silent, it keeps the name the exporter used for it (ListMetrics' last three hours).
    silent = find_silent([node], {}, [node.instance_id], now=NOW, grace_s=900)
    assert [s.node for s in silent.silent] == [node.instance_id]
    # Never seen: EKS's default node name.
    never = find_silent([node], {}, now=NOW, grace_s=900)
    assert [s.node for s in never.silent] == ["ip-10-0-1-4.ec2.internal"]


def test_nothing_expected_nothing_silent() -> None:
    check = find_silent([], {}, now=NOW, grace_s=900)
    assert (check.expected_nodes, check.silent_gpus, check.silent_nodes) == (0, 0, 0)
