"""Maximum-weight bipartite matching against brute force on small random matrices."""

from __future__ import annotations

import random

from pytest_evalcases.domain.stages.assignment import max_weight_matching


def best_total(weights: list[list[float | None]]) -> float:
    """Every matching (each row to a distinct column or to none), the best total."""
    best = 0.0

    def extend(row: int, used: frozenset[int], total: float) -> None:
        nonlocal best
        if row == len(weights):
            best = max(best, total)
            return
        extend(row + 1, used, total)
        for column, weight in enumerate(weights[row]):
            if column not in used and weight is not None:
                extend(row + 1, used | {column}, total + weight)

    extend(0, frozenset(), 0.0)
    return best


def test_the_matching_has_the_greatest_total_weight_and_uses_each_side_once():
    rng = random.Random(7)
    for _ in range(400):
        rows, columns = rng.randint(1, 5), rng.randint(1, 5)
        weights = [
            [round(rng.random(), 3) if rng.random() < 0.7 else None for _ in range(columns)]
            for _ in range(rows)
        ]
        pairs = max_weight_matching(weights)
        assert len({r for r, _ in pairs}) == len({c for _, c in pairs}) == len(pairs)
        assert all(weights[r][c] is not None for r, c in pairs)
        assert abs(sum(weights[r][c] for r, c in pairs) - best_total(weights)) < 1e-9


def test_a_lighter_pair_is_given_up_for_two_heavier_ones():
    # row 0 alone would take column 0 (0.9); together rows take 0.8 + 0.7 = 1.5
    assert max_weight_matching([[0.9, 0.8], [0.7, None]]) == [(0, 1), (1, 0)]
    assert max_weight_matching([]) == [] and max_weight_matching([[None]]) == []
