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
