"""The training analyzer's PromQL, counted by running its OTel readers: requests as a real
engine sees them (tests/functional/lambdas/test_gpu_attribution_otel.py holds the same 1 + 4 a
node a day for the attribution and 1 + 2 a node a day for the memory reads against
Prometheus), and the samples their range selectors scan."""

from cli.cost.promql_reads import analyzer_reads
from lambdas.shared.promql import MAX_SERIES
from lambdas.training_analyzer.gpu_hours.otel import SAMPLES_PER_HOUR

STEPS = 24  # hourly steps in a day's page


def test_a_run_over_40_eight_gpu_nodes_sends_728_requests() -> None:
    reads = analyzer_reads(40, 8, lookback_days=7)
    # The attribution: the node query, then each node's GPU watts, GPU samples, pod samples and
    # pod watts, one 24-hour page each for the day. The memory reads: the node query and each
    # node's framebuffer used and size, a page for each of the lookback's 7 days.
    assert reads.requests == (1 + 4 * 40) + 7 * (1 + 2 * 40)
    # The attribution's node query's one [1h] selector reads all 320 GPUs, a node's six (a
    # mean is a sum over a count: two) its 8; the memory reads the same a day, a node's two
    # selectors its 8; 24 hourly steps of an hour's 120 samples each.
    attribution = (320 + 40 * 8 * 6) * STEPS * SAMPLES_PER_HOUR
    memory = 7 * (320 + 40 * 8 * 2) * STEPS * SAMPLES_PER_HOUR
    assert reads.samples == attribution + memory == 25_804_800
    assert not reads.truncated


def test_the_count_follows_the_fleet_and_the_lookback() -> None:
    assert analyzer_reads(1, 8, lookback_days=7).requests == 5 + 7 * 3
    assert analyzer_reads(1, 8, lookback_days=1).requests == 5 + 3
    assert (
        analyzer_reads(1, 8, lookback_days=1).samples
        == ((8 + 8 * 6) + (8 + 8 * 2)) * STEPS * SAMPLES_PER_HOUR
    )
    assert analyzer_reads(40, 4, 7).samples == analyzer_reads(40, 8, 7).samples / 2


def test_at_500_nodes_the_node_query_is_refused_as_truncated_and_the_run_stops() -> None:
    """A response holds at most 500 series ("QueryMetrics", CloudWatch-PromQL-API-QueryMetrics
    .html): the node query's 500 nodes may have dropped others, so the reader sends no more."""
    assert not analyzer_reads(MAX_SERIES - 1, 8, 7).truncated
    stopped = analyzer_reads(MAX_SERIES, 8, 7)
    assert stopped.truncated
    assert stopped.requests == 1
    assert stopped.samples == MAX_SERIES * 8 * STEPS * SAMPLES_PER_HOUR
