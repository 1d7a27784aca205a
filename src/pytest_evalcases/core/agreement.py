"""Agreement of a judge's pass/fail calls with people's labels (pure functions, no I/O).

"Fail" is the positive class throughout: the judge failing material that people labelled fail is
a true positive (`tp`), failing material labelled pass a false positive (`fp`). Cohen's kappa is
computed exactly from the four cell counts; its bootstrap intervals resample items, drawn as
multinomial counts of the cells (the kappa of a resample depends on its cell counts alone), so
10,000 resamples of 5,000 items cost one numpy draw of 10,000 x 4 counts, not 50 million indices.
Every interval uses the reports' fixed seed: the same calls give the same interval on every run.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from .stats import DEFAULT_RESAMPLES, DEFAULT_SEED

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True, slots=True)
class Confusion:
    """The 2x2 table of label against the judge's call, "fail" the positive class."""

    tp: int = 0  # labelled fail, judge failed it
    fn: int = 0  # labelled fail, judge passed it
    fp: int = 0  # labelled pass, judge failed it
    tn: int = 0  # labelled pass, judge passed it

    @classmethod
    def of(cls, calls: Iterable[tuple[bool, bool]]) -> Confusion:
        """From (labelled fail, judge says fail) pairs, one per item."""
        cells = [0, 0, 0, 0]
        for label_fail, judge_fail in calls:
            cells[(not label_fail) * 2 + (not judge_fail)] += 1
        return cls(*cells)

    @property
    def n(self) -> int:
        return self.tp + self.fn + self.fp + self.tn

    def as_dict(self) -> dict[str, dict[str, int]]:
        return {
            "label_fail": {"judge_fail": self.tp, "judge_pass": self.fn},
            "label_pass": {"judge_fail": self.fp, "judge_pass": self.tn},
        }


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def kappa_exact(tp: int, fn: int, fp: int, tn: int) -> Fraction | None:
    """Cohen's kappa as an exact fraction: (n(tp + tn) - E) / (n^2 - E), E = n^2 times the
    chance agreement; None when chance agreement is 1 (every call and label on one side)."""
    n = tp + fn + fp + tn
    chance = (tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)
    if not n or chance == n * n:
        return None
    return Fraction(n * (tp + tn) - chance, n * n - chance)


def cohen_kappa(tp: int, fn: int, fp: int, tn: int) -> float | None:
    """Agreement of the judge's calls with the labels beyond chance (None: undefined, e.g. every
    case on one side)."""
    exact = kappa_exact(tp, fn, fp, tn)
    return None if exact is None else float(exact)


def figures(c: Confusion) -> dict[str, float | None]:
    """Accuracy; precision, recall and F1 of the fail class; Cohen's kappa."""
    return {
        "accuracy": _ratio(c.tp + c.tn, c.n),
        "precision": _ratio(c.tp, c.tp + c.fp),
        "recall": _ratio(c.tp, c.tp + c.fn),
        # F1 = 2TP / (2TP + FP + FN): defined (0) even when the judge never says fail
        "f1": _ratio(2 * c.tp, 2 * c.tp + c.fp + c.fn),
        "kappa": cohen_kappa(c.tp, c.fn, c.fp, c.tn),
    }


def _kappas(cells: np.ndarray) -> np.ndarray:
    """Kappa of each row of (tp, fn, fp, tn) counts; NaN where it is undefined."""
    import numpy as np  # numpy: heavy; only a written report's intervals need it

    tp, fn, fp, tn = (cells[:, i].astype(float) for i in range(4))
    n = tp + fn + fp + tn
    chance = (tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)
    den = n * n - chance
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, (n * (tp + tn) - chance) / den, np.nan)


def _percentile_interval(values: np.ndarray, level: float) -> tuple[float, float] | None:
    import numpy as np  # numpy: heavy; only a written report's intervals need it

    defined = values[~np.isnan(values)]
    if not defined.size:
        return None
    alpha = (1.0 - level) / 2.0
    low, high = np.percentile(defined, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    return (float(low), float(high))


def _draw(counts: Sequence[int], resamples: int, seed: int) -> np.ndarray:
    """`resamples` bootstrap resamples of the items, as counts of each cell: the same draw as
    resampling the items one by one with replacement."""
    import numpy as np  # numpy: heavy; only a written report's intervals need it

    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples!r}")
    n = sum(counts)
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.asarray(counts, dtype=float) / n, size=resamples)


_PERFECT_RESAMPLES = 100  # the fewest resamples the shortcut of a perfect table answers


