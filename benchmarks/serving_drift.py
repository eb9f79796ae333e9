"""Serving drift on replayed histograms: a model's weeks of hourly prompt-length,
generation-length and finish-reason counts at 100, 1,000 and 10,000 requests an hour, drawn
from one distribution (no change: every drift finding is a false alarm) and with a planted
shift (20% longer prompts, 20% longer generations, twice the truncations: finish reason
``length``), through the detector the daily analysis runs
(lambdas/training_analyzer/serving/drift/detect.py).

Each hour's counts are a multinomial draw over vLLM's token buckets (``build_1_2_5_buckets``
at a ``max_model_len`` of 8,192: vllm/v1/metrics/loggers.py) from a log-normal length, and
over the finish reasons; the baseline of an hour is four weeks of the same hour (one draw of
four hours' requests). A histogram's sum is each bucket's count times the log-normal's mean
within the bucket. Targets (issue 41): false alarms at most 1% of model-days at each rate; a
20% shift detected within 1 hour at 1,000 requests an hour or more.

Figures: false alarms per model-day (a model-day with any finding, over the model-days
replayed) and, per shift, the share of shifts caught in their first hour and the hours to
detect (the hours of traffic from the shift's start to the end of the first hour that drifted).
"""

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from lambdas.shared.thresholds import DRIFT_BASELINE_WEEKS
from lambdas.training_analyzer.serving.drift.detect import (
    DriftSignal,
    ModelDay,
    Window,
    alpha_per_test,
    detect,
    hour_tests,
)

RATES: Final = (100, 1_000, 10_000)
#: vLLM's buckets for a max_model_len of 8,192: 1, 2, 5 times each power of ten up to it.
BOUNDS: Final = tuple(b * 10**e for e in range(4) for b in (1, 2, 5))
#: Log-normal lengths: median and the log's standard deviation (a template-driven chat
#: service's spread; ``WIDE_SIGMA`` is printed beside it: detection power falls as the
#: spread grows).
PROMPT_MEDIAN: Final = 450.0
GENERATION_MEDIAN: Final = 180.0
SIGMA: Final = 0.6
WIDE_SIGMA: Final = 1.0
#: The finish mix: a tenth truncated (``length``), a few aborts and errors.
FINISH: Final = {"stop": 0.894, "length": 0.1, "abort": 0.005, "error": 0.001}
SHIFT: Final = 1.2
#: The benchmark's model-days of unchanged traffic per rate, and shifted weeks per case.
MODEL_DAYS: Final = 2_000
SHIFTS: Final = 100
#: Hours after a shift's start the replay waits for it to be caught.
WAIT_HOURS: Final = 48
SEED: Final = 41
TARGET_FALSE_ALARMS: Final = 0.01
TARGET_HOURS: Final = 1


def binomial(n: int, p: float, rng: random.Random) -> int:
    """A binomial draw: inversion where n·p is small, else W. Hörmann's BTRS (transformed
    rejection with squeeze, "The generation of binomial random variates", J. Statist.
    Comput. Simul. 46, 1993), exact either way."""
    if n <= 0 or p <= 0:
        return 0
    if p >= 1:
        return n
    if p > 0.5:
        return n - binomial(n, 1 - p, rng)
    q = 1 - p
    if n * p < 10:
        s, a = p / q, (n + 1) * p / q
        r, u, x = q**n, rng.random(), 0
        while u > r and x < n:
            u -= r
            x += 1
            r *= a / x - s
        return x
    spq = math.sqrt(n * p * q)
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    vr = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    lpq = math.log(p / q)
    m = math.floor((n + 1) * p)
    h = math.lgamma(m + 1) + math.lgamma(n - m + 1)
    while True:
        u = rng.random() - 0.5
        v = rng.random()
        us = 0.5 - abs(u)
        k = math.floor((2 * a / us + b) * u + c)
        if k < 0 or k > n:
            continue
        if us >= 0.07 and v <= vr:
            return k
        v = math.log(v * alpha / (a / (us * us) + b))
        if v <= h - math.lgamma(k + 1) - math.lgamma(n - k + 1) + (k - m) * lpq:
            return k


