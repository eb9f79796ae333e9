"""A day of inference serving, from the servers' readings and the day's GPU-hour attribution:
the serving table's rows (lambdas/shared/serving_table.py) and the findings a person acts on.
Pure: the reads are promql.py's.

A row is one model of one workload. A workload's replicas serve all its models, so its
GPU-hours are split between them by their generated tokens (evenly where none generated any),
and its findings are the workload's, naming its models.

Sizing, both ways, is one rule at the current per-replica load: the replicas a workload needs
keep the day's mean KV-cache use at ``kv_target_percent`` (``replicas x mean / target``,
rounded up, at least one). KV-cache use is what a replica runs out of as its concurrent
sequences grow (vLLM preempts requests "when KV cache space is insufficient to handle all batched
requests": docs.vllm.ai, Optimization and Tuning), so it is the replica's load.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Final

from lambdas.shared.findings import Finding, Kind, Severity
from lambdas.shared.serving_advice import autoscaler
from lambdas.shared.serving_table import ServingRow
from lambdas.shared.thresholds import (
    LOW_POWER_PERCENT,
    SERVING_KV_LOW_PERCENT,
    SERVING_KV_TARGET_PERCENT,
    SERVING_PREEMPTION_PERCENT,
    SERVING_WAITING_REQUESTS,
)
from lambdas.shared.workload_resource import workload_resource
from lambdas.training_analyzer.gpu_hours.by_workload import WorkloadGpu
from lambdas.training_analyzer.gpu_hours.findings import ANALYZER, HOURS_PER_MONTH
from lambdas.training_analyzer.serving.autoscaling import (
    ScalingCost,
    ScalingDay,
    WorkloadHour,
    WorkloadName,
    replicas_needed,
    scaling_day,
)
from lambdas.training_analyzer.serving.keys import ModelKey, ReplicaKey

#: A month of days, as a month of hours prices a finding (730 h).
DAYS_PER_MONTH: Final = HOURS_PER_MONTH / 24


@dataclass
class ServingReads:
    """A day's readings. Counters are the day's increase; ``kv_cache`` the day's mean as vLLM
    sends it (a fraction, 0-1); ``waiting`` the day's most at the replica."""

    requests: dict[ReplicaKey, float] = field(default_factory=dict)
    prompt_tokens: dict[ReplicaKey, float] = field(default_factory=dict)
    generation_tokens: dict[ReplicaKey, float] = field(default_factory=dict)
    preemptions: dict[ReplicaKey, float] = field(default_factory=dict)
    kv_cache: dict[ReplicaKey, float] = field(default_factory=dict)
    waiting: dict[ReplicaKey, float] = field(default_factory=dict)
    #: The day's p99 time to first token per model of a workload, seconds.
    ttft_p99_s: dict[ModelKey, float] = field(default_factory=dict)
    #: The most replicas that served a model of a workload in one hour of the day.
    replicas: dict[ModelKey, int] = field(default_factory=dict)
    #: The replicas (pods) that sent a model's series in each hour (epoch seconds of its start).
    hourly_replicas: dict[ModelKey, dict[int, set[str]]] = field(default_factory=dict)
    #: Each hour's mean KV-cache use (a fraction, as vLLM sends it) and most requests waiting.
    hourly_kv_cache: dict[ReplicaKey, dict[int, float]] = field(default_factory=dict)
    hourly_waiting: dict[ReplicaKey, dict[int, float]] = field(default_factory=dict)

    def counters(self) -> tuple[dict[ReplicaKey, float], ...]:
        return (self.requests, self.prompt_tokens, self.generation_tokens, self.preemptions)

    def models(self) -> set[ModelKey]:
        per_replica = (*self.counters(), self.kv_cache, self.waiting)
        found = {key.model for readings in per_replica for key in readings}
        return found | set(self.ttft_p99_s) | set(self.replicas)


@dataclass(frozen=True)
class ServingThresholds:
    low_power_percent: float = LOW_POWER_PERCENT
    kv_low_percent: float = SERVING_KV_LOW_PERCENT
    kv_target_percent: float = SERVING_KV_TARGET_PERCENT
    waiting_requests: float = SERVING_WAITING_REQUESTS
    preemption_percent: float = SERVING_PREEMPTION_PERCENT


