"""The lemon-node score: over 30 days, a node's GPUs' share of the fleet's failures,
fail-slows and XIDs against their share of the fleet's GPU-hours, so 1 is a node as bad as the
fleet's mean and 3 one three times as bad per GPU-hour held. The worst nodes are listed with
what to do: cordon and replace them, and the EKS node auto repair condition that would act.

EKS node auto repair replaces a node whose ``AcceleratedHardwareReady`` condition ("whether
accelerated hardware (GPU, Neuron) on the node is functioning correctly") is false for 10
minutes (Replace, or Reboot in EKS managed node groups), the EKS node monitoring agent setting
that condition from the GPU faults it reads on the node, NVIDIA XID errors among them
("Automatically repair nodes in EKS clusters",
https://docs.aws.amazon.com/eks/latest/userguide/node-repair.html). A node that slows jobs or
fails them with no XID sets no condition: no auto repair acts on it, and it is replaced by hand.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

#: The days the score is over.
WINDOW_DAYS: Final = 30
#: A node this many times the fleet's rate per GPU-hour is a lemon ...
LEMON_SCORE: Final = 2.0
#: ... with at least this many events: fewer is chance, not a node.
MIN_EVENTS: Final = 3
#: The report and ``status`` list at most this many.
WORST: Final = 10
#: The node condition EKS node auto repair acts on for a GPU, and after how long.
AUTO_REPAIR_CONDITION: Final = "AcceleratedHardwareReady"
AUTO_REPAIR_AFTER_MINUTES: Final = 10


@dataclass(frozen=True)
class NodeRecord:
    """What one node's GPUs did over the window: the GPU-hours they ran, the failed runs that
    ran on it, the fail-slow pages that named it, its GPUs' XID errors."""

    node: str
    gpu_hours: float
    failures: int = 0
    fail_slows: int = 0
    xids: int = 0

    @property
    def events(self) -> int:
        return self.failures + self.fail_slows + self.xids

    def problem(self) -> str | None:
        """Why the record cannot be scored, or None."""
        if not self.node:
            return "a record with no node name"
        if not self.gpu_hours > 0:
            return f"node {self.node}: {self.gpu_hours!r} GPU-hours (must be above 0)"
        counts = (self.failures, self.fail_slows, self.xids)
        if any(c < 0 for c in counts):
            return f"node {self.node}: a negative count {counts}"
        return None


@dataclass(frozen=True)
class Lemon:
    node: str
    #: Its share of the fleet's events over its share of the fleet's GPU-hours.
    score: float
    events: int
    gpu_hours: float
    failures: int
    fail_slows: int
    xids: int
    share_of_events: float
    share_of_gpu_hours: float
    action: str


@dataclass(frozen=True)
class LemonReport:
    lemons: tuple[Lemon, ...]
    #: The records that could not be scored, each with why; the others are scored all the same.
    refused: tuple[str, ...] = field(default=())


def action(record: NodeRecord) -> str:
    """What to do with a lemon node, and whether EKS node auto repair would act on it."""
    steps = (
        f"cordon it (kubectl cordon {record.node}), drain it once its jobs checkpoint, and "
        "replace it (terminate the instance: its node group or Karpenter launches another)"
    )
    if record.xids:
        return (
            f"{steps}. EKS node auto repair acts when the node monitoring agent sets "
            f"{AUTO_REPAIR_CONDITION}=False on a GPU fault such as an XID, replacing the node "
            f"after {AUTO_REPAIR_AFTER_MINUTES} minutes (or rebooting it, in a managed node group)"
        )
    return (
        f"{steps}. Its failures and slowdowns set no node condition: EKS node auto repair "
        f"({AUTO_REPAIR_CONDITION}) will not act on it"
    )


def lemon_scores(records: Iterable[NodeRecord]) -> LemonReport:
    """The fleet's lemon nodes, worst first (at most ``WORST``); a record that cannot be scored
    is refused with why, never stopping the others."""
    good: list[NodeRecord] = []
    refused: list[str] = []
    for record in records:
        problem = record.problem()
        if problem:
            refused.append(problem)
        else:
            good.append(record)
    events = sum(r.events for r in good)
    hours = sum(r.gpu_hours for r in good)
    if not events:
        return LemonReport((), tuple(refused))
    lemons = []
    for r in good:
        share_events, share_hours = r.events / events, r.gpu_hours / hours
        score = share_events / share_hours
        if r.events >= MIN_EVENTS and score >= LEMON_SCORE:
            lemons.append(
                Lemon(
                    node=r.node,
                    score=round(score, 2),
                    events=r.events,
                    gpu_hours=r.gpu_hours,
                    failures=r.failures,
                    fail_slows=r.fail_slows,
                    xids=r.xids,
                    share_of_events=share_events,
                    share_of_gpu_hours=share_hours,
                    action=action(r),
                )
            )
    lemons.sort(key=lambda lemon: (-lemon.score, -lemon.events, lemon.node))
    return LemonReport(tuple(lemons[:WORST]), tuple(refused))