def multinomial(n: int, shares: Sequence[float], rng: random.Random) -> list[int]:
    """Counts of ``n`` draws over ``shares``: a binomial per bin of what is left."""
    counts, left, rest = [], n, 1.0
    for share in shares[:-1]:
        k = binomial(left, min(1.0, share / rest), rng) if rest > 0 else 0
        counts.append(k)
        left -= k
        rest -= share
    return [*counts, left]


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2))


@dataclass(frozen=True)
class Lengths:
    """A log-normal length over the buckets: each bucket's share and mean."""

    shares: tuple[float, ...]
    means: tuple[float, ...]
    labels: tuple[str, ...]

    @classmethod
    def lognormal(cls, median: float, sigma: float) -> "Lengths":
        mu = math.log(median)
        edges = (0.0, *BOUNDS, math.inf)
        shares, means = [], []
        for low, high in itertools.pairwise(edges):
            z_low = -math.inf if low == 0 else (math.log(low) - mu) / sigma
            z_high = math.inf if high == math.inf else (math.log(high) - mu) / sigma
            share = _phi(z_high) - _phi(z_low)
            # E[X; low < X <= high] of a log-normal: e^(mu + s^2/2) (Phi(zh - s) - Phi(zl - s)).
            partial = math.exp(mu + sigma**2 / 2) * (_phi(z_high - sigma) - _phi(z_low - sigma))
            shares.append(share)
            means.append(partial / share if share > 0 else 0.0)
        labels = (*(f"{b:g}" for b in BOUNDS), "+Inf")
        return cls(tuple(shares), tuple(means), labels)

    def draw(self, n: int, rng: random.Random) -> Window:
        counts = multinomial(n, self.shares, rng)
        total = sum(c * m for c, m in zip(counts, self.means, strict=True))
        return Window(dict(zip(self.labels, map(float, counts), strict=True)), total)


@dataclass(frozen=True)
class Traffic:
    """One model's traffic: its three signals' distributions."""

    prompt: Lengths
    generation: Lengths
    finish: dict[str, float]

    @classmethod
    def usual(cls, sigma: float = SIGMA) -> "Traffic":
        return cls(
            Lengths.lognormal(PROMPT_MEDIAN, sigma),
            Lengths.lognormal(GENERATION_MEDIAN, sigma),
            dict(FINISH),
        )

    def shifted(self, case: str, sigma: float = SIGMA) -> "Traffic":
        if case == "prompt +20%":
            return Traffic(Lengths.lognormal(PROMPT_MEDIAN * SHIFT, sigma), self.generation,
                           self.finish)  # fmt: skip
        if case == "generation +20%":
            return Traffic(self.prompt, Lengths.lognormal(GENERATION_MEDIAN * SHIFT, sigma),
                           self.finish)  # fmt: skip
        if case == "truncations x2":
            finish = dict(self.finish)
            finish["stop"] -= finish["length"]
            finish["length"] *= 2
            return Traffic(self.prompt, self.generation, finish)
        raise ValueError(f"no shift {case!r}")

    def draw(self, signal: DriftSignal, n: int, rng: random.Random) -> Window:
        if signal is DriftSignal.PROMPT_LENGTH:
            return self.prompt.draw(n, rng)
        if signal is DriftSignal.GENERATION_LENGTH:
            return self.generation.draw(n, rng)
        reasons = sorted(self.finish)
        counts = multinomial(n, [self.finish[r] for r in reasons], rng)
        return Window(dict(zip(reasons, map(float, counts), strict=True)))


SIGNALS: Final = (DriftSignal.PROMPT_LENGTH, DriftSignal.GENERATION_LENGTH,
                  DriftSignal.FINISH_REASON)  # fmt: skip
CASES: Final = ("prompt +20%", "generation +20%", "truncations x2")


def model_day(now: Traffic, before: Traffic, rate: int, rng: random.Random) -> ModelDay:
    """A day of hourly windows drawn from ``now``, each hour's baseline from ``before``."""
    day = ModelDay()
    for signal in SIGNALS:
        day.current[signal] = {h * 3600: now.draw(signal, rate, rng) for h in range(24)}
        day.baseline[signal] = {
            h * 3600: before.draw(signal, DRIFT_BASELINE_WEEKS * rate, rng) for h in range(24)
        }
    return day


def false_alarm_share(rate: int, model_days: int, rng: random.Random) -> float:
    """The share of unchanged model-days with any drift finding."""
    usual = Traffic.usual()
    alarms = sum(bool(detect(model_day(usual, usual, rate, rng))) for _ in range(model_days))
    return alarms / model_days


