"""`locomo_f1`: LoCoMo's answer score, as its evaluation code (`task_eval/evaluation.py` of the
LoCoMo release) computes it, so figures can be put beside Mem0's, Zep's and Cognee's:

- normalisation: lower case, punctuation (commas included) removed, the words a/an/the/and
  removed, each token Porter-stemmed as nltk's `PorterStemmer()` stems it (porter.py: the same
  stems, without importing nltk);
- token-multiset F1, 0 when nothing is shared (two empty texts score 0 too);
- by category (from the case's `category`, as the importer names them): `multi_hop` splits the
  answer and the gold on commas and averages, over the gold parts, each part's best match;
  `open_domain` scores against the gold's first `;` part; `temporal` and `single_hop` score the
  whole; `adversarial` scores 1 when the answer says "no information available" or "not
  mentioned" (any case), else 0.
"""

from __future__ import annotations

import functools
import re
import string
from collections import Counter
from typing import Any

from ...core.schema import Case
from ...core.suite_schema import Suite
from .base import Stage, StageResult, against_threshold, skipped
from .porter import porter_stem
from .registry import register
from .shown import answer_and_reference

CATEGORIES = ("multi_hop", "temporal", "open_domain", "single_hop", "adversarial")
ABSTENTIONS = ("no information available", "not mentioned")
_PUNCTUATION = re.compile("[" + re.escape(string.punctuation) + "]")
_STOP_WORDS = re.compile(r"\b(a|an|the|and)\b")

# Answers repeat their words: a cached stem costs a dict look-up (a stem is ~5-10 us).
_stem = functools.lru_cache(maxsize=1 << 16)(porter_stem)


def locomo_tokens(text: str) -> list[str]:
    plain = _STOP_WORDS.sub(" ", _PUNCTUATION.sub("", text.replace(",", "").lower()))
    return [_stem(word) for word in plain.split()]


def locomo_token_f1(answer: str, gold: str) -> float:
    predicted, wanted = locomo_tokens(answer), locomo_tokens(gold)
    common = sum((Counter(predicted) & Counter(wanted)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(wanted)
    return 2 * precision * recall / (precision + recall)


def locomo_f1(answer: str, gold: str, category: str) -> float:
    """One LoCoMo question's score; `category` is one of CATEGORIES."""
    if category == "adversarial":
        said = answer.lower()
        return float(any(phrase in said for phrase in ABSTENTIONS))
    if category == "multi_hop":
        answers = [part.strip() for part in answer.split(",")]
        parts = [part.strip() for part in gold.split(",")]
        best = [max(locomo_token_f1(one, part) for one in answers) for part in parts]
        return sum(best) / len(best)
    if category == "open_domain":
        gold = gold.split(";")[0].strip()
    return locomo_token_f1(answer, gold)


def score_locomo_f1(case: Case, trace: dict[str, Any], suite: Suite, verdict: Any) -> StageResult:
    if case.category not in CATEGORIES:
        return skipped(
            f"category {case.category!r} is not a LoCoMo category ({', '.join(CATEGORIES)})"
        )
    if case.reference is None and case.category != "adversarial":
        return skipped("no reference")
    score = locomo_f1(trace.get("answer", ""), case.reference or "", case.category)
    return against_threshold(
        "LoCoMo F1", score, suite.threshold_for("locomo_f1"), f" ({case.category})"
    )


register(Stage("locomo_f1", score_locomo_f1, shows=answer_and_reference))
