"""Shards are contiguous slices; a shard fits its share of the function's time limit."""

import pytest

from lambdas.shared.shards import FanOut, per_shard, shards


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
