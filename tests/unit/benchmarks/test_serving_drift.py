"""Smoke run of the serving drift benchmark at a small size, and its samplers against their
distributions' moments (a biased sampler would make its false-alarm figure a fiction)."""

import random
import statistics

import pytest

from benchmarks import serving_drift
from benchmarks.serving_drift import Lengths, binomial


@pytest.mark.parametrize(("n", "p"), [(1_000, 0.3), (50, 0.05), (40_000, 0.9)])
def test_binomial_draws_have_the_binomials_mean_and_variance(n: int, p: float) -> None:
    rng = random.Random(3)
    draws = [binomial(n, p, rng) for _ in range(20_000)]
    assert statistics.mean(draws) == pytest.approx(n * p, rel=0.01)
    assert statistics.pvariance(draws) == pytest.approx(n * p * (1 - p), rel=0.05)


def test_lengths_put_the_lognormals_mass_and_mean_in_the_buckets() -> None:
    lengths = Lengths.lognormal(450.0, 0.6)
    assert sum(lengths.shares) == pytest.approx(1.0)
    mean = sum(s * m for s, m in zip(lengths.shares, lengths.means, strict=True))
    assert mean == pytest.approx(450.0 * 2.718281828 ** (0.6**2 / 2), rel=1e-6)


def test_a_small_run_prints_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    result = serving_drift.main(model_days=20, shifts=3)
    printed = capsys.readouterr().out.splitlines()
    assert printed == serving_drift.lines(result)
    assert len(printed) == len(serving_drift.RATES) * (1 + 3 + 2)
    # A 20% shift at 10,000 requests an hour is caught in its first hour even at this size.
    big = [d for d in result.detections if d.rate == 10_000 and d.sigma == serving_drift.SIGMA]
    assert all(d.first_hour_share == 1 for d in big)