def _sum(readings: Mapping[ReplicaKey, float], model: ModelKey) -> float:
    return sum(v for k, v in readings.items() if k.model == model)


def _per_replica(readings: Mapping[ReplicaKey, float], model: ModelKey) -> list[float]:
    return [v for k, v in readings.items() if k.model == model]


def serving_rows(
    reads: ServingReads,
    workloads: Mapping[tuple[str, str], WorkloadGpu],
    gpu_hour_usd: float,
) -> list[ServingRow]:
    """The day's rows, one per model of a workload, priced at ``gpu_hour_usd``."""
    models = sorted(reads.models())
    tokens = {m: _sum(reads.generation_tokens, m) for m in models}
    by_workload: dict[tuple[str, str], list[ModelKey]] = defaultdict(list)
    for m in models:
        by_workload[(m.namespace, m.workload)].append(m)
    rows = []
    for m in models:
        siblings = by_workload[(m.namespace, m.workload)]
        generated = sum(tokens[s] for s in siblings)
        share = tokens[m] / generated if generated > 0 else 1 / len(siblings)
        gpu = workloads.get((m.namespace, m.workload))
        gpu_hours = gpu.gpu_hours * share if gpu else 0.0
        kv = _per_replica(reads.kv_cache, m)
        waiting = _per_replica(reads.waiting, m)
        pods = {k.pod for readings in (*reads.counters(), reads.kv_cache) for k in readings
                if k.model == m}  # fmt: skip
        rows.append(
            ServingRow(
                namespace=m.namespace,
                workload=m.workload,
                kind=m.kind,
                model=m.model,
                replicas=max(reads.replicas.get(m, 0), 0) or len(pods),
                gpu_hours=round(gpu_hours, 4),
                cost_usd=round(gpu_hours * gpu_hour_usd, 2),
                requests=round(_sum(reads.requests, m), 1),
                prompt_tokens=round(_sum(reads.prompt_tokens, m), 1),
                generation_tokens=round(tokens[m], 1),
                mean_power_percent=None
                if gpu is None or gpu.mean_power_percent is None
                else round(gpu.mean_power_percent, 2),
                mean_kv_cache_percent=round(100 * sum(kv) / len(kv), 2) if kv else None,
                max_waiting=max(waiting) if waiting else None,
                preemptions=round(_sum(reads.preemptions, m), 1),
                ttft_p99_s=reads.ttft_p99_s.get(m),
            )
        )
    return rows


@dataclass(frozen=True)
class _Workload:
    """A workload's day across its models' rows."""

    namespace: str
    name: str
    kind: str
    models: tuple[str, ...]
    replicas: int
    gpu_hours: float
    requests: float
    generation_tokens: float
    preemptions: float
    mean_power_percent: float | None
    mean_kv_cache_percent: float | None
    max_waiting: float | None

    @property
    def resource(self) -> str:
        return workload_resource(self.namespace, self.name, self.kind)

    @property
    def replica_gpu_hours(self) -> float:
        """One replica's GPU-hours in the day, at the day's mean."""
        return self.gpu_hours / self.replicas if self.replicas else 0.0

    def evidence(self, day: date, gpu_hour_usd: float) -> dict[str, object]:
        return {
            "day": day.isoformat(),
            "namespace": self.namespace,
            "workload": self.name,
            "kind": self.kind,
            "models": list(self.models),
            "replicas": self.replicas,
            "gpu_hours": round(self.gpu_hours, 3),
            "gpu_hour_usd": gpu_hour_usd,
            "requests": round(self.requests),
            "generation_tokens": round(self.generation_tokens),
            "preemptions": round(self.preemptions),
            "mean_power_percent": self.mean_power_percent,
            "mean_kv_cache_percent": self.mean_kv_cache_percent,
            "max_waiting": self.max_waiting,
        }


