"""The lemon-node score: a node's share of the fleet's failures, fail-slows and XIDs over its
share of the GPU-hours; the worst listed with what to do (lambdas/training_analyzer/goodput/
lemon.py)."""

from lambdas.training_analyzer.goodput.lemon import NodeRecord, lemon_scores

MONTH = 30 * 24 * 8.0  # an 8-GPU node's GPU-hours over the 30 days


def test_a_node_with_a_fleet_share_of_events_far_over_its_hours_is_a_lemon() -> None:
    fleet = [NodeRecord(f"ip-10-0-0-{i}", MONTH, failures=1) for i in range(8)]
    fleet.append(NodeRecord("ip-10-0-0-99", MONTH, failures=2, fail_slows=3, xids=7))
    report = lemon_scores(fleet)
    (lemon,) = report.lemons
    # 12 of the fleet's 20 events on 1 of its 9 nodes' GPU-hours: 0.6 / 0.111 = 5.4.
    assert (lemon.node, lemon.score, lemon.events) == ("ip-10-0-0-99", 5.4, 12)
    assert lemon.action.startswith("cordon it (kubectl cordon ip-10-0-0-99), drain it")
    assert "AcceleratedHardwareReady=False on a GPU fault such as an XID" in lemon.action
    assert report.refused == ()


def test_few_events_are_chance_and_a_slow_node_without_xids_gets_no_auto_repair() -> None:
    fleet = [NodeRecord(f"n{i}", MONTH) for i in range(20)]
    # Two events on a node that ran a tenth of the hours: a high rate, but chance.
    fleet.append(NodeRecord("few", MONTH / 10, failures=2))
    fleet.append(NodeRecord("slow", MONTH, fail_slows=4))
    (lemon,) = lemon_scores(fleet).lemons
    assert lemon.node == "slow"
    assert "EKS node auto repair (AcceleratedHardwareReady) will not act on it" in lemon.action


def test_a_bad_record_is_refused_by_name_and_the_others_are_scored() -> None:
    fleet = [
        NodeRecord("n1", MONTH, failures=1),
        NodeRecord("n2", 0.0, xids=9),
        NodeRecord("n3", MONTH, xids=-1),
        NodeRecord("n4", MONTH, xids=5),
        *(NodeRecord(f"quiet-{i}", MONTH) for i in range(4)),
    ]
    report = lemon_scores(fleet)
    assert report.refused == (
        "node n2: 0.0 GPU-hours (must be above 0)",
        "node n3: a negative count (0, 0, -1)",
    )
    assert [lemon.node for lemon in report.lemons] == ["n4"]
    assert lemon_scores([]).lemons == ()
