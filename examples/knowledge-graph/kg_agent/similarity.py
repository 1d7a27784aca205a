"""Label similarity for the graph stage's soft matching: a synonym table, else word overlap.

Deterministic and offline; a real project might compare embeddings here instead.
"""

from __future__ import annotations

SYNONYMS = (
    {"born in", "birthplace", "place of birth"},
    {"worked for", "works for", "employer", "employed by"},
    {"worked with", "collaborated with"},
    {"married", "spouse"},
)


def relation_similarity(a: str, b: str) -> float:
    """1.0 for two labels of one synonym group, else the Jaccard overlap of their words."""
    if any(a in group and b in group for group in SYNONYMS):
        return 1.0
    words_a, words_b = set(a.split()), set(b.split())
    return len(words_a & words_b) / len(words_a | words_b)