def kappa_interval(
    c: Confusion,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of Cohen's kappa, items resampled (resamples in which kappa
    is undefined are left out); None when kappa itself is undefined."""
    if cohen_kappa(c.tp, c.fn, c.fp, c.tn) is None:
        return None
    if c.fn == c.fp == 0 and resamples >= _PERFECT_RESAMPLES:
        # Every item agrees (a green calibration run): every resample with both labels has
        # kappa exactly 1, and one of that many resamples has both labels but with a chance
        # under 2**-resamples (each lacks one at most half the time). The bootstrap's own
        # answer, without numpy's import (~70 ms) and its draw.
        return (1.0, 1.0)
    return _percentile_interval(_kappas(_draw((c.tp, c.fn, c.fp, c.tn), resamples, seed)), level)


# The eight kinds of item two judges make on one labelled set: (labelled fail, A fails it,
# B fails it), in the order `paired_cells` counts them.
_PAIRED = [(label, a, b) for label in (True, False) for a in (True, False) for b in (True, False)]


def paired_cells(calls: Iterable[tuple[bool, bool, bool]]) -> list[int]:
    """Counts of the eight kinds of item from (labelled fail, A says fail, B says fail)."""
    counts = [0] * 8
    for label, a, b in calls:
        counts[_PAIRED.index((label, a, b))] += 1
    return counts


def split_paired(counts: Sequence[int]) -> tuple[Confusion, Confusion]:
    """Each judge's own table out of the eight paired counts."""
    a, b = [0, 0, 0, 0], [0, 0, 0, 0]
    for (label, fail_a, fail_b), count in zip(_PAIRED, counts, strict=True):
        a[(not label) * 2 + (not fail_a)] += count
        b[(not label) * 2 + (not fail_b)] += count
    return Confusion(*a), Confusion(*b)


def paired_kappa_difference(
    counts: Sequence[int],
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> tuple[float | None, tuple[float, float] | None]:
    """Kappa of B minus kappa of A on the same items, and its paired bootstrap interval: each
    resample draws items (with both judges' calls on them), as counts of the eight kinds."""
    a, b = split_paired(counts)
    ka, kb = cohen_kappa(a.tp, a.fn, a.fp, a.tn), cohen_kappa(b.tp, b.fn, b.fp, b.tn)
    if ka is None or kb is None:
        return None, None
    import numpy as np  # numpy: heavy; only a written report's intervals need it

    draws = _draw(counts, resamples, seed)
    to_a = np.zeros((8, 4))
    to_b = np.zeros((8, 4))
    for row, (label, fail_a, fail_b) in enumerate(_PAIRED):
        to_a[row, (not label) * 2 + (not fail_a)] = 1
        to_b[row, (not label) * 2 + (not fail_b)] = 1
    deltas = _kappas(draws @ to_b) - _kappas(draws @ to_a)
    return kb - ka, _percentile_interval(deltas, level)


def mcnemar_exact_p(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: the binomial test of b against b + c trials at 1/2,
    min(1, 2 * P(X <= min(b, c))). b and c count the items only one of two judges got right."""
    if b < 0 or c < 0:
        raise ValueError(f"McNemar counts must be >= 0, got b={b}, c={c}")
    trials = b + c
    if not trials:
        return 1.0
    tail = term = 1  # C(trials, 0); each next term from the last: exact, and fast at 5,000
    for k in range(min(b, c)):
        term = term * (trials - k) // (k + 1)
        tail += term
    return float(min(Fraction(1), Fraction(2 * tail, 2**trials)))


@dataclass(frozen=True, slots=True)
class ScoredItem:
    """A labelled item's repeat scores, as a threshold sees them: a repeat passes when its score
    is at least the threshold, and the item is called right only when every repeat is (so a
    fail-labelled item is failed when its highest score is below the threshold, a
    pass-labelled one when its lowest is)."""

    label_fail: bool
    low: float
    high: float

    @classmethod
    def of(cls, label_fail: bool, scores: Sequence[float]) -> ScoredItem:
        return cls(label_fail, min(scores), max(scores))

    def says_fail(self, threshold: float) -> bool:
        return (self.high if self.label_fail else self.low) < threshold


def confusion_at(items: Sequence[ScoredItem], threshold: float) -> Confusion:
    return Confusion.of((item.label_fail, item.says_fail(threshold)) for item in items)


@dataclass(frozen=True, slots=True)
class ThresholdFit:
    threshold: float
    confusion: Confusion
    kappa: float
    candidates: int


def threshold_candidates(items: Sequence[ScoredItem]) -> list[float]:
    """The thresholds that give every different table: the lowest deciding score (every item
    passes), then the midpoint between each two neighbouring deciding scores (the scores a
    threshold compares: a fail-labelled item's highest, a pass-labelled item's lowest)."""
    values = sorted({item.high if item.label_fail else item.low for item in items})
    return values[:1] + [(lo + hi) / 2 for lo, hi in zip(values, values[1:], strict=False)]


def best_threshold(items: Sequence[ScoredItem]) -> ThresholdFit | None:
    """The threshold whose calls agree best with the labels: the highest kappa, ties to the
    lower threshold; None when kappa is undefined at every candidate. One sort and a binary
    search per candidate: thousands of items and scores cost milliseconds."""
    fail_high = sorted(item.high for item in items if item.label_fail)
    pass_low = sorted(item.low for item in items if not item.label_fail)
    candidates = threshold_candidates(items)
    best: tuple[Fraction, float, Confusion] | None = None
    for threshold in candidates:
        tp = bisect_left(fail_high, threshold)  # fail-labelled items whose every repeat fails
        fp = bisect_left(pass_low, threshold)  # pass-labelled items some repeat fails
        table = Confusion(tp, len(fail_high) - tp, fp, len(pass_low) - fp)
        kappa = kappa_exact(table.tp, table.fn, table.fp, table.tn)
        if kappa is not None and (best is None or kappa > best[0]):
            best = (kappa, threshold, table)
    if best is None:
        return None
    return ThresholdFit(best[1], best[2], float(best[0]), len(candidates))
