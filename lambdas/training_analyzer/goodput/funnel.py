"""The GPU-hour funnel: of the GPU-hours paid for, how many pods asked for, how many of those
did work, and how many of those advanced a model or served tokens. Pure: plain data in, one
JSON-ready document out, for the fleet, each namespace and each workload.

Stages, each in GPU-hours and in dollars at the one GPU-hour price (lambdas/training_analyzer/
gpu_prices.py, the gpu_hour_price_usd setting):

- **paid**: the GPUs of the cluster's GPU nodes times the hours they ran (``NodeCapacity``:
  Container Insights' ``node_gpu_limit`` in Classic, Kube State Metrics'
  ``kube_node_status_capacity{resource="nvidia_com_gpu"}`` in OTel mode; goodput/capacity.py);
- **allocated**: the GPU-hours pods held (``Workload.allocated``: the GPU-hour attribution's
  held hours of every class, gpu_hours/attribution.py): a pod's ``pod_gpu_*`` series (its DCGM
  samples labelled with it, in OTel mode) exist for exactly the GPUs the device plugin gave it
  for its ``nvidia.com/gpu`` request, while it runs;
- **active**: the allocated GPU-hours doing work (``Workload.active``: the attribution's held
  and working class: power over the low-power threshold and SM activity over its threshold, or
  an hour its training emitter reported steps in);
- **productive**: training, the active GPU-hours spent on steps that were kept; inference, the
  active GPU-hours that served tokens (``Workload.productive``, with what took the rest of its
  active hours by badput category in ``Workload.badput``; None where no signal says: a
  notebook, a job with no emitter).

The stages nest: productive <= active <= allocated <= paid, each workload and the fleet. An
input that breaks the nesting (a pod's hold counted on capacity no node reported) is cut to the
stage above and the cut is reported under ``clamped``, never silently dropped. Each drop is
named: paid but not allocated (capacity no pod asked for) by node group or instance type;
allocated but not active (held and idle, or held on a lost GPU) by namespace and workload;
active but not productive by badput category.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Final

STAGES: Final = ("paid", "allocated", "active", "productive")
#: The drop from each stage to the next, by name.
DROPS: Final = {
    "not_allocated": ("paid", "allocated"),
    "held_not_active": ("allocated", "active"),
    "active_not_productive": ("active", "productive"),
}
#: The badput of active GPU-hours with no productivity signal (no emitter steps, no tokens).
NO_SIGNAL: Final = "no_step_or_token_signal"
#: A node whose group is not known.
UNKNOWN_GROUP: Final = "(unknown)"
#: Rounding of every GPU-hour figure (and 2 places for dollars).
PLACES: Final = 4
#: The badput a job's goodput names in time no step ran (its GPUs idle by power, as a rule):
#: a workload's held-but-not-active GPU-hours are taken from these first (``from_goodput``).
#: Lists the names of lambdas/training_analyzer/goodput/jobs.py ``Badput``.
NO_STEP_BADPUT: Final = ("held_no_steps", "hung", "startup", "recovery")
#: The badput of a job's pods pending: GPU-time waited for, never held, so in no stage.
NOT_HELD_BADPUT: Final = "waiting_for_gpus"


@dataclass(frozen=True, kw_only=True)
class NodeCapacity:
    """A GPU node's paid GPU-hours in the window: its GPUs times the hours it ran."""

    node: str
    gpu_hours: float
    #: Its instance type (``node.kubernetes.io/instance-type``, Classic's ``InstanceType``).
    instance_type: str = ""
    #: Its managed node group or Karpenter NodePool, where known (OTel mode's node labels):
    #: its group where its instance type is unknown.
    node_group: str = ""

    @property
    def group(self) -> str:
        """What its capacity is told by: its instance type (both modes know it), else its
        node group."""
        return self.instance_type or self.node_group or UNKNOWN_GROUP


@dataclass(frozen=True, kw_only=True)
class Workload:
    """One workload's stages below paid (GPU-hours)."""

    namespace: str
    workload: str
    kind: str = ""
    allocated: float
    active: float
    #: Held GPU-hours on a lost or faulted GPU (part of allocated, never active).
    faulted: float = 0.0
    #: None: no signal says how much of its active time was productive.
    productive: float | None = None
    #: Active but not productive GPU-hours by badput category (data loading, checkpoint save,
    #: ...): what ``productive`` left out, as far as a category names it.
    badput: Mapping[str, float] = field(default_factory=dict)
    #: Which signal gave ``productive`` ("training steps", "served tokens", a per-job goodput).
    productive_source: str = ""


