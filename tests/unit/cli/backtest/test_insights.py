"""The Metrics Insights subset: SCHEMA matches exact dimension sets, GROUP BY, ORDER BY FUNC()
over the range, LIMIT, and the 500-series cap (sources in cli/backtest/insights.py)."""

import pytest

from cli.backtest.history import Sample
from cli.backtest.insights import MAX_SERIES, InsightsQueryError, evaluate, parse

SCHEMA = 'SCHEMA("GpuInsights", ClusterName, GpuIndex, NodeName)'


def _sample(node: str, gpu: int, t: float, value: float, metric: str = "p") -> Sample:
    dims = frozenset({("ClusterName", "c"), ("NodeName", node), ("GpuIndex", str(gpu))})
    return Sample("GpuInsights", metric, dims, t, value)


def test_group_order_and_limit_rank_by_the_function_over_the_range() -> None:
    samples = [_sample("a", 0, t, v) for t, v in ((0, 10), (60, 90))]  # AVG 50, MAX 90
    samples += [_sample("b", 0, t, 60.0) for t in (0, 60)]  # AVG 60, MAX 60
    samples += [_sample("c", 0, 0, 5.0)]
    base = f"FROM {SCHEMA} WHERE ClusterName = 'c' GROUP BY NodeName"
    low = evaluate(f"SELECT AVG(p) {base} ORDER BY AVG() ASC LIMIT 2", samples, 60)
    assert [(s.group, s.score) for s in low] == [(("c",), 5.0), (("a",), 50.0)]
    high = evaluate(f"SELECT MAX(p) {base} ORDER BY MAX() DESC LIMIT 1", samples, 60)
    assert [(s.group, s.values) for s in high] == [(("a",), {0: 10.0, 60: 90.0})]


def test_schema_matches_only_that_exact_dimension_set() -> None:
    cluster_wide = Sample("GpuInsights", "p", frozenset({("ClusterName", "c")}), 0, 99.0)
    samples = [_sample("a", 0, 0, 1.0), _sample("a", 1, 0, 3.0), cluster_wide]
    (only,) = evaluate(f"SELECT SUM(p) FROM {SCHEMA}", samples, 60)
    assert only.values == {0: 4.0}  # not the ClusterName-only series


def test_a_query_returns_at_most_500_series() -> None:
    samples = [_sample("n", gpu, 0, 1.0) for gpu in range(600)]
    assert parse(f"SELECT AVG(p) FROM {SCHEMA} GROUP BY GpuIndex").limit == MAX_SERIES
    assert len(evaluate(f"SELECT AVG(p) FROM {SCHEMA} GROUP BY GpuIndex", samples, 60)) == 500


def test_an_unsupported_query_is_named() -> None:
    with pytest.raises(InsightsQueryError, match="not a supported"):
        parse("SELECT p FROM GpuInsights")
    with pytest.raises(InsightsQueryError, match="unsupported condition"):
        parse(f"SELECT AVG(p) FROM {SCHEMA} WHERE GpuIndex != '1'")


@pytest.mark.parametrize("limit", [0, 501, 1000])
def test_a_limit_cloudwatch_refuses_is_refused(limit: int) -> None:
    """AWS: "The maximum value that you can specify is 500" (Metrics Insights query components and
    syntax): a larger LIMIT is an error there, not 500 series."""
    with pytest.raises(InsightsQueryError, match=f"LIMIT {limit} is outside 1 to 500"):
        parse(f"SELECT AVG(p) FROM {SCHEMA} GROUP BY GpuIndex LIMIT {limit}")
