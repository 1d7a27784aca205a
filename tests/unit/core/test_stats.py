"""stats: bootstrap and Wilson intervals against hand-computed and pinned values."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from pytest_evalcases.core.stats import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    bootstrap_ci,
    mean,
    median,
    pass_at_k,
    pass_hat_k,
    wilson_interval,
)


def test_mean_and_median() -> None:
    assert mean([1.0, 0.5, 0.0, 1.0]) == 0.625
    assert median([1.0, 0.5, 0.0, 1.0]) == 0.75
    assert median([3, 1, 2]) == 2.0
    assert mean([]) is None
    assert median([]) is None


@pytest.mark.parametrize(
    ("successes", "n", "expected"),
    [
        (8, 10, (0.490, 0.943)),  # the textbook example
        (0, 10, (0.000, 0.278)),
        (10, 10, (0.722, 1.000)),
        (1, 2, (0.095, 0.905)),
        (2, 4, (0.150, 0.850)),
    ],
)
def test_wilson_known_values(successes: int, n: int, expected: tuple[float, float]) -> None:
    low, high = wilson_interval(successes, n)
    assert (round(low, 3), round(high, 3)) == expected


def test_wilson_by_hand_formula() -> None:
    # 3/7 with z=1.96: centre and half-width written out.
    p, n, z = 3 / 7, 7, 1.96
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert wilson_interval(3, 7) == pytest.approx((centre - half, centre + half))


def test_wilson_edge_cases() -> None:
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(5, 4)
    with pytest.raises(ValueError):
        wilson_interval(-1, 4)


def test_bootstrap_trivial_inputs() -> None:
    assert bootstrap_ci([]) is None
    assert bootstrap_ci([0.7]) == (0.7, 0.7)
    assert bootstrap_ci([0.5, 0.5, 0.5]) == (0.5, 0.5)


def test_bootstrap_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        bootstrap_ci([0.1, 0.2], level=1.0)
    with pytest.raises(ValueError):
        bootstrap_ci([0.1, 0.2], resamples=0)
    with pytest.raises(ValueError):
        bootstrap_ci([0.1, float("nan")])


def test_bootstrap_small_sample_is_the_index_matrix_percentile_method() -> None:
    # Pin the algorithm: sorted values, one (resamples, n) index matrix from
    # default_rng(DEFAULT_SEED), row means, 2.5th / 97.5th percentiles.
    values = [0.9, 0.2, 0.55, 1.0, 0.35, 0.8]
    arr = np.sort(np.asarray(values))
    idx = np.random.default_rng(DEFAULT_SEED).integers(
        0, arr.size, size=(DEFAULT_RESAMPLES, arr.size)
    )
    low, high = np.percentile(arr[idx].mean(axis=1), [2.5, 97.5])
    assert bootstrap_ci(values) == (float(low), float(high))


def test_bootstrap_few_distinct_values_draws_multinomial_counts() -> None:
    # 100 pass/fail scores: same bootstrap distribution, drawn as counts per value.
    values = [1.0] * 70 + [0.0] * 30
    draws = np.random.default_rng(DEFAULT_SEED).multinomial(100, [0.3, 0.7], size=DEFAULT_RESAMPLES)
    means = draws @ np.array([0.0, 1.0]) / 100
    low, high = np.percentile(means, [2.5, 97.5])
    assert bootstrap_ci(values) == (float(low), float(high))
    # ... and it agrees with the normal approximation 0.7 +- 1.96 * sqrt(.21 / 100).
    half = 1.96 * math.sqrt(0.21 / 100)
    assert bootstrap_ci(values) == pytest.approx((0.7 - half, 0.7 + half), abs=0.02)


def test_bootstrap_is_reproducible_order_free_and_contains_the_mean() -> None:
    rng = random.Random(7)
    values = [rng.random() for _ in range(40)]
    ci = bootstrap_ci(values)
    assert ci == bootstrap_ci(list(values))
    shuffled = values[:]
    rng.shuffle(shuffled)
    assert bootstrap_ci(shuffled) == ci
    assert ci[0] < sum(values) / len(values) < ci[1]
    assert bootstrap_ci(values, seed=DEFAULT_SEED + 1) != ci
    narrow = bootstrap_ci(values, level=0.5)
    assert ci[0] < narrow[0] < narrow[1] < ci[1]


def test_bootstrap_large_many_valued_sample_matches_normal_limit() -> None:
    # 5,000 continuous scores take the binned path; at this n the percentile
    # bootstrap of a mean equals the normal interval to well under 1% of its width.
    rng = np.random.default_rng(3)
    values = rng.beta(5, 2, size=5_000)
    low, high = bootstrap_ci(values.tolist())
    m, se = values.mean(), values.std() / math.sqrt(values.size)
    width = 2 * 1.96 * se
    assert low < m < high
    assert low == pytest.approx(m - 1.96 * se, abs=0.03 * width)
    assert high == pytest.approx(m + 1.96 * se, abs=0.03 * width)
    assert values.min() <= low and high <= values.max()
    assert bootstrap_ci(values.tolist()) == (low, high)


def test_bootstrap_stays_inside_the_data_range() -> None:
    values = [1.0] * 199 + [0.999]
    low, high = bootstrap_ci(values)
    assert 0.999 <= low <= high <= 1.0


def test_pass_at_k_and_pass_hat_k_match_the_formulas() -> None:
    assert pass_at_k(3, 2, 1) == pytest.approx(2 / 3)
    assert pass_at_k(3, 2, 2) == 1.0  # C(1, 2) = 0
    assert pass_at_k(5, 1, 2) == pytest.approx(1 - 6 / 10)
    assert pass_hat_k(3, 2, 2) == pytest.approx(1 / 3)
    assert pass_hat_k(3, 2, 3) == 0.0
    assert pass_hat_k(4, 4, 3) == 1.0
    with pytest.raises(ValueError, match="0 < k <= n"):
        pass_at_k(2, 1, 3)