def _workloads(rows: Iterable[ServingRow]) -> list[_Workload]:
    grouped: dict[tuple[str, str, str], list[ServingRow]] = defaultdict(list)
    for row in rows:
        grouped[(row.namespace, row.workload, row.kind)].append(row)
    found = []
    for (namespace, name, kind), group in sorted(grouped.items()):
        kv = [r.mean_kv_cache_percent for r in group if r.mean_kv_cache_percent is not None]
        waiting = [r.max_waiting for r in group if r.max_waiting is not None]
        found.append(
            _Workload(
                namespace=namespace,
                name=name,
                kind=kind,
                models=tuple(sorted(r.model for r in group)),
                replicas=max(r.replicas for r in group),
                gpu_hours=sum(r.gpu_hours for r in group),
                requests=sum(r.requests for r in group),
                generation_tokens=sum(r.generation_tokens for r in group),
                preemptions=sum(r.preemptions for r in group),
                mean_power_percent=group[0].mean_power_percent,
                # Its models share the replicas' cache: their uses add up.
                mean_kv_cache_percent=sum(kv) if kv else None,
                max_waiting=max(waiting) if waiting else None,
            )
        )
    return found


def serving_findings(
    rows: Iterable[ServingRow],
    *,
    day: date,
    gpu_hour_usd: float,
    thresholds: ServingThresholds = ServingThresholds(),
    hours: Mapping[WorkloadName, Sequence[WorkloadHour]] | None = None,
) -> list[Finding]:
    """One finding at most per workload of the day's rows: ``serving_overprovisioned``, or
    ``serving_autoscaling`` where its ``hours`` (autoscaling.py ``workload_hours``) were
    saturated at the peaks and over-provisioned off-peak, or else ``serving_saturated``. A
    workload's findings are read together: never "add replicas" for a day whose off-peak
    hours, or one of whose replicas, went unused."""
    findings = []
    for w in _workloads(rows):
        scaling = scaling_day(
            (hours or {}).get((w.namespace, w.name, w.kind), ()),
            waiting_requests=thresholds.waiting_requests,
            kv_target_percent=thresholds.kv_target_percent,
        )
        finding = _overprovisioned(w, day, gpu_hour_usd, thresholds)
        if finding is None and scaling is not None and scaling.calls_for_autoscaling:
            finding = _autoscaling(w, scaling, day, gpu_hour_usd, thresholds)
        if finding is None:
            idle = scaling.idle_while_saturated if scaling is not None else ()
            finding = _saturated(w, day, gpu_hour_usd, thresholds, idle)
        if finding is not None:
            findings.append(finding)
    return findings


