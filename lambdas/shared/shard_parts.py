"""Where a Distributed Map's plan and parts live while it runs: ``shards/`` of the report
bucket, beside the day's findings, keyed by cluster and day (a rerun of the same day
replaces them), and how they are read back, a missing one an error rather than nothing.

A part carries its run's findings and what it skipped (the summary's ``skipped``), so the
merge is the single run's on both."""

from collections.abc import Mapping
from typing import Any, Final

from lambdas.shared.findings import AnalysisRun, Finding
from lambdas.shared.s3_objects import read_object

PREFIX: Final = "shards"


class MissingPartError(Exception):
    """A shard's part is not in the report bucket: the merge would lose its findings."""


def shard_key(cluster: str, day: str, name: str) -> str:
    return f"{PREFIX}/cluster={cluster}/date={day}/{name}"


def read_required(s3: Any, bucket: str, key: str, why: str = "") -> bytes:
    """The object's bytes; a missing one is ``MissingPartError`` naming the key (and why)."""
    raw = read_object(s3, bucket, key)
    if raw is None:
        raise MissingPartError(f"s3://{bucket}/{key} is missing{why}")
    return raw


def run_document(run: AnalysisRun) -> dict[str, Any]:
    """A part's findings and skipped resources, as JSON values."""
    return {"findings": [f.to_dict() for f in run.findings], "skipped": list(run.skipped)}


def add_run(run: AnalysisRun, document: Mapping[str, Any]) -> None:
    """A part (``run_document``) appended to ``run``, findings and skipped in their order."""
    run.findings += [Finding.from_dict(f) for f in document["findings"]]
    run.skipped += document["skipped"]
