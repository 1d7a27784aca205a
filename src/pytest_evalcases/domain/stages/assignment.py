"""Maximum-weight bipartite matching (the assignment problem), for the `graph` stage's
`"matching": "max_weight"`: the Hungarian method with potentials, O(n^3) on the padded square
matrix. A knowledge graph of a case has tens of edges, so plain Python is fast enough and needs no
scipy. Deterministic: the same weights always give the same pairs.
"""

from __future__ import annotations

from collections.abc import Sequence


def max_weight_matching(weights: Sequence[Sequence[float | None]]) -> list[tuple[int, int]]:
    """(row, column) pairs of greatest total weight; `None` marks a pair that may not match (a
    row or column may stay unmatched). Pairs come sorted by row."""
    rows = len(weights)
    cols = len(weights[0]) if rows else 0
    if not rows or not cols:
        return []
    size = max(rows, cols)
    top = max((w for row in weights for w in row if w is not None), default=0.0)
    # cost = top - weight (weights are >= 0). A forbidden or padded pair costs `top`, as a
    # pair of weight 0 would: the same as leaving both ends unmatched, which is what it means.
    forbidden = top

    def cost(i: int, j: int) -> float:
        if i < rows and j < cols and weights[i][j] is not None:
            return top - weights[i][j]  # type: ignore[operator]
        return forbidden

    inf = float("inf")
    u = [0.0] * (size + 1)
    v = [0.0] * (size + 1)
    owner = [0] * (size + 1)  # column -> row (1-based; 0: none)
    way = [0] * (size + 1)
    for i in range(1, size + 1):
        owner[0] = i
        j0 = 0
        least = [inf] * (size + 1)
        used = [False] * (size + 1)
        while True:
            used[j0] = True
            i0, delta, j1 = owner[j0], inf, 0
            for j in range(1, size + 1):
                if not used[j]:
                    current = cost(i0 - 1, j - 1) - u[i0] - v[j]
                    if current < least[j]:
                        least[j], way[j] = current, j0
                    if least[j] < delta:
                        delta, j1 = least[j], j
            for j in range(size + 1):
                if used[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    least[j] -= delta
            j0 = j1
            if owner[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            owner[j0] = owner[j1]
            j0 = j1
    pairs = [
        (owner[j] - 1, j - 1)
        for j in range(1, size + 1)
        if owner[j]
        and owner[j] - 1 < rows
        and j - 1 < cols
        and weights[owner[j] - 1][j - 1] is not None
    ]
    return sorted(pairs)
