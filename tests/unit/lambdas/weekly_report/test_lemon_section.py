"""The report's lemon nodes (lambdas/weekly_report/lemon_section.py) from 30 days of GPU-hour
tables, failed runs and XIDs: four nodes of 8 GPUs, 720 GPU-hours each; one with 4 XIDs and 2
failed runs of the fleet's 7 events holds 6/7 of them on 1/4 of the GPU-hours: 3.43."""

from lambdas.weekly_report.lemon_section import lemon_figures, lemon_section, node_records

BAD = "ip-10-0-1-17.ec2.internal"
NODES = [BAD, "ip-10-0-1-18.ec2.internal", "ip-10-0-1-19.ec2.internal", "<script>x</script>"]
#: 30 days, each node's 8 GPUs 3 hours a day seen.
TABLES = [{"seen_by_node": dict.fromkeys(NODES, 24.0)} for _ in range(30)]
RUNS = [
    {"job": "bert", "at": 0.0, "nodes": [BAD, BAD]},  # one run, its lines from one node
    {"job": "vit", "at": 3600.0, "nodes": [BAD, "ip-10-0-1-18.ec2.internal"]},
]
XIDS = [(BAD, "79", 3.0), (BAD, "48", 1.0)]


def test_the_worst_nodes_by_their_share_of_failures_and_xids_per_gpu_hour() -> None:
    records = {r.node: r for r in node_records(TABLES, RUNS, XIDS)}
    assert (records[BAD].gpu_hours, records[BAD].failures, records[BAD].xids) == (720.0, 2, 4)
    doc = lemon_figures(records.values())
    assert doc["window_days"] == 30
    assert doc["nodes_scored"] == 4
    (lemon,) = doc["lemons"]
    assert (lemon["node"], lemon["score"], lemon["events"]) == (BAD, 3.43, 6)
    # XIDs on it: the node monitoring agent's condition, which auto repair acts on.
    assert f"kubectl cordon {BAD}" in lemon["action"]
    assert "AcceleratedHardwareReady=False" in lemon["action"]


def test_the_section_escapes_node_names() -> None:
    records = node_records(TABLES, [], [("<script>x</script>", "79", 5.0)])
    html = lemon_section(lemon_figures(records))
    assert "&lt;script&gt;" in html
    assert "<script>" not in html
    assert 'id="lemon-nodes"' in html
    assert lemon_section(lemon_figures(node_records(TABLES, [], []))) == ""


def test_a_node_with_events_and_no_gpu_hours_is_refused_by_name() -> None:
    doc = lemon_figures(node_records(TABLES, RUNS, [*XIDS, ("ip-<gone>", "79", 3.0)]))
    assert doc["refused"] == ["node ip-<gone>: 0.0 GPU-hours (must be above 0)"]
    assert [lemon["node"] for lemon in doc["lemons"]] == [BAD]
    html = lemon_section(doc)
    assert "1 nodes with events could not be scored: node ip-&lt;gone&gt;: 0.0 GPU-hours" in html


def test_fail_slows_count_beside_failures_and_xids() -> None:
    """9 fail-slow pages naming node 18 beside its failed run: 10 of the fleet's 16 events on a
    quarter of the GPU-hours, 2.5x; the node of the XIDs falls to 6/16 of them, 1.5x, no lemon.
    The table shows the fail-slows."""
    slow = "ip-10-0-1-18.ec2.internal"
    records = {r.node: r for r in node_records(TABLES, RUNS, XIDS, {slow: 9})}
    assert (records[slow].failures, records[slow].fail_slows, records[slow].xids) == (1, 9, 0)
    doc = lemon_figures(records.values())
    (lemon,) = doc["lemons"]
    assert (lemon["node"], lemon["score"], lemon["events"], lemon["fail_slows"]) == (
        slow,
        2.5,
        10,
        9,
    )
    assert "will not act on it" in lemon["action"]
    html = lemon_section(doc)
    assert "fleet&#x27;s failed runs, fail-slows and XID errors" in html
    assert ">Fail-slows<" in html
    assert ">9<" in html
