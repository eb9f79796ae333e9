"""Shard and merge: how a fleet too large for one function run is cut into shards, one
function invocation each (Step Functions Distributed Map, cdk/constructs/fleet_map.py), and
how their results become the day's one findings file.

Shards are contiguous slices of the resources in the order one run analyzes them, and parts
are merged in shard order (lambdas/shared/shard_parts.py ``add_run``, the one merge), so the
merged findings are the single run's, in the same order.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")
#: One function run lasts at most 900 s; a shard is sized to use at most this share of it.
LAMBDA_LIMIT_S = 900.0
SAFETY_SHARE = 0.5


def shards(items: Sequence[T], per_shard: int) -> list[Sequence[T]]:
    if per_shard < 1:
        raise ValueError(f"a shard holds at least one item, not {per_shard}")
    return [items[i : i + per_shard] for i in range(0, len(items), per_shard)]


def per_shard(seconds_per_item: float, *, budget_s: float = LAMBDA_LIMIT_S * SAFETY_SHARE) -> int:
    """The most items one invocation analyzes within its share of the 15-minute limit."""
    if seconds_per_item <= 0:
        raise ValueError(f"an item takes some time, not {seconds_per_item} s")
    return max(1, math.floor(budget_s / seconds_per_item))


@dataclass(frozen=True)
class FanOut:
    """What a Distributed Map run of ``items`` costs in wall time, simulated: shards run
    ``concurrency`` at a time, each as long as its items take, plus the plan and the merge."""

    items: int
    per_shard: int
    concurrency: int
    seconds_per_item: float
    fixed_s: float = 5.0  # plan + merge + Step Functions' own latency per wave

    @property
    def shards(self) -> int:
        return math.ceil(self.items / self.per_shard)

    @property
    def waves(self) -> int:
        return math.ceil(self.shards / self.concurrency)

    @property
    def wall_s(self) -> float:
        shard_s = min(self.items, self.per_shard) * self.seconds_per_item
        return self.waves * (shard_s + self.fixed_s) + self.fixed_s
