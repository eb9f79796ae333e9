"""The GPU-hour attribution's PromQL, counted by running its reader: requests as a real engine
sees them (tests/functional/lambdas/test_gpu_attribution_otel.py holds the same 1 + 4 a node
a day against Prometheus), and the samples their range selectors scan."""

from cli.promql_reads import attribution_reads
from lambdas.shared.promql import MAX_SERIES
from lambdas.training_analyzer.gpu_hours.otel import SAMPLES_PER_HOUR


def test_a_run_over_40_eight_gpu_nodes_sends_161_requests() -> None:
    reads = attribution_reads(40, 8)
    # The node query, then each node's GPU watts, GPU samples, pod samples and pod watts, one
    # 24-hour page each for the day.
    assert reads.requests == 1 + 4 * 40
    # The node query's one [1h] selector reads all 320 GPUs; a node's six (a mean is a sum
    # over a count: two) read its 8; 24 hourly steps of an hour's 120 samples each.
    assert reads.samples == (320 * 1 + 40 * 8 * 6) * 24 * SAMPLES_PER_HOUR
    assert reads.samples == 6_451_200
    assert not reads.truncated


def test_the_count_follows_the_fleet() -> None:
    assert attribution_reads(1, 8).requests == 5
    assert attribution_reads(1, 8).samples == (8 + 8 * 6) * 24 * SAMPLES_PER_HOUR
    assert attribution_reads(40, 4).samples == attribution_reads(40, 8).samples / 2


def test_at_500_nodes_the_node_query_is_refused_as_truncated_and_the_run_stops() -> None:
    """A response holds at most 500 series ("QueryMetrics", CloudWatch-PromQL-API-QueryMetrics
    .html): the node query's 500 nodes may have dropped others, so the reader sends no more."""
    assert not attribution_reads(MAX_SERIES - 1, 8).truncated
    stopped = attribution_reads(MAX_SERIES, 8)
    assert stopped.truncated
    assert stopped.requests == 1
    assert stopped.samples == MAX_SERIES * 8 * 24 * SAMPLES_PER_HOUR
