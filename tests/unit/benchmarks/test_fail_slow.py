"""The fail-slow benchmark's smoke run: two runs of each planted fault through the real emitter,
the alarm's definition and the culprit ranking (benchmarks/fail_slow.py; `make bench` runs 20)."""

from benchmarks import fail_slow


def test_each_planted_fault_pages_within_5_minutes_naming_its_culprit() -> None:
    figures = fail_slow.replay(seeds=2)
    assert len(figures.runs) == 2 * len(fail_slow.KINDS)
    for kind in fail_slow.KINDS:
        assert figures.by_kind(kind) == (2, 2), kind
    # Every fault paged after its onset, three breaching minutes and the onset's part of one.
    assert len(figures.latencies_min) == 12
    assert 2.0 <= figures.percentile(0.5) <= figures.percentile(0.95) <= 5.0
    assert (figures.precision, figures.recall, figures.false_pages) == (1.0, 1.0, 0)


def test_the_pages_name_the_node_the_rank_or_the_data_source() -> None:
    figures = fail_slow.replay(seeds=1)
    by_kind = {r.fault.kind: r for r in figures.runs}
    brake = by_kind["power-brake-node"]
    assert brake.verdict is not None
    assert brake.verdict.culprit is not None
    assert (brake.verdict.culprit.node, brake.verdict.culprit.gpu) == (brake.fault.node, "")
    stall = by_kind["rank-data-stall"]
    assert stall.verdict is not None
    assert stall.verdict.culprit is not None
    assert stall.verdict.culprit.rank == stall.fault.rank
    source = by_kind["job-data-source"]
    assert source.verdict is not None
    assert source.verdict.culprit is None
    assert "the data source" in source.verdict.lines()[0]
    assert by_kind["healthy"].alarm_s is None


def test_the_classic_page_names_every_culprit_without_the_sm_clock() -> None:
    """Classic publishes no SM clock as a metric, and each rank's data wait only in its
    documents (lambdas/notifier/fail_slow_classic.py reads the newest, which names no GPU):
    the same ranking names every planted culprit, the stalled rank by its rank and pod."""
    classic = fail_slow.replay(seeds=2).classic
    for kind in fail_slow.KINDS:
        assert classic.by_kind(kind) == (2, 2), kind
    assert (classic.precision, classic.recall) == (1.0, 1.0)
    stalls = [r for r in classic.runs if r.fault.kind == "rank-data-stall"]
    for run in stalls:
        assert run.verdict is not None
        assert run.verdict.culprit is not None
        assert (run.verdict.culprit.rank, run.verdict.culprit.gpu) == (run.fault.rank, "")
        assert run.verdict.culprit.pod == f"llm-64-worker-{run.fault.rank}"


def test_a_power_brake_shows_both_reasons_nvml_gives_and_the_page_names_the_node() -> None:
    """An external power brake sets HW Power Brake Slowdown and HW Slowdown (NVML's clock event
    reasons): the GPUs' evidence, built from the exporter's flags by the pages' own table, holds
    both, and the node is named once, not its eight GPUs."""
    (brake,) = [r for r in fail_slow.replay(seeds=1).runs if r.fault.kind == "power-brake-node"]
    assert brake.verdict is not None
    assert brake.verdict.culprit is not None
    (words,) = [e for e in brake.verdict.culprit.evidence if "clock event reason" in e]
    assert words == (
        "8 of the node's 8 GPUs: NVML clock event reason: hardware power brake, hardware slowdown"
    )
