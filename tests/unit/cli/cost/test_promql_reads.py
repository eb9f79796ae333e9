"""The training analyzer's and the weekly report's PromQL, counted by running their OTel
readers: requests as a real engine sees them (tests/functional/lambdas/test_gpu_attribution_otel
.py holds the same 1 + 4 a node a day for the attribution and 1 + 2 a node a day for the memory
reads against Prometheus), and the samples their range selectors scan."""

from cli.cost.promql_reads import Fleet, analyzer_reads, report_reads
from lambdas.shared.promql import MAX_SERIES
from lambdas.training_analyzer.gpu_hours.otel import SAMPLES_PER_HOUR

STEPS = 24  # hourly steps in a day's page


def test_a_run_over_40_eight_gpu_nodes_sends_730_requests() -> None:
    reads = analyzer_reads(40, 8, lookback_days=7)
    # The attribution: the node query, then each node's GPU watts, GPU samples, pod samples and
    # pod watts, one 24-hour page each for the day, and the nodes' GPU capacity (its most and
    # its samples: the funnel's paid stage). The memory reads: the node query and each node's
    # framebuffer used and size, a page for each of the lookback's 7 days.
    assert reads.requests == (1 + 4 * 40 + 2) + 7 * (1 + 2 * 40)
    # The attribution's node query's one [1h] selector reads all 320 GPUs, a node's six (a
    # mean is a sum over a count: two) its 8; the memory reads the same a day, a node's two
    # selectors its 8; 24 hourly steps of an hour's 120 samples each.
    attribution = (320 + 40 * 8 * 6) * STEPS * SAMPLES_PER_HOUR
    # Kube State Metrics' capacity, one series a node, counted as every GPU (an upper bound).
    capacity = 2 * 320 * STEPS * SAMPLES_PER_HOUR
    memory = 7 * (320 + 40 * 8 * 2) * STEPS * SAMPLES_PER_HOUR
    assert reads.samples == attribution + capacity + memory == 27_648_000
    assert not reads.truncated


def test_the_count_follows_the_fleet_and_the_lookback() -> None:
    assert analyzer_reads(1, 8, lookback_days=7).requests == 5 + 2 + 7 * 3
    assert analyzer_reads(1, 8, lookback_days=1).requests == 5 + 2 + 3
    assert (
        analyzer_reads(1, 8, lookback_days=1).samples
        == ((8 + 8 * 6) + 2 * 8 + (8 + 8 * 2)) * STEPS * SAMPLES_PER_HOUR
    )
    assert analyzer_reads(40, 4, 7).samples == analyzer_reads(40, 8, 7).samples / 2


def test_at_500_nodes_the_node_queries_are_refused_as_truncated_and_their_reads_stop() -> None:
    """A response holds at most 500 series ("QueryMetrics", CloudWatch-PromQL-API-QueryMetrics
    .html): a node query's 500 nodes may have dropped others, so its reader sends no more; the
    attribution's and the memory reads' are each skipped (handler.py runs one after the other)."""
    assert not analyzer_reads(MAX_SERIES - 1, 8, 7).truncated
    stopped = analyzer_reads(MAX_SERIES, 8, 7)
    assert stopped.truncated
    assert stopped.requests == 2
    assert stopped.samples == 2 * MAX_SERIES * 8 * STEPS * SAMPLES_PER_HOUR


#: Samples an hour of each sender's series: the exporter's every 10 s, the emitter's every 60 s.
EXPORTER_HOUR, EMITTER_HOUR = 360, 60


def test_with_the_otlp_sink_a_run_reads_the_jobs_and_the_exporter_with_promql_too() -> None:
    """One node of 8 GPUs, one job of 8 ranks, a day's lookback: each reader's requests (one
    24-hour page each) and the series its selectors scan, reader by reader."""
    reads = analyzer_reads(1, 8, 1, Fleet(1, 8, jobs=1))
    day = STEPS  # hourly evaluations
    ranks = 8 * day * EMITTER_HOUR  # a selector over the job's 8 ranks
    gpus = 8 * day * EXPORTER_HOUR  # a selector over the node's 8 GPUs, the exporter's
    dcgm = 8 * day * SAMPLES_PER_HOUR
    expected = {
        # requests, samples
        "listing (steps, job_failed)": (2, 2 * ranks),
        "ranks (steps Sum, step time Average, work Sum: 4 selectors)": (3, 4 * ranks),
        "series (18 statistics, 4 of them Averages: 22 selectors)": (18, 22 * ranks),
        "baselines (Sum, SampleCount)": (2, 2 * ranks),
        "the jobs' nodes' power and SM means": (2, 4 * gpus),
        # Kube State Metrics' pending pods (a full hour's samples; pending x GPUs: 2
        # selectors), its pod series counted as every GPU (an upper bound).
        "pending pods": (2, (1 + 2) * dcgm),
        # The GPUs the job's pods held (job_gpus.py): its node's GPU samples and pod samples.
        "the job's pods' GPUs": (2, (1 + 1) * dcgm),
        "attribution: exporter nodes, 2 means, a minimum, a count": (5, 7 * gpus),
        "attribution: DCGM holds": (5, (1 + 6) * dcgm),
        "attribution: stepping hours": (1, ranks),
        # Kube State Metrics' capacity, one series a node, counted as its GPUs (an upper bound).
        "attribution: GPU capacity (its most, its samples)": (2, 2 * dcgm),
        "memory": (3, (1 + 2) * dcgm),
    }
    assert reads.requests == sum(r for r, _ in expected.values()) == 47
    assert reads.samples == sum(s for _, s in expected.values()) == 1_509_120
    # Without the OTLP sink only the DCGM and capacity reads: 10 requests.
    assert analyzer_reads(1, 8, 1).requests == 5 + 2 + 3


def test_the_weekly_report_reads_a_week_with_the_otlp_sink() -> None:
    week = 7 * STEPS
    reads = report_reads(Fleet(1, 8, jobs=1))
    # GPU days: 4 cluster sums and counts, a page a day; XIDs: the counters from a day before
    # the week (8 pages), and from a day before the lemon nodes' 30 days (31 pages);
    # throughput: the listing (2 metrics) and a Sum and a SampleCount.
    assert reads.requests == 4 * 7 + 8 + 31 + 2 * 7 + 2 * 7 == 95
    gpus, ranks = 8 * EXPORTER_HOUR, 8 * EMITTER_HOUR
    xids = (8 + 31) * STEPS
    assert reads.samples == (4 * week + xids) * gpus + 4 * week * ranks == 4_953_600


def test_the_listing_halves_its_name_ranges_from_500_jobs() -> None:
    """At 499 jobs the listing's one range answers whole (2 requests a page; the throughput's
    Sum and SampleCount in 2 batches of 250 jobs); at 500 it is full and asked again in halves
    by code point, character after character of "job-" (promql_jobs.py ``list_jobs``)."""
    reads = report_reads(Fleet(1, 8, jobs=499)).requests
    assert reads == 4 * 7 + 8 + 31 + 2 * 7 + 2 * 2 * 7 == 109
    assert report_reads(Fleet(1, 8, jobs=MAX_SERIES)).requests == 1_522 + 31
