"""Where a Distributed Map's plan and parts live while it runs: ``shards/`` of the report
bucket, beside the day's findings, keyed by cluster and day (a rerun of the same day
replaces them), and how they are read back, a missing one an error rather than nothing."""

from typing import Any, Final

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