def _autoscaling(
    w: _Workload, s: ScalingDay, day: date, price: float, t: ServingThresholds
) -> Finding:
    """Saturated at the peaks and over-provisioned off-peak: priced as the GPU-hours a day
    that scaling to each hour's need would free, and what the peaks' missing replicas cost."""
    # A replica's GPUs, from the attribution's GPU-hours over the replica-hours the series
    # showed (0 where its GPUs' series were not read: the dollars are then unknown).
    gpus = w.gpu_hours / s.held_replica_hours if s.held_replica_hours else 0.0
    cost = ScalingCost(s, gpus, gpus * price * DAYS_PER_MONTH)
    on = f"{w.name} ({w.kind}) in {w.namespace} on {day}"
    idle = ""
    if s.idle_while_saturated:
        n = len(s.idle_while_saturated)
        idle = (
            f"; {n} of its replicas served nothing in {s.idle_while_saturated_hours} "
            "replica-hours while requests waited at the others"
        )
    summary = (
        f"{on} held up to {w.replicas} replicas while its hours needed {s.fewest} to "
        f"{s.most}: saturated in {s.saturated_hours} hour{'s' if s.saturated_hours != 1 else ''}"
        f" (up to {s.max_waiting:.0f} requests waiting at a replica), "
        f"{s.spare_replica_hours} replica-hours more than needed in {s.spare_hours} other "
        f"hour{'s' if s.spare_hours != 1 else ''}{idle}"
    )
    route = _route(s.idle_while_saturated)
    priced = (
        f"at the day's load that frees {cost.freed_gpu_hours:.0f} GPU-hours a day off-peak "
        f"(about ${cost.freed_monthly:,.0f} a month){_freed_split(cost)} and gives its saturated "
        f"hours the {s.lacking_replica_hours} replica-hours they lacked (about "
        f"${cost.peak_monthly:,.0f} a month): {_net(cost.net_monthly)}"
        if gpus > 0
        else "its dollars unknown: no GPU-hours were attributed to its replicas"
    )
    return Finding(
        kind=Kind.SERVING_AUTOSCALING,
        resource=w.resource,
        severity=Severity.WARNING,
        summary=summary,
        evidence={
            **w.evidence(day, price),
            "kv_target_percent": t.kv_target_percent,
            "waiting_requests_line": t.waiting_requests,
            "replicas_needed_by_hour": {
                datetime.fromtimestamp(h, UTC).strftime("%H:00"): n
                for h, n in sorted(s.needed.items())
            },
            "replicas_needed_fewest": s.fewest,
            "replicas_needed_most": s.most,
            "saturated_hours": s.saturated_hours,
            "spare_hours": s.spare_hours,
            "spare_replica_hours": s.spare_replica_hours,
            "spare_idle_replica_hours": s.spare_idle_replica_hours,
            "lacking_replica_hours": s.lacking_replica_hours,
            "idle_while_saturated": list(s.idle_while_saturated),
            "idle_while_saturated_replica_hours": s.idle_while_saturated_hours,
            "gpus_per_replica": round(gpus, 3),
            "gpu_hours_saved_per_day": round(cost.freed_gpu_hours, 3),
            "monthly_saving_usd": round(cost.freed_monthly, 2),
            "monthly_cost_of_peak_replicas_usd": round(cost.peak_monthly, 2),
            "monthly_net_saving_usd": round(cost.net_monthly, 2),
            # Its waste: replicas that served more than the hour needed (the estimate).
            "waste_gpu_hours_per_day": round(cost.waste_gpu_hours, 3),
        },
        recommendation=(
            f"{route}Autoscale {w.name} between {s.fewest} and {s.most} replicas with "
            f"{autoscaler(w.kind)} rather than a fixed count: {priced}. Adding replicas "
            "would pay for them off-peak too; removing one would deepen the peaks' queue."
        ),
        estimated_monthly_waste_usd=round(cost.waste_monthly, 2)
        if cost.waste_monthly > 0
        else None,
        analyzer=ANALYZER,
        related=(f"{Kind.GPU_HELD_NOT_WORKING} {w.resource}",) if s.idle_while_saturated else (),
    )


def _freed_split(cost: ScalingCost) -> str:
    """The freed hours' two parts, where replicas that served nothing had some of them: theirs
    priced by the idle GPU finding, the rest this finding's waste (its estimate)."""
    if not cost.idle_monthly:
        return ", all of it this finding's waste,"
    return (
        f", ${cost.waste_monthly:,.0f} a month of it replicas that served more than the hour "
        f"needed (this finding's waste; the other ${cost.idle_monthly:,.0f} replicas that "
        f"served nothing, priced as held without work by {Kind.GPU_HELD_NOT_WORKING}),"
    )


def _net(monthly: float) -> str:
    if monthly >= 0:
        return f"about ${monthly:,.0f} a month saved net"
    return f"about ${-monthly:,.0f} a month more net, for the peaks' queue"