@dataclass(frozen=True)
class Detection:
    rate: int
    case: str
    sigma: float
    #: Hours of traffic to detection, per shift (None: not within ``WAIT_HOURS``).
    hours: tuple[int | None, ...]

    @property
    def first_hour_share(self) -> float:
        return sum(h == 1 for h in self.hours) / len(self.hours)

    def percentile(self, q: float) -> float:
        """Hours to detect at the q-th share of shifts (inf: not caught in the wait)."""
        ranked = sorted(math.inf if h is None else h for h in self.hours)
        return float(ranked[min(len(ranked) - 1, math.ceil(q * len(ranked)) - 1)])


def hours_to_detect(
    rate: int, case: str, shifts: int, rng: random.Random, sigma: float = SIGMA
) -> Detection:
    """Each shift from its first hour on, each hour tested as the daily analysis tests it,
    against the four weeks before: the hours until one drifted."""
    usual = Traffic.usual(sigma)
    changed = usual.shifted(case, sigma)
    signal = (
        DriftSignal.FINISH_REASON
        if case == "truncations x2"
        else DriftSignal.PROMPT_LENGTH
        if case.startswith("prompt")
        else DriftSignal.GENERATION_LENGTH
    )
    alpha = alpha_per_test(len(SIGNALS))
    found: list[int | None] = []
    for _ in range(shifts):
        caught = None
        for hour in range(1, WAIT_HOURS + 1):
            window = {0: changed.draw(signal, rate, rng)}
            baseline = {0: usual.draw(signal, DRIFT_BASELINE_WEEKS * rate, rng)}
            if any(t.drifted for t in hour_tests(signal, window, baseline, alpha)):
                caught = hour
                break
        found.append(caught)
    return Detection(rate, case, sigma, tuple(found))


def detection(
    rate: int, case: str, sigma: float, shifts: int = SHIFTS, seed: int = SEED
) -> Detection:
    """``hours_to_detect`` with its own draws (seeded by the case), so one line of the
    benchmark's can be replayed alone (tests/unit/test_docs.py holds docs/drift.md's)."""
    return hours_to_detect(
        rate, case, shifts, random.Random(f"{seed} {rate} {case} {sigma}"), sigma
    )


@dataclass(frozen=True)
class Result:
    false_alarms: dict[int, float]
    detections: list[Detection]
    model_days: int


def main(model_days: int | None = None, shifts: int | None = None, seed: int = SEED) -> Result:
    """Every figure, printed; the sizes default to ``MODEL_DAYS`` and ``SHIFTS``."""
    model_days = MODEL_DAYS if model_days is None else model_days
    shifts = SHIFTS if shifts is None else shifts
    false_alarms = {
        rate: false_alarm_share(rate, model_days, random.Random(f"{seed} {rate}")) for rate in RATES
    }
    detections = [
        detection(rate, case, sigma, shifts, seed)
        for sigma in (SIGMA, WIDE_SIGMA)
        # A finish mix has no spread: its shift is replayed once.
        for case in (CASES if sigma == SIGMA else CASES[:2])
        for rate in RATES
    ]
    result = Result(false_alarms, detections, model_days)
    for line in lines(result):
        print(line)
    return result


def detection_line(d: Detection) -> str:
    p50, p95 = d.percentile(0.5), d.percentile(0.95)
    return (
        f"serving drift: {d.case}, {d.rate:,} requests an hour, log-sd {d.sigma:g}: "
        f"{100 * d.first_hour_share:.0f}% caught in the first hour, hours to detect "
        f"p50 {_hours(p50)}, p95 {_hours(p95)}"
    )


def lines(result: Result) -> list[str]:
    """The printed figures, one a line (docs/drift.md quotes them)."""
    out = [
        f"serving drift: false alarms, {rate:,} requests an hour: "
        f"{100 * share:.2f}% of {result.model_days:,} model-days "
        f"(target {100 * TARGET_FALSE_ALARMS:g}%)"
        for rate, share in result.false_alarms.items()
    ]
    return out + [detection_line(d) for d in result.detections]


def _hours(h: float) -> str:
    return f"over {WAIT_HOURS}" if math.isinf(h) else f"{h:g}"


if __name__ == "__main__":
    main()
