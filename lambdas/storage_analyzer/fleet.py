"""The storage analysis as a Step Functions Distributed Map runs it (cdk/constructs/fleet_map.py)
when a fleet outgrows one function run: ``plan`` lists the volumes once into the report
bucket and returns the shards; each ``shard`` analyzes its slice and writes its part; ``merge``
reads the parts in shard order, adds the buckets' findings, and publishes the day's one file,
the single run's (lambdas/shared/shards.py).

Parts live under ``shards/`` of the report bucket, beside the day's findings, keyed by cluster
and day, so a rerun of the same day replaces them. A part holds its findings, the volumes it
skipped and how many it analyzed, so the merged run's summary is the single run's too.
"""

import json
from dataclasses import asdict
from typing import Any

from lambdas.shared.shard_parts import (
    MissingPartError,
    add_run,
    read_required,
    run_document,
    shard_key,
)
from lambdas.shared.shards import map_items
from lambdas.storage_analyzer.aws import VolumeScope, discover_volumes
from lambdas.storage_analyzer.ebs_analysis import Volume
from lambdas.storage_analyzer.run import StorageRun, analyze_volumes

__all__ = ["MissingPartError", "part_key", "plan", "read_parts", "shard", "volumes_key"]


def volumes_key(cluster: str, day: str) -> str:
    return shard_key(cluster, day, "storage-volumes.json")


def part_key(cluster: str, day: str, index: int) -> str:
    return shard_key(cluster, day, f"storage-part-{index:05d}.json")


def plan(
    *, ec2: Any, s3: Any, bucket: str, cluster: str, scope: VolumeScope, day: str, per_shard: int
) -> dict[str, Any]:
    """Lists the volumes once and stages them; the Map's items are the shards, by index."""
    volumes = discover_volumes(ec2, cluster=cluster, scope=scope)
    body = json.dumps([asdict(v) for v in volumes]).encode()
    s3.put_object(Bucket=bucket, Key=volumes_key(cluster, day), Body=body)
    items = map_items(len(volumes), per_shard)
    return {"day": day, "volumes": len(volumes), "shards": items}


def shard(
    *,
    s3: Any,
    cloudwatch: Any,
    bucket: str,
    cluster: str,
    day: str,
    index: int,
    first: int,
    count: int,
    start: float,
    end: float,
) -> dict[str, Any]:
    raw = read_required(s3, bucket, volumes_key(cluster, day))
    volumes = [Volume(**v) for v in json.loads(raw)[first : first + count]]
    run = analyze_volumes(cloudwatch, volumes, start, end)
    body = json.dumps({**run_document(run), "volumes": run.volumes}).encode()
    s3.put_object(Bucket=bucket, Key=part_key(cluster, day, index), Body=body)
    return {"index": index, "volumes": len(volumes), "findings": len(run.findings)}


def read_parts(*, s3: Any, bucket: str, cluster: str, day: str, shards: int) -> StorageRun:
    """Every part, in shard order, as one run; a missing part is an error, not nothing."""
    run = StorageRun()
    for index in range(shards):
        key = part_key(cluster, day, index)
        document = json.loads(read_required(s3, bucket, key, f": shard {index} did not finish"))
        add_run(run, document)
        run.volumes += document["volumes"]
    staged = json.loads(read_required(s3, bucket, volumes_key(cluster, day)))
    run.volume_ids = [v["volume_id"] for v in staged]
    return run
