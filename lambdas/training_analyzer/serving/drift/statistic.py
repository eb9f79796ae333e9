"""The distance between two samples' bin counts and its threshold for their sizes: Pearson's
chi-square test of homogeneity on a 2 x k table (this hour's counts and the baseline's).

Why not a fixed distance: the population stability index of two samples of sizes n and m over
k bins, drawn from one distribution, is distributed about as chi-square with k-1 degrees of
freedom times (1/n + 1/m) (B. Yurdakul, "Statistical Properties of Population Stability
Index", Western Michigan University, 2018, ch. 3), so a fixed PSI line of 0.1 is crossed by a
third or more of unchanged 100-request hours over 10 bins and almost never missed by a real
shift at 10,000. The test's statistic is that distribution's own, so its line follows the
samples' sizes: ``X^2 = sum (O - E)^2 / E`` over both rows, E from the pooled shares, is
chi-square with k-1 degrees of freedom under no change (K. Pearson, 1900; e.g. NIST/SEMATECH
e-Handbook of Statistical Methods, 1.3.5.15 "Chi-Square Goodness-of-Fit Test"), good where
every expected count is at least 5 (W. G. Cochran, "Some methods for strengthening the common
chi-square tests", Biometrics 10, 1954): sparse bins are merged until they are (``merge``).

Pure, standard library: the chi-square tail is the regularized upper incomplete gamma
function, its series and continued fraction (Numerical Recipes, 3rd ed., 6.2).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

#: Cochran's rule: each expected count at least this.
MIN_EXPECTED: Final = 5.0
_EPS: Final = 1e-15
_ITERATIONS: Final = 10_000


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for X chi-square with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError(f"{df} degrees of freedom: at least 1")
    if x <= 0:
        return 1.0
    return _gamma_q(df / 2, x / 2)


def _gamma_q(a: float, x: float) -> float:
    """Q(a, x) = Gamma(a, x) / Gamma(a): the series below a + 1, the continued fraction above."""
    log_prefix = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        n = a
        for _ in range(_ITERATIONS):
            n += 1
            term *= x / n
            total += term
            if abs(term) < abs(total) * _EPS:
                break
        return max(0.0, 1.0 - total * math.exp(log_prefix))
    # Lentz's method for the continued fraction of Gamma(a, x).
    tiny = 1e-300
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, _ITERATIONS):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < _EPS:
            break
    return math.exp(log_prefix) * h


def chi2_threshold(df: int, alpha: float) -> float:
    """The statistic that ``chi2_sf`` puts at ``alpha``: the test's line."""
    if not 0 < alpha < 1:
        raise ValueError(f"a false-alarm rate of {alpha}: between 0 and 1")
    low, high = 0.0, float(df)
    while chi2_sf(high, df) > alpha:
        high *= 2
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if chi2_sf(mid, df) > alpha else (low, mid)
        if high - low < 1e-9 * high:
            break
    return high


def normal_threshold(alpha: float) -> float:
    """The standard normal's upper ``alpha`` point: z with P(Z > z) = alpha (a one-sided
    test's line), by bisection on ``math.erfc``."""
    if not 0 < alpha < 1:
        raise ValueError(f"a false-alarm rate of {alpha}: between 0 and 1")
    low, high = -40.0, 40.0
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if 0.5 * math.erfc(mid / math.sqrt(2)) > alpha else (low, mid)
    return high


def merge(current: Sequence[float], baseline: Sequence[float]) -> list[tuple[int, int]]:
    """Runs of adjacent bins, as (first, last) indexes, each with an expected count of at least
    ``MIN_EXPECTED`` in both rows (the smaller row's share of the pooled count): a run grows
    until it does, and a short last run joins the one before it. Bins of nothing in either
    row are left out. Order the bins first where order means nothing (finish reasons)."""
    n, m = sum(current), sum(baseline)
    if n <= 0 or m <= 0:
        return []
    smaller = min(n, m) / (n + m)
    runs: list[tuple[int, int]] = []
    first, pooled = None, 0.0
    for i, (c, b) in enumerate(zip(current, baseline, strict=True)):
        if c + b <= 0 and first is None:
            continue
        first = i if first is None else first
        pooled += c + b
        if pooled * smaller >= MIN_EXPECTED:
            runs.append((first, i))
            first, pooled = None, 0.0
    if first is not None:
        last = max(i for i, (c, b) in enumerate(zip(current, baseline, strict=True)) if c + b > 0)
        if runs:
            runs[-1] = (runs[-1][0], last)
        else:
            runs.append((first, last))
    return runs


@dataclass(frozen=True)
class Test:
    """One comparison: the statistic, its degrees of freedom and tail probability, the
    samples' sizes, and the merged bins' counts it was computed on."""

    statistic: float
    df: int
    p_value: float
    n: float
    m: float
    runs: tuple[tuple[int, int], ...]
    current: tuple[float, ...]
    baseline: tuple[float, ...]

    @property
    def total_variation(self) -> float:
        """Half the summed absolute differences of the merged bins' shares (0 to 1)."""
        return 0.5 * sum(
            abs(c / self.n - b / self.m) for c, b in zip(self.current, self.baseline, strict=True)
        )


def homogeneity(current: Sequence[float], baseline: Sequence[float]) -> Test | None:
    """Pearson's chi-square test of homogeneity over the merged bins, or None where fewer than
    two bins are left (nothing to compare)."""
    runs = merge(current, baseline)
    if len(runs) < 2:
        return None
    c = tuple(float(sum(current[a : b + 1])) for a, b in runs)
    r = tuple(float(sum(baseline[a : b + 1])) for a, b in runs)
    n, m = sum(c), sum(r)
    total = n + m
    statistic = 0.0
    for ci, ri in zip(c, r, strict=True):
        pooled = (ci + ri) / total
        for observed, size in ((ci, n), (ri, m)):
            expected = pooled * size
            statistic += (observed - expected) ** 2 / expected
    df = len(runs) - 1
    return Test(statistic, df, chi2_sf(statistic, df), n, m, tuple(runs), c, r)
