"""A recorded verdict's repeats: the one place their layout in a cassette is read and written.

A stage judged N times keeps repeat 1 as the verdict itself (its key unchanged, so a cassette
recorded without repeats still replays) and repeats 2..N under `later_repeats`, each with its own
key (the verdict's key plus the repeat's number).
"""

from __future__ import annotations

from typing import Any

LATER_REPEATS = "later_repeats"


def repeat_key(key: dict[str, str], repeat: int) -> dict[str, str]:
    """The key of one repeat of a verdict (repeat 1: the verdict's own key)."""
    return key if repeat == 1 else {**key, "repeat": str(repeat)}


def has_repeats(verdict: dict[str, Any]) -> bool:
    """Whether a recorded verdict holds later repeats (well formed or not)."""
    return LATER_REPEATS in verdict


def later_repeats(verdict: dict[str, Any]) -> Any:
    """Repeats 2..N as recorded (a list when well formed; None when there are none)."""
    return verdict.get(LATER_REPEATS)


def repeats_of(verdict: dict[str, Any]) -> list[dict[str, Any]]:
    """Every repeat of a recorded verdict, repeat 1 first."""
    later = verdict.get(LATER_REPEATS)
    return [verdict, *later] if isinstance(later, list) else [verdict]


def with_later_repeats(verdict: dict[str, Any], later: list[dict[str, Any]]) -> dict[str, Any]:
    """The verdict with its repeats 2..N replaced."""
    return {**verdict, LATER_REPEATS: later}


def verdict_of_repeats(verdicts: list[dict[str, Any]]) -> dict[str, Any]:
    """One recorded verdict from its repeats (each already holding its key)."""
    first = dict(verdicts[0])
    first.pop(LATER_REPEATS, None)
    if len(verdicts) > 1:
        first[LATER_REPEATS] = [dict(v) for v in verdicts[1:]]
    return first
