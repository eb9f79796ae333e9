"""A serving workload's day hour by hour: the replicas each hour needed against those it held,
and whether a fixed replica count was wrong both ways in one day. Pure.

The rule (docs/analyzers.md, "Inference serving"):

- An hour is **saturated** when a replica had more than ``waiting_requests`` requests waiting
  (the ``serving_waiting_requests`` alarm's line).
- An hour **needs** the replicas that hold its summed KV-cache use at ``kv_target_percent``
  each (at least one): the day's sizing rule (analysis.py ``replicas_needed``), per hour. A
  saturated hour's KV cache is full, which understates what it needed, so it needs at least one
  replica more than served in it.
- A replica **served nothing** in an hour when it held its place (it sent its series) with no
  KV-cache use and no request waiting.
- The day calls for an autoscaler when it had saturated hours and also either unsaturated hours
  that held more replicas than they needed, or a replica that served nothing while requests
  waited at the others: a fixed count that is too small at the peaks and too large off-peak.
  Adding replicas would pay for the off-peak excess all day; removing one would deepen the
  peaks' queue.
"""

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lambdas.training_analyzer.serving.keys import ModelKey, ReplicaKey

#: (namespace, workload, kind): what the serving findings are per.
WorkloadName = tuple[str, str, str]


def replicas_needed(replicas: int, kv_percent: float, target_percent: float) -> int:
    """Replicas that would hold a KV-cache use of ``kv_percent`` on each of ``replicas`` at the
    target, at least one."""
    return max(1, math.ceil(round(replicas * kv_percent / target_percent, 6)))


@dataclass(frozen=True)
class WorkloadHour:
    """One hour of a workload across its models' replicas."""

    hour: int
    #: The replicas that sent their series in the hour.
    replicas: int
    #: Their KV-cache use summed, percent of one replica's cache.
    kv_percent: float
    #: The most requests waiting at one of them.
    max_waiting: float
    #: Those that served nothing (no KV-cache use, nothing waiting).
    idle: tuple[str, ...]


def _name(model: ModelKey) -> WorkloadName:
    return (model.namespace, model.workload, model.kind)


