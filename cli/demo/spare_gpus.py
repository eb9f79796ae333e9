"""The demo's week with the jobs its teams run on their nodes' spare GPUs placed on it
(cli/demo/week.py ``SPARE_GPUS``): the training jobs of cli/demo/training.py outside the
teams' own and the failing jobs of cli/demo/failures.py, each pod holding its GPU for the
minutes its runs last. Their pods then publish Container Insights' and DCGM's series, and
their GPUs the exporter's, as every other held GPU's: the funnel, the GPU-hour attribution,
the failures and the lemon score read them as a real cluster's."""

from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Final

from cli.demo import failures, training
from cli.demo.week import SPARE_GPUS, THIS_WEEK, SpareHold, WeekPlan


def spare_holds() -> tuple[SpareHold, ...]:
    """Every spare-GPU pod's holds, each job's rank N on its Nth spare GPU (``checked``)."""
    holds = list(failures.spare_holds())
    for job in training.JOBS:
        if job.name not in SPARE_GPUS:
            continue
        node, gpus = SPARE_GPUS[job.name]
        for pod, gpu in zip(training.RANK_PODS[job.name], gpus, strict=True):
            holds += [SpareHold(pod, node, gpu, a, b) for a, b in training.held_windows(job)]
    return checked(holds, SPARE_GPUS)


def checked(holds: Sequence[SpareHold], placed: Collection[str]) -> tuple[SpareHold, ...]:
    """``holds``, or ``ValueError`` naming the first fault: a job of ``placed`` with no hold,
    a hold that starts off an hour (a pod's minutes open its hour: cli/demo/otel.py
    ``week_samples``), or two holds of one GPU at once."""
    if missing := sorted(set(placed) - {hold.pod.workload for hold in holds}):
        raise ValueError(f"spare GPUs of jobs that never run: {', '.join(missing)}")
    for i, hold in enumerate(holds):
        if hold.start % 3600:
            raise ValueError(f"{hold.pod.name}: its hold starts off an hour ({hold.start})")
        for other in holds[i + 1 :]:
            same = (other.node, other.gpu) == (hold.node, hold.gpu)
            if same and other.start < hold.end and hold.start < other.end:
                raise ValueError(
                    f"{hold.pod.name} and {other.pod.name} hold GPU {hold.gpu} of {hold.node} "
                    "at once"
                )
    return tuple(holds)


#: This week as the demo runs it: the teams' own pods and those on their spare GPUs.
DEMO_WEEK: Final[WeekPlan] = replace(THIS_WEEK, spare=spare_holds())