def from_goodput(
    allocated: float, active: float, split: Mapping[str, float]
) -> tuple[float, dict[str, float]]:
    """A training workload's productive GPU-hours and its active-but-not-productive badput by
    category, from its job's goodput ``split`` (GPU-hours: ``productive`` and each badput, as
    ``JobGoodput.split.gpu_hours()`` names them). The job's goodput over the GPU-time it held
    (its pods' pending time left out: a pending pod holds no GPU) times the workload's
    ``allocated`` GPU-hours (the attribution's, the one count of a GPU-hour) is its productive
    stage, each badput's share of the same its GPU-hours; together they are ``allocated``. Its
    held-but-not-active hours (``allocated - active``) are then taken from the badput that
    names time with no step (``NO_STEP_BADPUT``, in proportion to their hours), then from the
    rest in proportion, so the categories left add up to ``active - productive``; where they
    run out, productive exceeds active and ``nest`` clips it and reports the cut."""
    held = {k: max(0.0, float(v)) for k, v in split.items() if k != NOT_HELD_BADPUT}
    total = sum(held.values())
    if total <= 0 or allocated <= 0:
        return 0.0, {}
    scale = allocated / total
    productive = held.pop("productive", 0.0) * scale
    badput = {k: v * scale for k, v in held.items() if v > 0}
    idle = max(0.0, allocated - max(0.0, active))
    for names in (NO_STEP_BADPUT, tuple(badput)):
        pool = sum(badput.get(k, 0.0) for k in names)
        taken = min(idle, pool)
        if taken > 0:
            for k in names:
                if k in badput:
                    badput[k] -= badput[k] * taken / pool
            idle -= taken
    return productive, {k: v for k, v in badput.items() if v > 1e-9}


def _money(hours: float, price: float) -> dict[str, float]:
    return {"gpu_hours": round(hours, PLACES), "usd": round(hours * price, 2)}


def _stages(values: Mapping[str, float], price: float) -> dict[str, dict[str, float]]:
    return {stage: _money(values[stage], price) for stage in STAGES if stage in values}


@dataclass
class _Nested:
    """A workload's stages after the nesting is enforced, and what was cut to enforce it."""

    allocated: float
    active: float
    faulted: float
    idle: float
    productive: float
    badput: dict[str, float]
    clamped: dict[str, float]


def nest(w: Workload) -> _Nested:
    """``w``'s stages nested: active at most allocated, productive at most active; badput
    categories fill the active-but-not-productive drop exactly (scaled down where they claim
    more, the rest named ``NO_SIGNAL``)."""
    clamped: dict[str, float] = {}
    allocated = max(0.0, w.allocated)
    active = max(0.0, w.active)
    if active > allocated:
        clamped["active"] = active - allocated
        active = allocated
    faulted = min(max(0.0, w.faulted), allocated - active)
    productive = 0.0 if w.productive is None else max(0.0, w.productive)
    if productive > active:
        clamped["productive"] = productive - active
        productive = active
    drop = active - productive
    named = {k: max(0.0, v) for k, v in w.badput.items() if v > 0}
    total = sum(named.values())
    if total > drop > 0:
        named = {k: v * drop / total for k, v in named.items()}
    elif total > drop:
        named = {}
    rest = drop - sum(named.values())
    if rest > 1e-9:
        named[NO_SIGNAL] = named.get(NO_SIGNAL, 0.0) + rest
    return _Nested(
        allocated=allocated,
        active=active,
        faulted=faulted,
        idle=allocated - active - faulted,
        productive=productive,
        badput=named,
        clamped=clamped,
    )


