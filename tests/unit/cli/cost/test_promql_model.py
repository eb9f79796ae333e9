"""The PromQL line's model of the readers' requests (cli/cost/promql_reads.py), held to the
readers themselves run against a recording client (tests/oracles/promql_recorder.py) on fleets
up to 500 jobs: within 1% (the two agree exactly here), in each mode, across the listing's
halving at 500 jobs, the ranks' halving above 500 ranks a batch, and the node queries' stop at
500 nodes. The model's cost grows linearly (benchmarks/cost_estimate.py times the largest
fleet)."""

import pytest

from cli.cost.promql_reads import Fleet, PromQLReads, analyzer_reads, report_reads
from lambdas.shared.promql import MAX_SERIES
from tests.oracles.promql_recorder import recorded_analyzer_reads, recorded_report_reads


def _close(model: PromQLReads, recorded: PromQLReads) -> None:
    assert model.truncated == recorded.truncated
    assert abs(model.requests - recorded.requests) <= 0.01 * recorded.requests
    assert abs(model.samples - recorded.samples) <= 0.01 * recorded.samples


@pytest.mark.parametrize(
    ("nodes", "gpus", "jobs", "days"),
    [
        (1, 8, 1, 1),
        (4, 8, 0, 14),
        (40, 8, 40, 14),  # a job a node, cost-estimate's default
        (40, 8, 5, 7),  # 64 ranks a job: batches of ranks halved
        (37, 3, 123, 14),
        (30, 1, 251, 14),  # two batches of jobs
        (10, 8, 499, 3),
        (10, 8, MAX_SERIES, 3),  # the listing halves its name ranges
        (MAX_SERIES, 8, MAX_SERIES, 2),  # the node queries are full: their reads stop
    ],
)
def test_the_model_matches_the_readers_on_the_recording_client(
    nodes: int, gpus: int, jobs: int, days: int
) -> None:
    fleet = Fleet(nodes, gpus, jobs)
    for otlp in (fleet, None):
        _close(
            analyzer_reads(nodes, gpus, days, otlp),
            recorded_analyzer_reads(nodes, gpus, days, otlp),
        )
    _close(report_reads(fleet), recorded_report_reads(fleet))


def test_the_largest_fleet_is_counted_reader_by_reader() -> None:
    """62,500 nodes of 8 GPUs and a job a node (cost-estimate's largest fleet): the jobs' reads
    in batches of 250 jobs (ranks read in batches halved until under 500 ranks), the listing's
    ranges, the jobs' nodes in batches of 31, the GPUs their pods held node by node; the
    node-led reads stop at their full node query.
    Counted, not run: the recording client was still running after 20 minutes."""
    fleet = Fleet(62_500, 8, 62_500)
    reads = analyzer_reads(fleet.nodes, 8, 14, fleet)
    # 1,750,000 of them the GPUs the jobs' pods held: two queries a job node, a page a day.
    assert (reads.requests, reads.truncated) == (229_652 + 62_500 * 2 * 14, True)
    assert report_reads(fleet).requests == 23_686 + 31  # the lemon nodes' 30 days of XIDs
