"""Small, dependency-light statistics for eval reports (numpy loads with the first bootstrap).

Everything here is a pure function of its arguments: the same values and seed always
give the same interval, so reports are reproducible and CI diffs stay quiet.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

#: Fixed default seed: reports must not change between two runs over the same scores.
DEFAULT_SEED = 20_240_601
DEFAULT_RESAMPLES = 10_000

# Above this many drawn indices (resamples * n) the literal index matrix gets slow
# (~1.4 s for 10k x 10k on a 2-core machine), so larger samples use count-based draws.
_INDEX_MATRIX_BUDGET = 2_000_000
# Number of levels a many-valued large sample is binned to before a multinomial draw.
_GRID_LEVELS = 64


def mean(values: Iterable[float]) -> float | None:
    """Arithmetic mean (math.fsum for stability); None for no values."""
    vals = list(values)
    if not vals:
        return None
    return math.fsum(vals) / len(vals)


def median(values: Iterable[float]) -> float | None:
    """Median; None for no values."""
    vals = list(values)
    if not vals:
        return None
    return float(statistics.median(vals))


def percentile(values: Iterable[float], q: float) -> float | None:
    """The q-th percentile (0-100), interpolated linearly between the closest ranks (numpy's
    default); None for no values."""
    vals = sorted(values)
    if not vals:
        return None
    position = (len(vals) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(vals) - 1)
    return float(vals[low] + (vals[high] - vals[low]) * (position - low))


def bootstrap_ci(
    values: Sequence[float],
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile bootstrap confidence interval of the mean.

    Returns None for no values and (v, v) for a single value. The values are sorted
    first so the interval depends only on the multiset of values, not on their order
    (a sharded run merged later gives the same interval as an unsharded one).

    How the resample means are drawn (all three are vectorised, one RNG call):

    * at most 64 distinct values and fewer than n / 9 (verdicts, labels): multinomial
      counts over the distinct values -- the *same* bootstrap distribution as
      resampling indices, drawn in O(resamples * distinct) instead of
      O(resamples * n);
    * otherwise, small samples (resamples * n <= 2e6): a (resamples, n) index matrix;
    * otherwise (large n, many distinct values, e.g. token F1 over 10k cases): the
      values are binned to 64 evenly spaced levels, counts are drawn as above and
      the interval is shifted by the binning error of the mean. Binning adds at most
      (range / 63)^2 / 12 to the per-value variance, far below Monte Carlo noise.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples!r}")
    import numpy as np  # numpy: heavy; only the bootstrap (a written report) needs it

    arr = np.sort(np.asarray(values, dtype=float))
    n = arr.size
    if n == 0:
        return None
    if not np.all(np.isfinite(arr)):
        raise ValueError("bootstrap_ci needs finite values")
    if n == 1 or arr[0] == arr[-1]:
        v = float(arr[0])
        return (v, v)

    rng = np.random.default_rng(seed)
    uniq, counts = np.unique(arr, return_counts=True)
    shift = 0.0
    if uniq.size <= _GRID_LEVELS and uniq.size * 9 < n:
        # Few distinct values (0/1 verdicts, labels, small fractions): exact counts.
        draws = rng.multinomial(n, counts / n, size=resamples)
        means = draws @ uniq / n
    elif resamples * n <= _INDEX_MATRIX_BUDGET:
        idx = rng.integers(0, n, size=(resamples, n))
        means = arr[idx].mean(axis=1)
    else:
        levels, level_counts, shift = _binned(arr)
        draws = rng.multinomial(n, level_counts / n, size=resamples)
        means = draws @ levels / n
    alpha = (1.0 - level) / 2.0
    low, high = np.percentile(means, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    # Keep the interval inside the data range (the binning shift could nudge it out).
    lo = float(min(max(low + shift, arr[0]), arr[-1]))
    hi = float(min(max(high + shift, arr[0]), arr[-1]))
    return (lo, hi)


def _binned(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Round sorted values to _GRID_LEVELS levels; return (levels, counts, mean error)."""
    import numpy as np  # numpy: heavy; only the bootstrap (a written report) needs it

    lo, hi = float(arr[0]), float(arr[-1])
    step = (hi - lo) / (_GRID_LEVELS - 1)
    bins = np.rint((arr - lo) / step).astype(np.int64)
    counts = np.bincount(bins, minlength=_GRID_LEVELS)
    levels = lo + step * np.arange(_GRID_LEVELS)
    keep = counts > 0
    shift = float(arr.mean() - levels[bins].mean())
    return levels[keep], counts[keep], shift


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """Wilson score interval for a proportion; None when n == 0.

    Preferred over the normal interval because it stays inside [0, 1] and behaves at
    0/n and n/n, which are common for small eval categories.
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got {successes}/{n}")
    if n == 0:
        return None
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n runs with c passes: the chance that at least one of k runs drawn
    without replacement passes, 1 - C(n-c, k) / C(n, k)."""
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 < k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """tau-bench's pass^k from n runs with c passes: the chance that all of k runs drawn
    without replacement pass, C(c, k) / C(n, k)."""
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"pass^k needs 0 < k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    return math.comb(c, k) / math.comb(n, k)
