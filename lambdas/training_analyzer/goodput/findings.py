"""The daily goodput finding of a job: its goodput, its largest badput, and what to do about
that badput; for lost progress and checkpoint time, the checkpoint interval that the job's own
failure rate and save time make optimal (Young). Pure."""

from dataclasses import dataclass
from typing import Final

from lambdas.shared.findings import Finding, Kind, Severity
from lambdas.training_analyzer.analysis import ANALYZER
from lambdas.training_analyzer.goodput.jobs import BADPUT_WORDS, HOUR, Badput, JobGoodput


@dataclass(frozen=True)
class GoodputThresholds:
    #: A job under this goodput is a finding: Meta reports over 90% effective training time
    #: for Llama 3 on 16,384 H100s through 419 unexpected interruptions in 54 days ("The
    #: Llama 3 Herd of Models", 2024, section 3.3.4).
    target: float = 0.90
    #: Under this, critical.
    critical: float = 0.50
    #: Jobs that held fewer GPU-hours are left out (a test run's startup is most of it).
    min_gpu_hours: float = 1.0


#: What to do about each badput.
ADVICE: Final[dict[Badput, str]] = {
    Badput.WAITING_FOR_GPUS: "Its pods waited for GPUs: reserve the capacity it needs (EC2 "
    "Capacity Blocks for ML, On-Demand Capacity Reservations) and admit its pods together "
    "(gang scheduling with Kueue) so none holds GPUs while the others wait.",
    Badput.STARTUP: "Shorten startup: cache the image on the nodes (or slim it), restore the "
    "checkpoint from instance NVMe or FSx for Lustre, and keep compiled kernels in a cache "
    "that outlives the pod.",
    Badput.DATA_LOADING: "Add DataLoader workers and prefetching, move decoding off the step, "
    "and stage the dataset closer (instance NVMe, FSx for Lustre, Mountpoint cache).",
    Badput.CHECKPOINT_SAVE: "Save asynchronously (torch.distributed.checkpoint async save), "
    "sharded from every rank, to fast local storage first.",
    Badput.EVALUATION: "Evaluate less often or on fewer batches, or evaluate saved "
    "checkpoints in a separate job.",
    Badput.HUNG: "Make a hang fail fast: set the process group's timeout and "
    "TORCH_NCCL_ASYNC_ERROR_HANDLING so a stuck collective ends the attempt, and act on the "
    "job-hung alarm's page.",
    Badput.PROGRESS_LOST: "Restarts redid steps saved nowhere: checkpoint more often, and "
    "read the failure findings for why it restarted.",
    Badput.RECOVERY: "Restart faster: restart in place (torchrun --max-restarts, JobSet's "
    "in-place restart) instead of rescheduling every pod, keep a spare node warm, and "
    "restore from local storage.",
    Badput.WAITING_ON_SLOWEST_RANK: "Find the slow rank (the training_straggler finding and "
    "its node's GPU findings), even out the data shards, and cordon a node that stays slow.",
    Badput.HELD_NO_STEPS: "Its GPUs were held while no step ran: end the pods when the loop "
    "ends, and stop jobs that never step.",
}
#: The badputs a checkpoint interval trades: saving more often costs saves, less often
#: costs progress lost at each failure.
CHECKPOINT_TRADE: Final = frozenset({Badput.PROGRESS_LOST, Badput.CHECKPOINT_SAVE})


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:,.0f} minutes" if seconds >= 90 else f"{seconds:,.0f} s"


def interval_advice(g: JobGoodput) -> str:
    """Young's interval from the job's own numbers, said with them; empty where unknown."""
    if g.optimal_checkpoint_interval_s is None or g.mean_checkpoint_save_s is None:
        return ""
    now = (
        f" (now every {_minutes(g.checkpoint_interval_s)})"
        if g.checkpoint_interval_s is not None
        else ""
    )
    return (
        f" With its {g.mean_checkpoint_save_s:,.0f} s saves and one failure every "
        f"{g.mtbf_hours:,.1f} hours, checkpoint every "
        f"{_minutes(g.optimal_checkpoint_interval_s)}{now}: Young's optimum, "
        "√(2 x save time x mean time between failures)."
    )


def goodput_finding(g: JobGoodput, t: GoodputThresholds = GoodputThresholds()) -> Finding | None:
    """The job's finding where its goodput is under ``t.target``; else None."""
    goodput, largest = g.goodput, g.split.largest()
    if goodput is None or largest is None or g.total_gpu_hours < t.min_gpu_hours:
        return None
    if goodput >= t.target:
        return None
    badput, seconds = largest
    share = seconds / g.split.total
    advice = ADVICE[badput]
    if badput in CHECKPOINT_TRADE or g.restarts:
        advice += interval_advice(g)
    attempts = f" over {len(g.attempts)} attempts" if len(g.attempts) > 1 else ""
    return Finding(
        kind=Kind.TRAINING_LOW_GOODPUT,
        resource=f"job/{g.job}",
        severity=Severity.CRITICAL if goodput < t.critical else Severity.WARNING,
        summary=(
            f"{g.job}'s goodput was {goodput:.0%} of the {g.total_gpu_hours:,.1f} GPU-hours it "
            f"held or waited for{attempts}; the largest badput was "
            f"{BADPUT_WORDS[badput]}, {seconds / HOUR:,.1f} GPU-hours ({share:.0%})."
        ),
        evidence={
            "goodput": round(goodput, 4),
            "gpus": g.gpus,
            "total_gpu_hours": round(g.total_gpu_hours, 3),
            "gpu_hours": {k: round(v, 3) for k, v in g.split.gpu_hours().items()},
            "largest_badput": str(badput),
            "attempts": [
                {
                    "index": a.index,
                    "resumed_from_step": a.resumed_from,
                    "goodput": round(a.split.goodput, 4) if a.split.goodput is not None else None,
                    "total_gpu_hours": round(a.split.total / HOUR, 3),
                }
                for a in g.attempts
            ],
            "failures": g.failures,
            "restarts": g.restarts,
            "steps_redone": round(g.steps_redone, 1),
            "mtbf_hours": _round(g.mtbf_hours, 2),
            "mean_checkpoint_save_seconds": _round(g.mean_checkpoint_save_s, 1),
            "checkpoint_interval_seconds": _round(g.checkpoint_interval_s, 1),
            "optimal_checkpoint_interval_seconds": _round(g.optimal_checkpoint_interval_s, 1),
            "ideal_step_seconds": _round(g.ideal_step_s, 4),
            "step_time_deviation": _round(g.step_time_deviation, 4),
            "target": t.target,
        },
        recommendation=advice,
        analyzer=ANALYZER,
    )


def _round(value: float | None, digits: int) -> float | None:
    return round(value, digits) if value is not None else None
