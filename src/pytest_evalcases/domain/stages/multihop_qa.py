"""The answer and supporting-fact scores of HotpotQA, 2WikiMultihopQA and MuSiQue, as each
benchmark's own evaluation defines them (docs/benchmarks.md names the code each follows), so a
suite's per-question figures can be put beside a paper's:

- `hotpotqa_em`, `hotpotqa_f1`: SQuAD normalisation; F1 is 0 when either side normalises to
  yes/no/noanswer and the two differ. `hotpotqa_sp_f1`: F1 of the trace's `supporting_facts`
  ([title, sentence index] pairs) against the case's `expected_facts`, as sets.
- `2wikimultihopqa_em`, `2wikimultihopqa_f1`: HotpotQA's rules, best over the reference and its
  aliases; `2wikimultihopqa_sp_f1`: HotpotQA's, with titles lower-cased.
- `musique_em`, `musique_f1`: best over the reference and its aliases, and an empty answer
  matches only an empty gold; `musique_sp_f1`: supporting-paragraph F1 of the retrieved ids
  against `expected_docs`. MuSiQue scores answerable questions only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from ...core.schema import Case
from ...core.suite_schema import Suite
from .base import Stage, StageResult, against_threshold, skipped
from .registry import register
from .shown import answer_and_reference
from .text import normalize_text

_CLOSED_ANSWERS = frozenset({"yes", "no", "noanswer"})


def _overlap_f1(predicted: Sequence[str], gold: Sequence[str]) -> float:
    common = sum((Counter(predicted) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def hotpotqa_f1(answer: str, gold: str) -> float:
    """HotpotQA's answer F1: 0 when a yes/no/noanswer side differs from the other."""
    predicted, wanted = normalize_text(answer), normalize_text(gold)
    if predicted != wanted and (predicted in _CLOSED_ANSWERS or wanted in _CLOSED_ANSWERS):
        return 0.0
    return _overlap_f1(predicted.split(), wanted.split())


def exact_match(answer: str, gold: str) -> float:
    """HotpotQA's, 2WikiMultihopQA's and MuSiQue's exact match: the normalised texts are equal."""
    return float(normalize_text(answer) == normalize_text(gold))


def musique_f1(answer: str, gold: str) -> float:
    """MuSiQue's answer F1 (SQuAD 2.0's): an empty side scores 1 only if both are empty."""
    predicted, wanted = normalize_text(answer).split(), normalize_text(gold).split()
    if not predicted or not wanted:
        return float(predicted == wanted)
    return _overlap_f1(predicted, wanted)


def set_f1(predicted: Iterable[Any], gold: Iterable[Any]) -> float:
    """HotpotQA's supporting-fact F1 (MuSiQue's support F1 is the same over paragraph ids): over
    the distinct items; 0 when either side is empty."""
    found, wanted = set(predicted), set(gold)
    hits = len(found & wanted)
    precision = hits / len(found) if found else 0.0
    recall = hits / len(wanted) if wanted else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def _golds(case: Case) -> list[str]:
    return [case.reference or "", *(case.reference_aliases or ())]


def _answer_stage(stage: str, name: str, score_one: Any, aliases: bool, answerable_only: bool):
    def score(case: Case, trace: dict[str, Any], suite: Suite, verdict: Any) -> StageResult:
        if case.reference is None:
            return skipped("no reference")
        if answerable_only and case.unanswerable:
            return skipped("unanswerable: the benchmark scores answers to answerable questions")
        golds = _golds(case) if aliases else [case.reference]
        answer = trace.get("answer", "")
        best = max(score_one(answer, gold) for gold in golds)
        note = f" (best of {len(golds)} gold answers)" if len(golds) > 1 else ""
        return against_threshold(name, best, suite.threshold_for(stage), note)

    return score


def _facts(pairs: Iterable[Sequence[Any]], lower_titles: bool) -> set[tuple[Any, ...]]:
    if lower_titles:  # 2WikiMultihopQA compares titles lower-cased
        return {(str(title).lower(), *rest) for title, *rest in pairs}
    return {tuple(pair) for pair in pairs}


def _facts_stage(stage: str, lower_titles: bool):
    def score(case: Case, trace: dict[str, Any], suite: Suite, verdict: Any) -> StageResult:
        if not case.expected_facts:
            return skipped("no expected_facts")
        named = trace.get("supporting_facts")
        if named is None:
            return skipped("the trace names no supporting_facts")
        f1 = set_f1(_facts(named, lower_titles), _facts(case.expected_facts, lower_titles))
        return against_threshold("supporting-fact F1", f1, suite.threshold_for(stage))

    return score


def score_musique_sp_f1(case: Case, trace: dict[str, Any], suite: Suite, verdict: Any):
    if case.unanswerable:
        return skipped("unanswerable: MuSiQue scores support for answerable questions")
    if not case.expected_docs:
        return skipped("no expected_docs")
    f1 = set_f1(trace.get("retrieved") or [], case.expected_docs)
    return against_threshold("supporting-paragraph F1", f1, suite.threshold_for("musique_sp_f1"))


score_hotpotqa_em = _answer_stage("hotpotqa_em", "HotpotQA EM", exact_match, False, False)
score_hotpotqa_f1 = _answer_stage("hotpotqa_f1", "HotpotQA F1", hotpotqa_f1, False, False)
score_hotpotqa_sp_f1 = _facts_stage("hotpotqa_sp_f1", lower_titles=False)
score_2wikimultihopqa_em = _answer_stage("2wikimultihopqa_em", "2Wiki EM", exact_match, True, False)
score_2wikimultihopqa_f1 = _answer_stage("2wikimultihopqa_f1", "2Wiki F1", hotpotqa_f1, True, False)
score_2wikimultihopqa_sp_f1 = _facts_stage("2wikimultihopqa_sp_f1", lower_titles=True)
score_musique_em = _answer_stage("musique_em", "MuSiQue EM", exact_match, True, True)
score_musique_f1 = _answer_stage("musique_f1", "MuSiQue F1", musique_f1, True, True)

STAGES_HERE = {
    "hotpotqa_em": score_hotpotqa_em,
    "hotpotqa_f1": score_hotpotqa_f1,
    "hotpotqa_sp_f1": score_hotpotqa_sp_f1,
    "2wikimultihopqa_em": score_2wikimultihopqa_em,
    "2wikimultihopqa_f1": score_2wikimultihopqa_f1,
    "2wikimultihopqa_sp_f1": score_2wikimultihopqa_sp_f1,
    "musique_em": score_musique_em,
    "musique_f1": score_musique_f1,
    "musique_sp_f1": score_musique_sp_f1,
}
for _stage, _score in STAGES_HERE.items():
    _shows = None if _stage.endswith("sp_f1") else answer_and_reference
    register(Stage(_stage, _score, shows=_shows))
