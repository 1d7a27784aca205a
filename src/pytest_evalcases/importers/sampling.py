"""Stable sampling: the same file and seed give the same cases, on every machine and version.

Each case is ranked by sha256(f"{seed}:{case id}") and the `limit` lowest are kept, in file
order. So the sample depends on the ids, not on the order of the file or on Python's `random`;
and a larger limit keeps every case of a smaller one.

A stratified sample keeps each stratum's (e.g. each category's) share of the file: the `limit`
places are handed out one at a time, each to the stratum furthest below its exact share (the
largest remainder, taken place by place), and each stratum takes its cases in the same seeded
hash order. Handing out places one at a time is what makes a larger limit extend a smaller one
(rounding each limit afresh would not: with LoCoMo's five categories, largest-remainder rounding
of the whole takes a place away from some category at 84 of its 1,986 sizes); every stratum stays
within one case of its exact share (tests/unit/importers check every size of LoCoMo's mix).
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator, Sequence

from .base import BenchmarkFormatError, Unit

SAMPLING = "the `limit` cases with the lowest sha256(seed:id), in file order"
STRATIFIED = (
    "each {field}'s share of the file kept (places handed out one at a time, each to the {field} "
    "furthest below its share); within a {field}, the cases with the lowest sha256(seed:id); in "
    "file order"
)


def rank(seed: int, case_id: str) -> str:
    return hashlib.sha256(f"{seed}:{case_id}".encode()).hexdigest()


def sample(units: list[Unit], limit: int | None, seed: int) -> list[Unit]:
    if limit is None or limit >= len(units):
        return list(units)
    kept = set(sorted(range(len(units)), key=lambda i: rank(seed, units[i].case["id"]))[:limit])
    return [unit for i, unit in enumerate(units) if i in kept]


def placements(sizes: Sequence[int]) -> Iterator[int]:
    """The stratum each place of a growing sample goes to, place by place: the one whose kept
    count is furthest below its exact share (ties: the stratum met first in the file)."""
    total = sum(sizes)
    kept = [0] * len(sizes)
    for placed in range(1, total + 1):
        open_strata = (i for i in range(len(sizes)) if kept[i] < sizes[i])
        # how far below its share, times `total` (integers: exact, and fast)
        behind = max(open_strata, key=lambda i: (placed * sizes[i] - kept[i] * total, -i))
        kept[behind] += 1
        yield behind


def shares(sizes: Sequence[int], limit: int) -> list[int]:
    """How many of each stratum a sample of `limit` keeps."""
    kept = [0] * len(sizes)
    for stratum in itertools.islice(placements(sizes), limit):
        kept[stratum] += 1
    return kept


def check_stratum_field(units: list[Unit], field: str, source: str) -> None:
    """BenchmarkFormatError when no case of the file has `field`: every case would fall in one
    stratum, and the sample would claim shares it did not keep."""
    if any(unit.case.get(field) is not None for unit in units):
        return
    fields = sorted({name for unit in units for name in unit.case})
    raise BenchmarkFormatError(
        f"{source}: --stratify {field}: no case of the file has a {field!r} field (its cases "
        f"have: {', '.join(fields)}); stratify by one of those, or leave --stratify out"
    )


def stratified_sample(units: list[Unit], limit: int | None, seed: int, field: str) -> list[Unit]:
    if limit is None or limit >= len(units):
        return list(units)
    strata: dict[object, list[int]] = {}
    for index, unit in enumerate(units):
        strata.setdefault(unit.case.get(field), []).append(index)
    kept: set[int] = set()
    counts = shares([len(members) for members in strata.values()], limit)
    for members, count in zip(strata.values(), counts, strict=True):
        kept.update(sorted(members, key=lambda i: rank(seed, units[i].case["id"]))[:count])
    return [unit for i, unit in enumerate(units) if i in kept]


def named_cases(units: list[Unit], wanted: Sequence[str | int], source: str) -> list[Unit]:
    """Exactly the cases named, by id or by 0-based position in the file (an int, or a string of
    digits that is no case's id), in file order. An entry that names no case is an error naming
    it (nothing is written)."""
    by_id = {unit.case["id"]: index for index, unit in enumerate(units)}
    kept: set[int] = set()
    for number, entry in enumerate(wanted, 1):
        if isinstance(entry, str) and entry in by_id:
            kept.add(by_id[entry])
            continue
        if isinstance(entry, str) and entry.isdigit():  # a line of a text file: a position
            entry = int(entry)
        if isinstance(entry, int) and 0 <= entry < len(units):
            kept.add(entry)
        else:
            what = "index" if isinstance(entry, int) else "id"
            raise BenchmarkFormatError(
                f"{source}: entry {number} ({entry!r}) names no case: no such {what} among the "
                f"file's {len(units)} cases (indices run from 0 to {len(units) - 1})"
            )
    return [unit for i, unit in enumerate(units) if i in kept]
