"""Shards are contiguous slices; a shard fits its share of the function's time limit; the
handlers fall back to the settings' defaults."""

from typing import Any

import pytest

from cdk.settings import Settings
from lambdas.shared.shards import FanOut, per_shard, shards
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
    assert seen["per_shard"] == getattr(Settings(), setting) > 1_000
    if "start" in seen:
        assert seen["end"] - seen["start"] == Settings().lookback_days * 86_400
