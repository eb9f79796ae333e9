"""A model's drift as a person reads it: the ``serving_drift`` finding, one per model and day,
naming what moved (longer prompts, shorter generations, more truncated outputs, aborts,
errors, a quality proxy), by how much, since which hour, and what it usually means."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Final

from lambdas.shared.findings import Finding, Kind, Severity
from lambdas.shared.thresholds import DRIFT_BASELINE_WEEKS
from lambdas.training_analyzer.gpu_hours.findings import ANALYZER
from lambdas.training_analyzer.serving.drift.detect import (
    DriftSignal,
    Shift,
    mean_change,
    share_moves,
)


@dataclass(frozen=True, order=True)
class DriftModel:
    """A served model: its namespace and the name its server labels it with."""

    namespace: str
    model: str

    @property
    def resource(self) -> str:
        return f"namespace/{self.namespace}/model/{self.model}"


#: Each finish reason as a reader says it (vLLM's FINISH_REASON_STRINGS, contract/serving.py).
REASONS: Final = {
    "length": "truncated outputs (finish reason length)",
    "stop": "outputs ended by the model (finish reason stop)",
    "abort": "aborted requests",
    "error": "failed requests (finish reason error)",
    "repetition": "outputs stopped for repetition",
}
#: What each move usually means.
MEANINGS: Final = {
    DriftSignal.PROMPT_LENGTH: (
        "Prompts of another length usually mean a new client or a prompt-template change "
        "(more context, retrieval or examples): check the clients' recent releases; longer "
        "prompts also cost prefill time and KV cache (time to first token)."
    ),
    DriftSignal.GENERATION_LENGTH: (
        "Outputs of another length usually mean a new task mix, or a changed model or decoding "
        "setting (a new model version, max_tokens, stop strings)."
    ),
    DriftSignal.QUALITY: (
        "The quality proxy moved: the model scores differently on today's traffic than on its "
        "past, the sign of a model to evaluate and retrain on fresh data."
    ),
    "length": (
        "More outputs cut at max_tokens: clients ask for more than max_tokens allows, or the "
        "model writes longer answers; raise max_tokens or read a sample of the outputs."
    ),
    "abort": "More aborts: clients give up before the answer (timeouts): see the latency alarms.",
    "error": "More failed requests: see the error-ratio alarm and the server's logs.",
}
RETRAIN: Final = (
    f"A shift that lasts is the traffic's new normal (the baseline, the same hours of the "
    f"{DRIFT_BASELINE_WEEKS} weeks before or, for a model with less than a week served, of the "
    "days before, takes it in as they pass): evaluate the model on the new traffic and "
    "consider retraining it with fresh data."
)
_NOUNS: Final = {
    DriftSignal.PROMPT_LENGTH: ("prompts", "longer", "shorter", "tokens"),
    DriftSignal.GENERATION_LENGTH: ("generations", "longer", "shorter", "tokens"),
    DriftSignal.QUALITY: ("quality proxy", "higher", "lower", ""),
}


def _hour(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:00 UTC")


def moved(shift: Shift) -> list[str]:
    """What moved, each a phrase with its numbers."""
    if shift.signal is DriftSignal.FINISH_REASON:
        return [
            f"{REASONS.get(reason, f'finish reason {reason}')} {before:.1f}% -> {now:.1f}%"
            for reason, (before, now) in share_moves(shift.current, shift.baseline).items()
        ] or [f"the finish-reason mix (total variation {shift.test.total_variation:.2f})"]
    noun, up, down, unit = _NOUNS[shift.signal]
    change = mean_change(shift.current, shift.baseline)
    before, now = shift.baseline.mean, shift.current.mean
    if change is None or before is None or now is None:
        return [f"the {noun}' distribution (total variation {shift.test.total_variation:.2f})"]
    return [
        f"{noun} {abs(change) * 100:.0f}% {up if change > 0 else down} "
        f"(mean {before:,.4g} -> {now:,.4g}{' ' + unit if unit else ''})"
    ]


def meanings(shifts: Sequence[Shift]) -> list[str]:
    found: list[str] = []
    for shift in shifts:
        if shift.signal is DriftSignal.FINISH_REASON:
            for reason, (before, now) in share_moves(shift.current, shift.baseline).items():
                text = MEANINGS.get(reason)
                if text and now > before and text not in found:
                    found.append(text)
        elif (text := MEANINGS.get(shift.signal)) and text not in found:
            found.append(text)
    return [*found, RETRAIN]


def _evidence(shift: Shift) -> dict[str, Any]:
    change = mean_change(shift.current, shift.baseline)
    evidence: dict[str, Any] = {
        "since": None if shift.since is None else _hour(shift.since),
        "hours_drifted": shift.hours_drifted,
        "hours_tested": shift.hours_tested,
        "requests": round(shift.current.total),
        "baseline_requests": round(shift.baseline.total),
        "chi_square": round(shift.test.statistic, 2),
        "degrees_of_freedom": shift.test.df,
        "threshold": round(shift.threshold, 2),
        "p_value": shift.test.p_value,
        "false_alarm_rate_per_test": shift.alpha,
        "total_variation": round(shift.test.total_variation, 4),
    }
    if shift.signal is DriftSignal.FINISH_REASON:
        n, m = shift.current.total, shift.baseline.total
        evidence["percent"] = {k: round(100 * v / n, 2) for k, v in shift.current.counts.items()}
        evidence["baseline_percent"] = {
            k: round(100 * v / m, 2) for k, v in shift.baseline.counts.items()
        }
    else:
        evidence["mean"] = shift.current.mean
        evidence["baseline_mean"] = shift.baseline.mean
        evidence["mean_change_percent"] = None if change is None else round(100 * change, 1)
    return evidence


def drift_finding(
    model: DriftModel, shifts: Sequence[Shift], *, day: date, baseline: str
) -> Finding:
    """One model's ``serving_drift`` of ``day``; ``baseline`` says what it was compared with."""
    starts = [s.since for s in shifts if s.since is not None]
    since = f"since {_hour(min(starts))}" if starts else f"over {day} as a whole"
    what = [phrase for s in shifts for phrase in moved(s)]
    return Finding(
        kind=Kind.SERVING_DRIFT,
        resource=model.resource,
        severity=Severity.WARNING,
        summary=(
            f"{model.model} in {model.namespace} drifted from {baseline}: {'; '.join(what)}, "
            f"{since}"
        ),
        evidence={
            "day": day.isoformat(),
            "namespace": model.namespace,
            "model": model.model,
            "baseline": baseline,
            "moved": what,
            "signals": {str(s.signal): _evidence(s) for s in shifts},
        },
        recommendation=" ".join(meanings(shifts)),
        analyzer=ANALYZER,
    )