def _overprovisioned(w: _Workload, day: date, price: float, t: ServingThresholds) -> Finding | None:
    """Low power, a low KV cache and nothing ever waiting, all three measured."""
    if (
        w.mean_power_percent is None
        or w.mean_kv_cache_percent is None
        or w.max_waiting is None
        or w.gpu_hours <= 0
        or w.mean_power_percent >= t.low_power_percent
        or w.mean_kv_cache_percent >= t.kv_low_percent
        or w.max_waiting > 0
    ):
        return None
    needed = replicas_needed(w.replicas, w.mean_kv_cache_percent, t.kv_target_percent)
    spare = w.replicas - needed
    monthly = spare * w.replica_gpu_hours * price * DAYS_PER_MONTH
    on = f"{w.name} ({w.kind}) in {w.namespace} served {', '.join(w.models)} on {day}"
    state = (
        f"its GPUs at {w.mean_power_percent:.0f}% of their power limit, its KV cache "
        f"{w.mean_kv_cache_percent:.0f}% used on average and no request waiting"
    )
    if spare > 0:
        summary = (
            f"{on} on {w.replicas} replicas, {state}: {spare} of them could go "
            f"(${monthly:,.0f} a month)"
        )
        recommendation = (
            f"Scale {w.name} to {needed} replica{'s' if needed > 1 else ''} (or let an "
            f"autoscaler on its queue do it): at the day's load that holds the KV cache near "
            f"{t.kv_target_percent:.0f}%. Check the day was a usual one first."
        )
    else:
        summary = f"{on} on {w.replicas} replica, {state}: a smaller GPU would serve it"
        recommendation = (
            "Serve it on a smaller or cheaper GPU, or share the GPU with another model; its "
            "saving depends on the GPU chosen (lambdas/training_analyzer/gpu_prices.py)."
        )
    return Finding(
        kind=Kind.SERVING_OVERPROVISIONED,
        resource=w.resource,
        severity=Severity.WARNING if spare > 0 else Severity.INFO,
        summary=summary,
        evidence={
            **w.evidence(day, price),
            "replicas_needed": needed,
            "kv_target_percent": t.kv_target_percent,
            "replica_gpu_hours_per_day": round(w.replica_gpu_hours, 3),
        },
        recommendation=recommendation,
        estimated_monthly_waste_usd=monthly if spare > 0 else None,
        analyzer=ANALYZER,
    )


def _route(idle: Sequence[str]) -> str:
    """The first thing to do where replicas served nothing while the others queued."""
    if not idle:
        return ""
    return (
        f"First find why {', '.join(idle)} got no requests while the others queued (its "
        "readiness, the router's or Service's endpoints): it is paid for. "
    )


def _saturated(
    w: _Workload, day: date, price: float, t: ServingThresholds, idle: Sequence[str] = ()
) -> Finding | None:
    """Requests waiting over the line, or preempted over the share of requests; ``idle``: its
    replicas that served nothing while requests waited at the others, named first."""
    preempted = 100 * w.preemptions / w.requests if w.requests > 0 else 0.0
    waited = w.max_waiting is not None and w.max_waiting > t.waiting_requests
    if not waited and preempted < t.preemption_percent:
        return None
    needed = (
        replicas_needed(w.replicas, w.mean_kv_cache_percent, t.kv_target_percent)
        if w.mean_kv_cache_percent is not None
        else w.replicas + 1
    )
    add = max(1, needed - w.replicas)
    monthly = add * w.replica_gpu_hours * price * DAYS_PER_MONTH
    # No GPU-hour attributed (its GPUs' series unread): the cost is unknown, not nothing.
    cost = (
        f"about ${monthly:,.0f} a month at the day's GPU-hours per replica"
        if w.replica_gpu_hours > 0
        else "their cost unknown: no GPU-hours were attributed to its replicas"
    )
    why = []
    if waited:
        why.append(f"up to {w.max_waiting:.0f} requests waiting at a replica")
    if preempted >= t.preemption_percent:
        why.append(f"{w.preemptions:,.0f} preemptions ({preempted:.1f}% of its requests)")
    return Finding(
        kind=Kind.SERVING_SATURATED,
        resource=w.resource,
        severity=Severity.WARNING,
        summary=(
            f"{w.name} ({w.kind}) in {w.namespace} was saturated on {day}: "
            f"{' and '.join(why)} on {w.replicas} replica{'s' if w.replicas != 1 else ''}"
        ),
        evidence={
            **w.evidence(day, price),
            "preempted_percent": round(preempted, 2),
            "replicas_to_add": add,
            "monthly_cost_of_added_usd": round(monthly, 2),
        },
        recommendation=(
            f"{_route(idle)}{'Then add' if idle else 'Add'} {add} replica{'s' if add > 1 else ''}"
            f" ({cost}), or give each replica more KV "
            "cache: vLLM's own advice "
            "for frequent preemptions is a larger gpu_memory_utilization, a smaller "
            "max_num_seqs or max_num_batched_tokens, or a larger tensor_parallel_size "
            "(docs.vllm.ai, Optimization and Tuning, Preemption)."
        ),
        analyzer=ANALYZER,
    )
