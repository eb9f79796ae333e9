"""Shards are contiguous slices; a shard fits its share of the function's time limit; the
handlers fall back to the settings' defaults; every state of the fleet state machine stays
under Step Functions' 256 KiB at the worst case."""

import json
from typing import Any

import pytest

from cdk.settings import _RANGES, Settings, SettingsError
from lambdas.shared.shards import (
    MAX_SHARDS,
    STATE_PAYLOAD_MAX_BYTES,
    FanOut,
    TooManyShardsError,
    map_items,
    per_shard,
    shards,
)
from lambdas.storage_analyzer import fleet as storage_fleet
from lambdas.storage_analyzer import handler as storage_handler
from lambdas.training_analyzer import fleet as training_fleet
from lambdas.training_analyzer import handler as training_handler
from lambdas.training_analyzer.run import TrainingRun


def test_shards_are_contiguous_slices_that_cover_every_item_once() -> None:
    items = [f"vol-{i}" for i in range(10)]
    cut = shards(items, 4)
    assert [len(s) for s in cut] == [4, 4, 2]
    assert [i for s in cut for i in s] == items
    assert shards([], 4) == []
    with pytest.raises(ValueError, match="at least one item, not 0"):
        shards(items, 0)


def test_a_shard_fits_half_of_the_fifteen_minute_limit() -> None:
    assert per_shard(0.0024) == 187_500  # 450 s / 2.4 ms
    assert per_shard(1000.0) == 1  # never zero
    with pytest.raises(ValueError, match="not 0"):
        per_shard(0)


def test_fan_out_wall_time_runs_shards_in_waves() -> None:
    fan = FanOut(items=100_000, per_shard=10_000, concurrency=4, seconds_per_item=0.003)
    assert fan.shards == 10
    assert fan.waves == 3
    assert fan.wall_s == pytest.approx(3 * (30.0 + 5.0) + 5.0)


@pytest.mark.parametrize(
    ("handler", "fleet", "variable", "setting"),
    [
        (storage_handler, storage_fleet, "SHARD_VOLUMES", "storage_shard_volumes"),
        (training_handler, training_fleet, "SHARD_JOBS", "training_shard_jobs"),
    ],
)
def test_without_its_settings_in_the_environment_a_plan_uses_the_settings_defaults(
    monkeypatch: pytest.MonkeyPatch, handler: Any, fleet: Any, variable: str, setting: str
) -> None:
    """The shard size and LOOKBACK_DAYS fall back to cdk/settings.py's defaults (one module,
    lambdas/shared/shards.py), not to numbers of their own (they were 10,000 and 1,000)."""
    for name, value in {"CLUSTER_NAME": "train", "REPORT_BUCKET": "report"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv(variable, raising=False)
    monkeypatch.delenv("LOOKBACK_DAYS", raising=False)
    seen: dict[str, Any] = {}
    monkeypatch.setattr(training_handler, "_related", lambda *_: ((), TrainingRun()))
    monkeypatch.setattr(fleet, "plan", lambda **kw: seen.update(kw) or {})
    handler.handler({"mode": "plan", "time": "2026-11-30T07:00:00Z"}, None)
    assert seen["per_shard"] == getattr(Settings(cluster_name="train"), setting) > 1_000
    if "start" in seen:
        assert seen["end"] - seen["start"] == Settings(cluster_name="train").lookback_days * 86_400


#: The event the schedule starts the state machine with (its input, and each step's "time"):
#: EventBridge's scheduled event, as the EventBridge User Guide's example shows it.
SCHEDULED_EVENT = {
    "version": "0",
    "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": "123456789012",
    "time": "2026-11-30T07:00:00Z",
    "region": "us-east-1",
    "resources": ["arn:aws:events:us-east-1:123456789012:rule/gpu-insights-storage-schedule"],
    "detail": {},
}


def _bytes(document: Any) -> int:
    """A state's input or output as Step Functions measures it: UTF-8 JSON."""
    return len(json.dumps(document).encode())


@pytest.mark.parametrize(
    ("counted", "shard_setting"),
    [("volumes", "storage_shard_volumes"), ("jobs", "training_shard_jobs")],
)
def test_every_state_of_the_fleet_map_fits_step_functions_payload_at_the_worst_case(
    counted: str, shard_setting: str
) -> None:
    """The most shards (MAX_SHARDS) of the largest shard the settings allow, so the longest
    numbers: each state's input and output as cdk/constructs/fleet_map.py wires them."""
    largest = _RANGES[shard_setting][1]
    total = MAX_SHARDS * largest
    plan: dict[str, Any] = {
        "day": "2026-11-30",
        counted: total,
        "shards": map_items(total, largest),
    }
    after_plan = {**SCHEDULED_EVENT, "plan": plan}  # result_path $.plan
    item = {"mode": "shard", "time": SCHEDULED_EVENT["time"], **plan["shards"][-1]}
    shard_out = {"index": MAX_SHARDS - 1, counted: largest, "findings": 10 * largest}
    map_results = [shard_out] * MAX_SHARDS  # collected before result_path discards them
    merge_in = {
        "mode": "merge",
        "time": SCHEDULED_EVENT["time"],
        counted: total,
        "shards": plan["shards"],
    }
    merge_out = {
        "volumes": total,
        "buckets": 1000,
        "findings": 10 * total,
        "skipped": total,
        "gpu_hours": 1e12,
        "gpu_hours_by_class": {},
        "key": "findings/" + "x" * 1000,
    }
    sizes = {
        "execution input, plan input": _bytes(SCHEDULED_EVENT),
        "plan output, Map input and output, merge state input": _bytes(after_plan),
        "a shard's input": _bytes(item),
        "the Map's results": _bytes(map_results),
        "merge payload": _bytes(merge_in),
        "merge output": _bytes(merge_out),
    }
    over = {state: size for state, size in sizes.items() if size > STATE_PAYLOAD_MAX_BYTES}
    assert over == {}
    print(counted, {state: f"{size:,}" for state, size in sizes.items()})


def test_more_shards_than_the_states_carry_are_refused_before_any_runs() -> None:
    assert len(map_items(MAX_SHARDS * 100, 100)) == MAX_SHARDS
    with pytest.raises(TooManyShardsError, match=r"make 4,001 shards.*at least 101"):
        map_items(MAX_SHARDS * 100 + 1, 100)


def test_settings_refuse_a_fleet_of_more_shards_than_the_states_carry() -> None:
    with pytest.raises(SettingsError, match="storage_shard_volumes of at least 2,500"):
        Settings(cluster_name="train", storage_fleet_volumes=10_000_000, storage_shard_volumes=100)
    with pytest.raises(SettingsError, match="training_shard_jobs of at least 250"):
        Settings(cluster_name="train", training_fleet_jobs=1_000_000, training_shard_jobs=10)
    assert (
        Settings(cluster_name="train", storage_fleet_volumes=10_000_000).storage_shard_volumes
        == 20_000
    )
