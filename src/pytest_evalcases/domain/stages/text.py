"""`exact_match` and `token_f1`: the answer against `reference`, SQuAD-style normalisation
(lower case, punctuation and the articles a/an/the removed, white space collapsed)."""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any

from ...core.schema import Case
from ...core.suite_schema import Suite
from .base import Stage, StageResult, against_threshold, skipped
from .registry import register
from .shown import answer_and_reference

# A regex deletes the punctuation about twice as fast as str.translate with a table.
_PUNCTUATION = re.compile("[" + re.escape(string.punctuation) + "]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalized_tokens(text: str) -> list[str]:
    return _ARTICLES.sub(" ", _PUNCTUATION.sub("", text.lower())).split()


def normalize_text(text: str) -> str:
    return " ".join(normalized_tokens(text))


def token_f1(answer: str, reference: str) -> float:
    """F1 of the normalised token multisets; two empty texts match."""
    predicted, gold = normalized_tokens(answer), normalized_tokens(reference)
    if not predicted or not gold:
        return float(predicted == gold)
    unmatched = Counter(gold)
    common = 0  # the size of the multiset intersection, without building a third Counter
    for token in predicted:
        count = unmatched.get(token)
        if count:
            common += 1
            unmatched[token] = count - 1
    if not common:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def score_exact_match(case: Case, trace: dict[str, Any], suite: Suite, verdict: Any) -> StageResult:
    if case.reference is None:
        return skipped("no reference")
    if normalize_text(trace.get("answer", "")) == normalize_text(case.reference):
        return StageResult(1.0, True, "answer equals reference", threshold=1.0)
    return StageResult(0.0, False, "answer differs from reference", threshold=1.0)


def score_token_f1(case: Case, trace: dict[str, Any], suite: Suite, verdict: Any) -> StageResult:
    if case.reference is None:
        return skipped("no reference")
    f1 = token_f1(trace.get("answer", ""), case.reference)
    return against_threshold("token F1", f1, suite.threshold_for("token_f1"))


register(Stage("exact_match", score_exact_match, shows=answer_and_reference))
register(Stage("token_f1", score_token_f1, shows=answer_and_reference))