def workload_hours(
    replicas: Mapping[ModelKey, Mapping[int, set[str]]],
    kv_cache: Mapping[ReplicaKey, Mapping[int, float]],
    waiting: Mapping[ReplicaKey, Mapping[int, float]],
) -> dict[WorkloadName, list[WorkloadHour]]:
    """Each workload's hours in which every replica that sent its series sent a KV-cache
    reading (a server without the gauge, or a gap, leaves the hour out: it cannot be sized).
    ``kv_cache`` is a fraction, as vLLM sends it; a replica's models share its cache, so their
    uses add up."""
    pods: dict[WorkloadName, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for model, sent in replicas.items():
        for hour, held in sent.items():
            pods[_name(model)][hour] |= held
    kv: dict[tuple[WorkloadName, int, str], float] = defaultdict(float)
    for replica, used in kv_cache.items():
        for hour, value in used.items():
            kv[(_name(replica.model), hour, replica.pod)] += 100 * value
    queue: dict[tuple[WorkloadName, int, str], float] = defaultdict(float)
    for replica, queued in waiting.items():
        for hour, value in queued.items():
            key = (_name(replica.model), hour, replica.pod)
            queue[key] = max(queue[key], value)
    found: dict[WorkloadName, list[WorkloadHour]] = {}
    for name, hours in sorted(pods.items()):
        rows = []
        for hour, held in sorted(hours.items()):
            keys = [(name, hour, pod) for pod in sorted(held)]
            if not held or any(k not in kv for k in keys):
                continue
            rows.append(
                WorkloadHour(
                    hour=hour,
                    replicas=len(held),
                    kv_percent=sum(kv[k] for k in keys),
                    max_waiting=max(queue.get(k, 0.0) for k in keys),
                    idle=tuple(k[2] for k in keys if kv[k] == 0 and queue.get(k, 0.0) == 0),
                )
            )
        if rows:
            found[name] = rows
    return found


@dataclass(frozen=True)
class ScalingDay:
    """What a workload's hours needed against what they held."""

    #: Replicas each hour needed, by hour.
    needed: dict[int, int]
    saturated_hours: int
    #: Unsaturated hours that held more replicas than they needed, and those replica-hours.
    spare_hours: int
    spare_replica_hours: int
    #: Of them, those of replicas that served nothing (the idle GPU finding prices those).
    spare_idle_replica_hours: int
    #: Replica-hours the saturated hours lacked.
    lacking_replica_hours: int
    #: Replicas that served nothing while requests waited at the others, and their hours.
    idle_while_saturated: tuple[str, ...]
    idle_while_saturated_hours: int
    max_waiting: float
    #: Replica-hours the hours held (the GPU-hours' denominator).
    held_replica_hours: int

    @property
    def fewest(self) -> int:
        return min(self.needed.values())

    @property
    def most(self) -> int:
        return max(self.needed.values())

    @property
    def calls_for_autoscaling(self) -> bool:
        """Saturated hours, and spare replicas in others or one idle while others queued, with
        hours that needed different counts (a day saturated throughout needs more replicas,
        not an autoscaler)."""
        spare = self.spare_replica_hours > 0 or bool(self.idle_while_saturated)
        return self.saturated_hours > 0 and spare and self.most > self.fewest


def scaling_day(
    hours: Sequence[WorkloadHour], *, waiting_requests: float, kv_target_percent: float
) -> ScalingDay | None:
    """The day's hours sized against what they held; None without an hour to size."""
    needed: dict[int, int] = {}
    saturated = spare_hours = spare = spare_idle = lacking = idle_hours = 0
    idle: set[str] = set()
    for h in hours:
        need = replicas_needed(1, h.kv_percent, kv_target_percent)
        if h.max_waiting > waiting_requests:
            need = max(need, h.replicas - len(h.idle) + 1)
            saturated += 1
            lacking += max(0, need - h.replicas)
            idle |= set(h.idle)
            idle_hours += len(h.idle)
        elif h.replicas > need:
            spare_hours += 1
            spare += h.replicas - need
            spare_idle += min(len(h.idle), h.replicas - need)
        needed[h.hour] = need
    if not needed:
        return None
    return ScalingDay(
        needed=needed,
        saturated_hours=saturated,
        spare_hours=spare_hours,
        spare_replica_hours=spare,
        spare_idle_replica_hours=spare_idle,
        lacking_replica_hours=lacking,
        idle_while_saturated=tuple(sorted(idle)),
        idle_while_saturated_hours=idle_hours,
        max_waiting=max(h.max_waiting for h in hours),
        held_replica_hours=sum(h.replicas for h in hours),
    )


@dataclass(frozen=True)
class ScalingCost:
    """A day's autoscaling priced, in one place: the figures its finding's text states, its
    evidence holds and its estimate is. ``month`` is a month of one replica-hour a day."""

    day: ScalingDay
    gpus_per_replica: float
    month: float

    @property
    def freed_gpu_hours(self) -> float:
        """GPU-hours a day that scaling each unsaturated hour to its need frees."""
        return self.day.spare_replica_hours * self.gpus_per_replica

    @property
    def freed_monthly(self) -> float:
        return self.day.spare_replica_hours * self.month

    @property
    def idle_monthly(self) -> float:
        """The freed hours' share of replicas that served nothing: the idle GPU finding's
        (``gpu_held_not_working``) to price, never this finding's."""
        return self.day.spare_idle_replica_hours * self.month

    @property
    def waste_gpu_hours(self) -> float:
        """GPU-hours a day of replicas that served more than the hour needed: its waste."""
        busy = self.day.spare_replica_hours - self.day.spare_idle_replica_hours
        return busy * self.gpus_per_replica

    @property
    def waste_monthly(self) -> float:
        return self.freed_monthly - self.idle_monthly

    @property
    def peak_monthly(self) -> float:
        """What the saturated hours' missing replicas would cost a month."""
        return self.day.lacking_replica_hours * self.month

    @property
    def net_monthly(self) -> float:
        """The freed hours less the peaks' missing ones: what autoscaling saves (below 0: what
        it costs more)."""
        return self.freed_monthly - self.peak_monthly
