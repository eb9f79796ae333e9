"""A model's day of traffic against its own past: each hour's prompt lengths, generation
lengths, finish-reason mix and quality proxy, and the whole day's, tested against the same
hours of the weeks before (statistic.py), with the false alarms a model-day may raise split
over its tests (Bonferroni), and a shift reported only where it is large enough to act on.

Pure: the windows come from promql.py (or a benchmark's replay).
"""

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from lambdas.shared.thresholds import (
    DRIFT_FALSE_ALARMS_PER_MODEL_DAY,
    DRIFT_MIN_EFFECT,
    DRIFT_MIN_SHARE_POINTS,
    DRIFT_MIN_SHARE_RATIO,
)
from lambdas.training_analyzer.serving.drift.statistic import Test, chi2_threshold, homogeneity

HOURS_PER_DAY: Final = 24


class DriftSignal(StrEnum):
    """What drift watches of a model's traffic."""

    PROMPT_LENGTH = "prompt_length"
    GENERATION_LENGTH = "generation_length"
    FINISH_REASON = "finish_reason"
    QUALITY = "quality"

    @property
    def categorical(self) -> bool:
        """Bins without an order (finish reasons), so nothing to take a mean of."""
        return self is DriftSignal.FINISH_REASON


@dataclass(frozen=True)
class Window:
    """A window's observations of one signal: counts by bin (a histogram's upper bound as
    written, ``le``, or a finish reason) and, for a histogram, the sum of the values."""

    counts: Mapping[str, float]
    value_sum: float | None = None

    @property
    def total(self) -> float:
        return sum(self.counts.values())

    @property
    def mean(self) -> float | None:
        total = self.total
        return self.value_sum / total if self.value_sum is not None and total > 0 else None

    def __add__(self, other: "Window") -> "Window":
        counts = dict(self.counts)
        for k, v in other.counts.items():
            counts[k] = counts.get(k, 0.0) + v
        value_sum = (
            None
            if self.value_sum is None or other.value_sum is None
            else self.value_sum + other.value_sum
        )
        return Window(counts, value_sum)


def total(windows: Iterable[Window]) -> Window | None:
    found = None
    for w in windows:
        found = w if found is None else found + w
    return found


def _bound(label: str) -> float:
    return math.inf if label in ("+Inf", "Inf", "inf") else float(label)


def compare(signal: DriftSignal, current: Window, baseline: Window) -> Test | None:
    """The chi-square test of the two windows' bins: a histogram's in its bounds' order, a
    finish mix's from the most to the least frequent (so the rare reasons merge together)."""
    labels = set(current.counts) | set(baseline.counts)
    if signal.categorical:
        order = sorted(
            labels, key=lambda k: (-(current.counts.get(k, 0) + baseline.counts.get(k, 0)), k)
        )
    else:
        order = sorted(labels, key=_bound)
    return homogeneity(
        [current.counts.get(k, 0.0) for k in order], [baseline.counts.get(k, 0.0) for k in order]
    )


def share_moves(current: Window, baseline: Window) -> dict[str, tuple[float, float]]:
    """The finish reasons whose share moved enough to act on: reason to (baseline %, now %)."""
    n, m = current.total, baseline.total
    moved = {}
    for reason in sorted(set(current.counts) | set(baseline.counts)):
        now = 100 * current.counts.get(reason, 0.0) / n
        before = 100 * baseline.counts.get(reason, 0.0) / m
        low, high = sorted((now, before))
        if high - low >= DRIFT_MIN_SHARE_POINTS and high >= DRIFT_MIN_SHARE_RATIO * low:
            moved[reason] = (before, now)
    return moved


def mean_change(current: Window, baseline: Window) -> float | None:
    """The mean's change as a fraction of the baseline's, where both have one above 0."""
    now, before = current.mean, baseline.mean
    if now is None or before is None or before <= 0:
        return None
    return now / before - 1


def material(signal: DriftSignal, test: Test, current: Window, baseline: Window) -> bool:
    """A significant difference large enough to act on (thresholds.py ``DRIFT_MIN_*``)."""
    if signal.categorical:
        return bool(share_moves(current, baseline))
    change = mean_change(current, baseline)
    effect = max(abs(change) if change is not None else 0.0, test.total_variation)
    return effect >= DRIFT_MIN_EFFECT


@dataclass(frozen=True)
class HourTest:
    hour: int
    test: Test
    drifted: bool


@dataclass(frozen=True)
class Shift:
    """One signal of a model that moved in the day: since which hour (epoch seconds of its
    start; None where only the whole day's test saw it), in how many of the hours tested,
    and the windows from that hour on against their baselines."""

    signal: DriftSignal
    since: int | None
    hours_drifted: int
    hours_tested: int
    current: Window
    baseline: Window
    test: Test
    alpha: float

    @property
    def threshold(self) -> float:
        return chi2_threshold(self.test.df, self.alpha)


@dataclass
class ModelDay:
    """A model's day: per signal, each hour's window (by the hour's start, epoch seconds) and
    the baseline window of that hour (the same hours of the weeks before, summed)."""

    current: dict[DriftSignal, dict[int, Window]] = field(default_factory=dict)
    baseline: dict[DriftSignal, dict[int, Window]] = field(default_factory=dict)


def alpha_per_test(signals: int, rate: float = DRIFT_FALSE_ALARMS_PER_MODEL_DAY) -> float:
    """Each test's false-alarm rate: a model-day's share over its tests (each signal's 24 hours
    and its whole day), so that an unchanged model-day raises a finding at most ``rate`` of
    the time whatever the tests' dependence (Bonferroni's inequality)."""
    return rate / (max(signals, 1) * (HOURS_PER_DAY + 1))


def hour_tests(
    signal: DriftSignal, hours: Mapping[int, Window], baselines: Mapping[int, Window], alpha: float
) -> list[HourTest]:
    found = []
    for hour in sorted(hours):
        current, baseline = hours[hour], baselines.get(hour)
        if baseline is None:
            continue
        test = compare(signal, current, baseline)
        if test is None:
            continue
        drifted = test.p_value < alpha and material(signal, test, current, baseline)
        found.append(HourTest(hour, test, drifted))
    return found


def detect(day: ModelDay, rate: float = DRIFT_FALSE_ALARMS_PER_MODEL_DAY) -> list[Shift]:
    """The signals that moved in the day, each once: from the first hour whose test drifted
    (the hours from it on, against their baselines), or, where no single hour did, the whole
    day's windows."""
    signals = [s for s in DriftSignal if day.current.get(s) and day.baseline.get(s)]
    alpha = alpha_per_test(len(signals), rate)
    shifts = []
    for signal in signals:
        hours, baselines = day.current[signal], day.baseline[signal]
        tests = hour_tests(signal, hours, baselines, alpha)
        drifted = [t for t in tests if t.drifted]
        if drifted:
            since: int | None = drifted[0].hour
            kept = [h for h in sorted(hours) if h >= drifted[0].hour and h in baselines]
        else:
            since, kept = None, [h for h in sorted(hours) if h in baselines]
        current = total(hours[h] for h in kept)
        baseline = total(baselines[h] for h in kept)
        if current is None or baseline is None:
            continue
        test = compare(signal, current, baseline)
        if test is None:
            continue
        if not drifted and not (test.p_value < alpha and material(signal, test, current, baseline)):
            continue
        shifts.append(
            Shift(signal, since, len(drifted), len(tests), current, baseline, test, alpha)
        )
    return shifts
