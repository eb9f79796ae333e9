"""The chi-square test drift runs: its tail against published tables, its bins merged to
Cochran's rule, and its false alarms on unchanged samples at the rate it is set to, where a
fixed PSI line of 0.1 fires on a third or more of unchanged 100-request batches."""

import math
import random

import pytest

from lambdas.training_analyzer.serving.drift.statistic import (
    chi2_sf,
    chi2_threshold,
    homogeneity,
    merge,
    normal_threshold,
)


@pytest.mark.parametrize(
    ("x", "df", "p"),
    [
        # Upper critical values of the chi-square distribution (NIST/SEMATECH e-Handbook of
        # Statistical Methods, 1.3.6.7.4).
        (3.841, 1, 0.05),
        (6.635, 1, 0.01),
        (18.307, 10, 0.05),
        (18.467, 4, 0.001),
        (124.342, 100, 0.05),
        (135.807, 100, 0.01),
        (149.449, 100, 0.001),
    ],
)
def test_the_tail_matches_the_published_table(x: float, df: int, p: float) -> None:
    assert chi2_sf(x, df) == pytest.approx(p, rel=2e-3)


def test_the_threshold_is_the_tails_inverse() -> None:
    assert chi2_threshold(1, 0.05) == pytest.approx(3.841, abs=1e-3)
    assert chi2_threshold(9, 1e-4) == pytest.approx(33.72, abs=1e-2)
    assert chi2_sf(chi2_threshold(12, 1e-5), 12) == pytest.approx(1e-5, rel=1e-6)


def test_sparse_bins_merge_until_each_expects_five() -> None:
    # 100 against 400: the smaller row expects a fifth of the pooled count.
    current = [1, 2, 30, 40, 20, 5, 2]
    baseline = [4, 8, 120, 160, 80, 20, 8]
    runs = merge(current, baseline)
    assert runs == [(0, 2), (3, 3), (4, 4), (5, 6)]
    for a, b in runs:
        assert (sum(current[a : b + 1]) + sum(baseline[a : b + 1])) / 5 >= 5


def test_bins_of_nothing_are_left_out_and_one_bin_is_no_test() -> None:
    assert merge([0, 50, 50, 0], [0, 50, 50, 0]) == [(1, 1), (2, 2)]
    assert homogeneity([3, 1], [2, 2]) is None


def _psi(c: list[int], b: list[int]) -> float:
    n, m = sum(c), sum(b)
    return sum(
        (x / n - y / m) * math.log((x / n) / (y / m)) for x, y in zip(c, b, strict=True) if x and y
    )


def test_unchanged_samples_alarm_at_the_rate_set_where_a_fixed_psi_does_not() -> None:
    rng = random.Random(7)
    bins, trials, alpha = 10, 2_000, 0.01
    psi_alarms = test_alarms = 0
    for _ in range(trials):
        c, b = [0] * bins, [0] * bins
        for _ in range(100):
            c[rng.randrange(bins)] += 1
        for _ in range(100):
            b[rng.randrange(bins)] += 1
        psi_alarms += _psi(c, b) > 0.1
        test = homogeneity(c, b)
        assert test is not None
        test_alarms += test.p_value < alpha
    assert psi_alarms / trials > 0.3
    assert test_alarms / trials < 2 * alpha


def test_the_normal_line_matches_the_published_table() -> None:
    # Standard normal upper points (NIST/SEMATECH e-Handbook, 1.3.6.7.1).
    assert normal_threshold(0.05) == pytest.approx(1.645, abs=1e-3)
    assert normal_threshold(0.001) == pytest.approx(3.090, abs=1e-3)
    # The drift alarm's line: a model-day's 0.5% over 1,440 evaluations.
    assert normal_threshold(0.005 / 1440) == pytest.approx(4.498, abs=1e-2)
