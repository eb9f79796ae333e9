"""The storage analysis in shards (lambdas/storage_analyzer/fleet.py) keeps what a shard
skipped: the merged run names the volumes a failed shard could not read, and counts only the
volumes analyzed, as one run's summary does. Clients are real botocore clients answered at
the HTTP layer (benchmarks/wire.py) or by an event hook (cli/service_answers.py)."""

import json
from typing import Any

import pytest

from benchmarks import storage_analyzer as bench
from benchmarks import wire
from benchmarks.training_fleet import bucket_client
from cli.service_answers import answer, error
from lambdas.shared.findings import Kind
from lambdas.shared.shards import STATE_PAYLOAD_MAX_BYTES
from lambdas.storage_analyzer import fleet
from lambdas.storage_analyzer import handler as storage_handler
from lambdas.storage_analyzer.aws import VolumeScope, discover_volumes
from lambdas.storage_analyzer.run import analyze_volumes

DAY = "2025-11-28"
WHERE: dict[str, Any] = {"bucket": "reports", "cluster": "bench", "day": DAY}
#: Volumes one shard skips in the merge test: their ids alone are over 256 KiB.
SKIPPED = 11_000


def state_bytes(document: Any) -> int:
    """A state's input or output as Step Functions measures it: UTF-8 JSON (as the Lambda
    runtime serializes a handler's return)."""
    return len(json.dumps(document).encode())


def _refusing_cloudwatch() -> Any:
    """GetMetricData refused with a 400, which botocore does not retry."""
    client = wire.client("cloudwatch")
    answer(
        client,
        "GetMetricData",
        lambda _: error("InvalidParameterCombination", "refused for the test", 400),
    )
    return client


def _put_events(params: dict[str, Any]) -> dict[str, Any]:
    return {"FailedEntryCount": 0, "Entries": [{"EventId": "e"}] * len(params["Entries"])}


def test_a_failed_shards_skipped_volumes_survive_the_merge() -> None:
    s3 = bucket_client({})
    planned = fleet.plan(
        ec2=bench.ec2_client(4), s3=s3, scope=VolumeScope.CLUSTER, per_shard=2, **WHERE
    )
    assert [(s["first"], s["count"]) for s in planned["shards"]] == [(0, 2), (2, 2)]
    clients = [bench.FakeCloudWatch().client(), _refusing_cloudwatch()]
    for item, cloudwatch in zip(planned["shards"], clients, strict=True):
        fleet.shard(s3=s3, cloudwatch=cloudwatch, start=bench.START, end=bench.END, **item, **WHERE)
    merged = fleet.read_parts(s3=s3, shards=2, **WHERE)
    failed = [f"vol-{i:017x}" for i in (2, 3)]
    assert merged.skipped == failed
    assert merged.volumes == 2
    errors = [f.resource for f in merged.findings if f.kind == Kind.ANALYSIS_ERROR]
    assert errors == failed
    found = {f.resource for f in merged.findings if f.kind != Kind.ANALYSIS_ERROR}
    assert found
    assert found <= {f"vol-{i:017x}" for i in (0, 1)}


def test_shards_merge_to_the_single_runs_findings_in_its_order() -> None:
    """A hundred volumes of the benchmark's mix: 38 of them trip a screen (the 18 whose
    pattern does, and the gp2 ones whose busy hour's queue bursts to 8, over their limit of 6),
    so their hourly series come in a second pass, after the other volumes of their run or
    shard; findings are still in volume order, so the merged parts are the single run, line
    for line."""
    volumes = discover_volumes(bench.ec2_client(100), cluster="bench", scope=VolumeScope.CLUSTER)
    assert bench._floor("floor", 100)[4] == 38
    single = analyze_volumes(bench.FakeCloudWatch().client(), volumes, bench.START, bench.END)
    s3 = bucket_client({})
    planned = fleet.plan(
        ec2=bench.ec2_client(100), s3=s3, scope=VolumeScope.CLUSTER, per_shard=30, **WHERE
    )
    for item in reversed(planned["shards"]):  # the Map runs shards in any order
        fleet.shard(
            s3=s3, cloudwatch=bench.FakeCloudWatch().client(), start=bench.START,
            end=bench.END, **item, **WHERE,
        )  # fmt: skip
    merged = fleet.read_parts(s3=s3, shards=len(planned["shards"]), **WHERE)
    kinds = {f.kind for f in single.findings}
    assert Kind.EBS_HIGH_QUEUE_LENGTH in kinds
    assert Kind.EBS_IDLE_VOLUME in kinds
    assert [f.to_json() for f in merged.findings] == [f.to_json() for f in single.findings]
    assert (merged.volumes, merged.skipped) == (single.volumes, single.skipped) == (100, [])


def test_the_merge_state_returns_counts_under_step_functions_256_kib(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A shard whose GetMetricData is refused skips all its 11,000 volumes (24 bytes an id):
    the merge state's output (the handler's return) names none of them, only how many, and
    stays under Step Functions' payload quota; each is named in the day's findings file, one
    analysis_error each. (Its output was every id: 11,000 ids are over 256 KiB, and the
    execution failed with States.DataLimitExceeded after the findings were published.)"""
    objects: dict[str, bytes] = {}
    s3 = bucket_client(objects)
    planned = fleet.plan(
        ec2=bench.ec2_client(SKIPPED), s3=s3, scope=VolumeScope.CLUSTER, per_shard=20_000, **WHERE
    )
    (item,) = planned["shards"]
    fleet.shard(
        s3=s3, cloudwatch=_refusing_cloudwatch(), start=bench.START, end=bench.END, **item, **WHERE
    )
    events, cloudwatch = wire.client("events"), bench.FakeCloudWatch().client()  # PutMetricData
    wire.serve_json(events, {"PutEvents": _put_events})
    # No storage dashboard deployed: GetDashboard's DashboardNotFoundError ("ResourceNotFound",
    # HTTP 404, botocore's cloudwatch model), answered here rather than sent to the Region.
    answer(cloudwatch, "GetDashboard", lambda _: error("ResourceNotFound", "no dashboard", 404))
    for name, client in (("s3", s3), ("events", events), ("cloudwatch", cloudwatch)):
        monkeypatch.setitem(storage_handler._clients, name, client)
    for name, value in {"CLUSTER_NAME": "bench", "REPORT_BUCKET": "reports", "BUCKETS": ""}.items():
        monkeypatch.setenv(name, value)
    event = {"mode": "merge", "time": f"{DAY}T07:00:00Z", **planned}
    assert state_bytes(event) <= STATE_PAYLOAD_MAX_BYTES  # the merge state's input
    merged = storage_handler.handler(event, None)
    assert state_bytes(merged) <= STATE_PAYLOAD_MAX_BYTES
    assert (merged["volumes"], merged["skipped"], merged["findings"]) == (0, SKIPPED, SKIPPED)
    assert merged["dashboard_volumes"] is None  # logged, and the findings went out regardless
    lines = [json.loads(line) for line in objects[merged["key"]].splitlines()]
    assert {f["kind"] for f in lines} == {"analysis_error"}
    assert [f["resource"] for f in lines] == [f"vol-{i:017x}" for i in range(SKIPPED)]
    ids = [f["resource"] for f in lines]
    print(f"{SKIPPED:,} ids: {state_bytes(ids):,} bytes; the merge: {state_bytes(merged):,}")
