"""Signatures mask what differs between occurrences; groups say what a recurrence points at."""

from datetime import UTC, datetime

from lambdas.training_analyzer.failure_causes import (
    Occurrence,
    Suspect,
    classify_text,
    group_signatures,
    signature,
)
from tests.unit.reference_data import failure_log_corpus


def test_times_addresses_paths_ranks_pods_and_numbers_are_masked() -> None:
    assert signature(
        "2024-03-13T08:15:02.118Z [Rank 7] pod train-7db9fccd9b-m76mc on 10.200.84.247<58355> "
        "read /fsx/data/shard-0042.tar at 0x7f4774cc9620 (PCI:0000:53:00): 137"
    ) == ("<time> [rank] pod train-<pod> on <ip> read <path> at <hex> (PCI:<pci>): <n>")


def test_the_same_failure_on_two_machines_has_one_signature() -> None:
    corpus = {s.id: s for s in failure_log_corpus()}
    windows = classify_text(corpus["dataloader-stack-windows"].text)
    linux = classify_text(corpus["dataloader-stack-linux"].text)
    assert windows.signature == linux.signature
    other = classify_text(corpus["dataloader-getitem-kubectl-prefix"].text)
    assert other.signature != linux.signature  # raised in another function


def test_the_same_timeout_on_two_ranks_has_one_signature() -> None:
    corpus = {s.id: s for s in failure_log_corpus()}
    lines = corpus["nccl-timeout-reduce-scatter"].lines
    assert signature(classify_text(lines[0]).lines[0].text) == signature(
        classify_text(lines[1]).lines[0].text
    )


def at(day: int) -> datetime:
    return datetime(2026, 11, day, tzinfo=UTC)


def test_one_node_across_jobs_points_at_the_node_many_nodes_at_code_or_data() -> None:
    groups = group_signatures(
        [
            Occurrence("xid <n>", "gpu_xid", "job-a", "node-1", at(2)),
            Occurrence("xid <n>", "gpu_xid", "job-b", "node-1", at(5)),
            Occurrence("xid <n>", "gpu_xid", "job-c", "node-1", at(3)),
            Occurrence("KeyError", "application_exception", "job-a", "node-1", at(1)),
            Occurrence("KeyError", "application_exception", "job-d", "node-2", at(4)),
            Occurrence("disk", "disk_full", "job-e", "node-3", at(6)),
        ]
    )
    assert [(g.signature, g.count, g.suspect) for g in groups] == [
        ("xid <n>", 3, Suspect.NODE),
        ("KeyError", 2, Suspect.CODE_OR_DATA),
        ("disk", 1, Suspect.NONE),
    ]
    xid = groups[0]
    assert (xid.first_seen, xid.last_seen) == (at(2), at(5))
    assert xid.jobs == ("job-a", "job-b", "job-c")
    assert xid.nodes == ("node-1",)