def funnel(
    capacity: Iterable[NodeCapacity],
    workloads: Iterable[Workload],
    *,
    gpu_hour_usd: float,
    held_by_node: Mapping[str, float] | None = None,
    not_held: float | None = None,
) -> dict[str, Any]:
    """The funnel of a window. ``held_by_node`` (the attribution's held GPU-hours per node)
    splits the capacity no pod asked for by node group; without it, the drop is the fleet's
    only. ``not_held`` (the attribution's not-held class: GPU-hours no pod held on GPUs that
    were not lost) splits the same drop into those and the rest (``lost_or_unseen``: lost or
    faulted GPUs no pod held, and capacity the exporter saw no GPU-hour of)."""
    price = gpu_hour_usd
    nodes = list(capacity)
    paid = sum(max(0.0, n.gpu_hours) for n in nodes)
    rows: list[dict[str, Any]] = []
    fleet = dict.fromkeys(("allocated", "active", "faulted", "idle", "productive"), 0.0)
    badput: dict[str, float] = defaultdict(float)
    clamped: dict[str, float] = defaultdict(float)
    namespaces: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for w in sorted(workloads, key=lambda w: (w.namespace, w.workload)):
        n = nest(w)
        for stage in fleet:
            fleet[stage] += getattr(n, stage)
            namespaces[w.namespace][stage] += getattr(n, stage)
        for category, hours in n.badput.items():
            badput[category] += hours
        for stage, hours in n.clamped.items():
            clamped[stage] += hours
        rows.append(
            {
                "namespace": w.namespace,
                "workload": w.workload,
                "kind": w.kind,
                **_stages(vars(n), price),
                "held_idle": _money(n.idle, price),
                "held_faulted": _money(n.faulted, price),
                "badput": {k: _money(v, price) for k, v in sorted(n.badput.items())},
                "productive_source": w.productive_source if w.productive is not None else "",
            }
        )
    if fleet["allocated"] > paid:
        clamped["allocated"] += fleet["allocated"] - paid
    paid_shown = max(paid, 0.0)
    allocated = min(fleet["allocated"], paid_shown)
    stages = {
        "paid": paid_shown,
        "allocated": allocated,
        "active": min(fleet["active"], allocated),
        "productive": min(fleet["productive"], fleet["active"], allocated),
    }
    return {
        "gpu_hour_usd": price,
        "fleet": _stages(stages, price),
        "drops": {
            "not_allocated": {
                **_money(stages["paid"] - stages["allocated"], price),
                "by_group": _unallocated(nodes, held_by_node, price),
                **_not_held(stages["paid"] - stages["allocated"], not_held, price),
            },
            "held_not_active": {
                **_money(stages["allocated"] - stages["active"], price),
                "held_idle": _money(fleet["idle"], price),
                "held_faulted": _money(fleet["faulted"], price),
                "by_workload": [
                    {k: r[k] for k in ("namespace", "workload", "held_idle", "held_faulted")}
                    for r in sorted(rows, key=_idle_first)
                    if r["held_idle"]["gpu_hours"] or r["held_faulted"]["gpu_hours"]
                ],
            },
            "active_not_productive": {
                **_money(stages["active"] - stages["productive"], price),
                "by_category": {
                    k: _money(v, price)
                    for k, v in sorted(badput.items(), key=lambda kv: (-kv[1], kv[0]))
                },
            },
        },
        "namespaces": [
            {"namespace": ns, **_stages(values, price)} for ns, values in sorted(namespaces.items())
        ],
        "workloads": rows,
        "capacity": [
            {"node": n.node, "group": n.group, "gpu_hours": round(n.gpu_hours, PLACES)}
            for n in sorted(nodes, key=lambda n: n.node)
        ],
        "clamped": {k: round(v, PLACES) for k, v in sorted(clamped.items()) if v > 1e-9},
    }


def _not_held(unallocated: float, not_held: float | None, price: float) -> dict[str, Any]:
    """The capacity no pod asked for as the attribution's not-held class and the rest."""
    if not_held is None:
        return {}
    held_none = min(max(0.0, not_held), unallocated)
    return {
        "not_held": _money(held_none, price),
        "lost_or_unseen": _money(unallocated - held_none, price),
    }


def _idle_first(row: Mapping[str, Any]) -> tuple[float, str, str]:
    lost = row["held_idle"]["gpu_hours"] + row["held_faulted"]["gpu_hours"]
    return (-lost, row["namespace"], row["workload"])


def _unallocated(
    nodes: Iterable[NodeCapacity], held: Mapping[str, float] | None, price: float
) -> dict[str, dict[str, float]]:
    """Capacity no pod asked for, by node group: each node's paid GPU-hours less those its
    pods held."""
    if held is None:
        return {}
    groups: dict[str, float] = defaultdict(float)
    for n in nodes:
        groups[n.group] += max(0.0, n.gpu_hours - held.get(n.node, 0.0))
    return {
        g: _money(h, price)
        for g, h in sorted(groups.items(), key=lambda gh: (-gh[1], gh[0]))
        if h > 1e-9
    }


def check_nesting(document: Mapping[str, Any]) -> list[str]:
    """What breaks productive <= active <= allocated <= paid in a funnel document (the fleet
    and each workload), as sentences; empty where it nests."""
    problems = []
    rows = [("the fleet", document.get("fleet", {}))]
    rows += [(f"{r['namespace']}/{r['workload']}", r) for r in document.get("workloads", [])]
    for name, row in rows:
        present = [(s, row[s]["gpu_hours"]) for s in STAGES if s in row]
        for (above, upper), (below, lower) in pairwise(present):
            if lower > upper + 1e-6:
                problems.append(f"{name}: {below} {lower} > {above} {upper}")
    return problems
