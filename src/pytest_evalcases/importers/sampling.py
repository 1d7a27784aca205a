"""Stable sampling: the same file and seed give the same cases, on every machine and version.

Each case is ranked by sha256(f"{seed}:{case id}") and the `limit` lowest are kept, in file
order. So the sample depends on the ids, not on the order of the file or on Python's `random`;
and a larger limit keeps every case of a smaller one.
"""

from __future__ import annotations

import hashlib

from .base import Unit

SAMPLING = "the `limit` cases with the lowest sha256(seed:id), in file order"


def rank(seed: int, case_id: str) -> str:
    return hashlib.sha256(f"{seed}:{case_id}".encode()).hexdigest()


def sample(units: list[Unit], limit: int | None, seed: int) -> list[Unit]:
    if limit is None or limit >= len(units):
        return list(units)
    kept = set(sorted(range(len(units)), key=lambda i: rank(seed, units[i].case["id"]))[:limit])
    return [unit for i, unit in enumerate(units) if i in kept]
