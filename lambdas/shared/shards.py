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
from typing import Final, TypeVar

from lambdas.shared.metric_fetcher import MAX_DATAPOINTS_PER_CALL

T = TypeVar("T")
#: "Maximum input or output size for a task, state, or execution: 256 KiB of data as a UTF-8
#: encoded string. This quota affects tasks (activity, Lambda function, or integrated
#: service), state or execution output, and input data when scheduling a task, entering a
#: state, or starting an execution." (Step Functions Developer Guide, "Step Functions service
#: quotas", https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html); a state
#: over it fails the execution with ``States.DataLimitExceeded``. So what the fleet state
#: machine's states pass is bounded whatever the fleet: the shards' items (``MAX_SHARDS``),
#: and counts, never a resource per volume or job (those are in the report bucket).
STATE_PAYLOAD_MAX_BYTES: Final = 256 * 1024
#: The most shards one Distributed Map run is planned with: their items are in the plan's
#: output, the Map's and the merge's input, and each shard's result in the Map's results,
#: and this many leave room under the quota (tests/unit/lambdas/shared/test_shards.py holds
#: every state to it at the largest shard size the settings allow).
MAX_SHARDS: Final = 4_000
#: One function run lasts at most 900 s; a shard is sized to use at most this share of it.
LAMBDA_LIMIT_S = 900.0
SAFETY_SHARE = 0.5

#: The defaults of the shard and lookback settings (cdk/settings.py), which are also the
#: handlers' fallbacks when their environment lacks them: one place, that cdk imports.
STORAGE_SHARD_VOLUMES: Final = 20_000
TRAINING_SHARD_JOBS: Final = 2_000
LOOKBACK_DAYS: Final = 14
#: Lambda gives a function a full vCPU at 1,769 MB and CPU in proportion to memory below it
#: (https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html); an analysis is
#: one Python thread, so more than one vCPU does not speed it up.
FULL_VCPU_MB: Final = 1769
#: Shards running at once (the Distributed Map's MaxConcurrency, cdk/constructs/fleet_map.py):
#: CloudWatch's GetMetricData rate is shared by the account.
MAX_CONCURRENCY: Final = 10
#: Assumed seconds CloudWatch takes to answer one full GetMetricData call (100,800 points).
CALL_S: Final = 1.0
#: A function's memory is at least this many times the peak RSS of a run of the default
#: shard, rounded up to a multiple of MEMORY_STEP_MB.
MEMORY_HEADROOM: Final = 1.5
MEMORY_STEP_MB: Final = 512


def shards(items: Sequence[T], per_shard: int) -> list[Sequence[T]]:
    if per_shard < 1:
        raise ValueError(f"a shard holds at least one item, not {per_shard}")
    return [items[i : i + per_shard] for i in range(0, len(items), per_shard)]


class TooManyShardsError(ValueError):
    """More shards than a state machine's states can carry; the message names the fix."""


def map_items(total: int, per_shard: int) -> list[dict[str, int]]:
    """The Distributed Map's items for ``total`` staged items: each shard's index, first item
    and count, at most ``MAX_SHARDS`` of them (Step Functions passes at most 256 KiB between
    states); more is refused before any shard runs, naming the shard size that fits."""
    count = math.ceil(total / per_shard) if per_shard > 0 else 0
    if count > MAX_SHARDS:
        raise TooManyShardsError(
            f"{total:,} items in shards of {per_shard:,} make {count:,} shards, more than the "
            f"{MAX_SHARDS:,} a Distributed Map run passes under Step Functions' 256 KiB: use "
            f"shards of at least {math.ceil(total / MAX_SHARDS):,}"
        )
    cut = shards(range(total), per_shard)
    return [{"index": i, "first": s[0], "count": len(s)} for i, s in enumerate(cut)]


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


@dataclass(frozen=True)
class ItemCost:
    """What one item (a volume, a job) costs per day of lookback, measured by its benchmark
    (benchmarks/storage_analyzer.py, benchmarks/training_analyzer.py: the floor plan through
    the real botocore client, on one core of the 2-core build machine, taken as one vCPU):
    CPU seconds, parsing included, and datapoints fetched (CloudWatch's share of the time)."""

    cpu_s_per_day: float
    datapoints_per_day: float


@dataclass(frozen=True)
class FunctionSize:
    """An analyzer function's memory and timeout, and what one of its items costs: how long a
    run of ``items`` over ``days`` of lookback takes, and so the most items a run (a shard,
    or the single function below the threshold) may be given."""

    memory_mb: int
    timeout_s: int
    item: ItemCost
    #: Peak RSS (MiB) of a run of the default shard over the default lookback, measured.
    peak_mib: float

    @property
    def vcpu(self) -> float:
        return min(1.0, self.memory_mb / FULL_VCPU_MB)

    def run_s(self, items: int, days: int) -> float:
        """Estimated wall seconds of one run: its CPU at the function's share of a vCPU, and
        CloudWatch's time to answer its GetMetricData calls."""
        per_item = (
            self.item.cpu_s_per_day / self.vcpu
            + self.item.datapoints_per_day / MAX_DATAPOINTS_PER_CALL * CALL_S
        )
        return items * days * per_item

    @property
    def budget_s(self) -> float:
        """The share of the timeout a run may be estimated to take (the rest is margin)."""
        return self.timeout_s * SAFETY_SHARE

    def most_items(self, days: int) -> int:
        """The largest shard whose estimated run fits ``budget_s``."""
        return per_shard(self.run_s(1, days), budget_s=self.budget_s)


def memory_for(peak_mib: float) -> int:
    """The sizing rule: MEMORY_HEADROOM x the measured peak, up to a multiple of 512 MB."""
    return math.ceil(peak_mib * MEMORY_HEADROOM / MEMORY_STEP_MB) * MEMORY_STEP_MB


#: The storage analyzer: measured on 10,000 volumes x 14 days (benchmarks/storage_analyzer.py:
#: 38.8 s of CPU, 8,096,400 datapoints, 247 MiB peak; memory is bounded by a batch), and its
#: CPU per volume-day taken from the slowest 20,000-volume shard of benchmarks/fan_out.py
#: (112.3 s), the larger.
STORAGE: Final = FunctionSize(
    memory_mb=1024,
    timeout_s=900,
    item=ItemCost(cpu_s_per_day=4.0e-4, datapoints_per_day=58.0),
    peak_mib=247.0,
)
#: The training analyzer: measured on 1,000 jobs x 14 days (benchmarks/training_analyzer.py:
#: 9.6 s of CPU, 3,028,000 datapoints); its peak at the default shard of 2,000 jobs is 457 MiB
#: in that benchmark and about 530 MiB in a user's trial: the larger sizes it.
TRAINING: Final = FunctionSize(
    memory_mb=memory_for(530.0),
    timeout_s=600,
    item=ItemCost(cpu_s_per_day=6.9e-4, datapoints_per_day=216.0),
    peak_mib=530.0,
)
