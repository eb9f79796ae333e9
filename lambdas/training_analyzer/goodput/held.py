"""Each job's day of goodput over the GPU-hours the GPU-hour attribution says its pods held
(lambdas/training_analyzer/gpu_hours): one count of a job's GPU-hours and GPUs in the goodput
files, the funnel, the job tables and the failures. Pure.

The emitter splits the time of the ranks it runs in; the attribution counts every pod that held
a GPU, each clock hour it reported whole. Where they differ (ranks without an emitter, a pod's
hour before its process began), each category keeps its share of the time the emitter split and
the job's total is what its pods held, as the funnel's productive stage takes it
(funnel.py ``from_goodput``); its GPUs are the most its pods held at once where more than its
ranks. Its waiting for GPUs (pods pending, holding none) is left as it is."""

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Final

from lambdas.training_analyzer.failure_placement import HeldJob
from lambdas.training_analyzer.goodput.jobs import HOUR, AttemptGoodput, Badput, JobGoodput, Split

#: A pod's share of an hour read as a whole GPU (a clock hour's edges, rounding).
WHOLE: Final = 0.01


def _scaled(split: Split, scale: float) -> Split:
    badput = {b: s if b is Badput.WAITING_FOR_GPUS else s * scale for b, s in split.badput.items()}
    return Split(split.productive * scale, badput)


def held_goodput(g: JobGoodput, held: HeldJob | None) -> JobGoodput:
    """``g`` over what ``held`` (its pods in the attribution of the same day) held; ``g``
    itself where the attribution has none of its pods or the emitter split no held time."""
    if held is None:
        return g
    held_s = sum(held.held_by_hour.values()) * HOUR
    split_s = g.split.total - g.split.badput.get(Badput.WAITING_FOR_GPUS, 0.0)
    if held_s <= 0 or split_s <= 0:
        return g
    scale = held_s / split_s
    at_once = max(held.held_by_hour.values())
    return replace(
        g,
        gpus=max(g.gpus, math.ceil(at_once - WHOLE)),
        split=_scaled(g.split, scale),
        attempts=tuple(
            AttemptGoodput(a.index, a.first_hour, a.resumed_from, _scaled(a.split, scale), a.labels)
            for a in g.attempts
        ),
    )


def held_goodputs(
    goodput: Mapping[str, JobGoodput], held: Mapping[str, HeldJob]
) -> dict[str, JobGoodput]:
    """``held_goodput`` of each job."""
    return {job: held_goodput(g, held.get(job)) for job, g in goodput.items()}
