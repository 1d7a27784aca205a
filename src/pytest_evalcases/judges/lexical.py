"""The built-in offline judge: deterministic word-overlap heuristics. No model, no network, no
deepeval. Honestly a heuristic: good for demos, offline smoke tests and CI without keys, blind
to meaning (paraphrases with other words fail, negation is ignored, word order does not matter).

Text processing
- Secrets first: the input, answer, reference and passages are redacted (store/redaction.py)
  before anything is split, so no claim or sentence in the details holds a piece of a key.
- Content words: lower-case, expand contractions ("doesn't" -> "does not", "France's" ->
  "France"), split on anything that is not a letter or digit, drop stop words
  (articles, pronouns, auxiliaries, prepositions, question words, "not"/"no") and one-letter
  tokens, then strip suffixes crudely: -ies -> -y, -ing (words over 5 letters), -ed (over 4),
  -s (over 3, not -ss/-us/-is), then a final -e (over 3). "released", "releases", "release"
  all become "releas". Digits are kept as they are.
- Sentences: split after . ! ? followed by white space, and at line breaks.
- Passages: the context list, one entry per retrieved passage, in rank order.
- A sentence is *supported* by the context when at least 60% of its distinct content words occur
  in one single passage (80% for faithfulness with `strict: true`).
- An *abstention* is text matching phrases such as "don't know", "not available", "does not say",
  "doesn't cover", "no information", "not enough information", "cannot answer", "not in the
  documents" (see _ABSTENTION).

Stages (scores in [0, 1])
- faithfulness: supported answer sentences / answer sentences. Sentences without content words
  and abstaining sentences are not claims; an answer without claims scores 1.0.
- contextual_recall: supported reference sentences / reference sentences (none: 0.0).
- contextual_precision: a passage is relevant when it holds at least 50% of the reference's
  distinct content words; score = rank-weighted average precision, i.e. the mean of precision@k
  over the ranks k of relevant passages (deepeval's formula); no relevant passage: 0.0.
- contextual_relevancy: passages sharing at least one content word with the input / passages.
- answer_relevancy: answer sentences (with content words) sharing at least one content word with
  the input / such sentences (none: 0.0).
- correctness: token F1 between answer and reference content words (multiset overlap).
- context_completeness: share of the reference's distinct content words found anywhere in the
  context: >= 0.9 COMPLETE (1.0), >= 0.4 PARTIAL (0.5), else INSUFFICIENT (0.0); details list
  the present and missing words.
- rubric: an item is met when the answer holds at least 60% of the item's distinct content
  words, leaving out the words rubrics use to describe an answer (mention, state, say, explain,
  include, give, provide, answer, response...); score = weighted share of met items. An item
  left without content words is unmet. Negation is ignored here too: "does not promise a
  refund" is met by an answer that promises one.
  On the half scale (the suite's `"rubric": {"scale": "half"}`) an item holding all its content
  words grades 1, at least half of them 0.5 (partly met), fewer 0; score = weighted mean grade.
- answer_accuracy: CORRECT (1.0) when the answer is not an abstention and holds at least 80% of
  the reference's distinct content words, else WRONG (0.0). For `unanswerable` cases: CORRECT
  exactly when the answer is an abstention.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..core.names import clip
from ..store.redaction import redact_for_output
from .base import (
    ACCURACY_SCORES,
    COMPLETENESS_SCORES,
    Grade,
    Judge,
    JudgeInput,
    StageOptions,
    rubric_grade,
)

LEXICAL_REVISION = 1  # bump when any rule or ratio below changes: recorded verdicts go stale

SUPPORT_RATIO = 0.6
STRICT_SUPPORT_RATIO = 0.8
PRECISION_RATIO = 0.5
COMPLETE_RATIO = 0.9
PARTIAL_RATIO = 0.4
ACCURACY_RATIO = 0.8
RUBRIC_RATIO = 0.6
RUBRIC_HALF_RATIO = 0.5  # half scale: this share of an item's content words grades 0.5

STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could couldn did didn do does doesn doing
    don down during each either few for from further had hadn has hasn have haven having he her
    here hers herself him himself his how however i if in into is isn it its itself just let
    ll me might more most must mustn my myself neither no nor not now of off on once only or
    other ought our ours ourselves out over own per please re same shan she should shouldn so
    some such than that the their theirs them themselves then there these they this those
    through to too under until up upon us very was wasn we were weren what when where whether
    which while who whom whose why will with within without would wouldn yes yet you your
    yours yourself yourselves ve
    """.split()
)

_TOKEN = re.compile(r"[a-z0-9]+")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")
_ABSTENTION = re.compile(
    r"(?:do\s+not|don'?t|did\s+not|didn'?t)\s+know"
    r"|\b(?:do|does|did)\s*(?:not|n't)\s+(?:say|mention|cover|specify|contain|include|state)"
    r"|\bnot\s+(?:available|mentioned|specified|provided|stated|covered|known)"
    r"|\bnot\s+in\s+the\s+(?:documents?|context|sources?|provided)"
    r"|\bno\s+(?:information|data|details|mention|record)"
    r"|\b(?:not\s+enough|insufficient)\s+information"
    r"|\b(?:cannot|can'?t|can\s+not|unable\s+to)\s+(?:answer|determine|find|tell)"
    r"|\bi'?m\s+not\s+sure"
)


def stem(word: str) -> str:
    """Crude suffix stripping; see the module docstring for the rules."""
    if word.isdigit():
        return word
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith("ed"):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def _normalise(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'").lower()


def _words(text: str) -> list[str]:
    """Lower-case tokens, contractions expanded first ("won't" must not leave the verb "won")."""
    text = _normalise(text)
    text = re.sub(r"\bwon't\b", "will not", text)
    text = re.sub(r"\bcan't\b", "cannot", text)
    text = re.sub(r"n't\b", " not", text)
    text = re.sub(r"'(?:s|re|ve|ll|d|m)\b", "", text)
    return _TOKEN.findall(text)


def terms(text: str) -> dict[str, str]:
    """Distinct content words of `text`, in order of appearance: stem -> first surface form."""
    found: dict[str, str] = {}
    for token in _words(text):
        if token in STOP_WORDS or (len(token) == 1 and not token.isdigit()):
            continue
        found.setdefault(stem(token), token)
    return found


def content_words(text: str) -> list[str]:
    """Stemmed content words with repeats (token F1 counts them)."""
    return [
        stem(token)
        for token in _words(text)
        if token not in STOP_WORDS and (len(token) > 1 or token.isdigit())
    ]


def sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_BREAK.split(text.strip()) if part.strip()]


def is_abstention(text: str) -> bool:
    return _ABSTENTION.search(_normalise(text)) is not None


def _best_support(words: set[str], passages: list[set[str]]) -> tuple[float, int | None]:
    """Highest share of `words` found in a single passage, and that passage's index."""
    best, where = 0.0, None
    for index, passage in enumerate(passages):
        share = len(words & passage) / len(words)
        if share > best:
            best, where = share, index
    return best, where


def _support_rows(
    label: str, texts: list[str], context: list[str], ratio: float
) -> list[dict[str, Any]]:
    """For each sentence: its best single-passage support and whether it reaches `ratio`."""
    passages = [set(terms(p)) for p in context]
    rows = []
    for text in texts:
        share, where = _best_support(set(terms(text)), passages)
        rows.append(
            {
                label: clip(text, one_line=False),
                "support": round(share, 3),
                "passage": where,
                "supported": share >= ratio,
            }
        )
    return rows


_MAX_ITEMS = 20  # keep verdict details small

# Words a rubric uses to describe an answer rather than what it should say.
RUBRIC_META_WORDS = frozenset(
    stem(word)
    for word in """mention state say explain include give provide answer response reply note
    tell describe refer list cite clearly correctly""".split()
)


def _rubric_item_grade(share: float, scale: str) -> float:
    """An item's grade from the share of its content words the answer holds."""
    if scale == "half":
        return 1.0 if share == 1.0 else 0.5 if share >= RUBRIC_HALF_RATIO else 0.0
    return 1.0 if share >= RUBRIC_RATIO else 0.0


def _redacted(data: JudgeInput) -> JudgeInput:
    """`data` with its secrets redacted before any text is split into sentences: a claim is
    one line, and a line of a PEM body or an AWS secret alone on its line names no key by
    itself (the texts are one document, so a frame or a key id in any of them tells)."""
    texts = [data.input, data.answer, data.reference, list(data.context)]
    redacted = redact_for_output(texts)
    if redacted is texts:
        return data
    question, answer, reference, context = redacted
    return replace(data, input=question, answer=answer, reference=reference, context=context)


class LexicalJudge(Judge):
    """Deterministic word-overlap judge; see the module docstring for every rule."""

    uses_model = False
    grades_free_criteria = False  # a suite's own criteria or metric: an error, never a score

    def __init__(self) -> None:
        super().__init__("lexical")

    def stage_params(self, stage: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
        params = super().stage_params(stage, options)
        params.pop("criteria_sha", None)  # the criteria text does not change token F1
        return params

    async def _grade(self, stage: str, data: JudgeInput, options: StageOptions) -> Grade:
        grader = getattr(self, f"_{stage}")
        return grader(_redacted(data), options)

    # ---- stages ------------------------------------------------------------------------------
    def _faithfulness(self, data: JudgeInput, options: StageOptions) -> Grade:
        ratio = STRICT_SUPPORT_RATIO if options.strict else SUPPORT_RATIO
        claims = [s for s in sentences(data.answer) if terms(s) and not is_abstention(s)]
        if not claims:
            return Grade(1.0, "the answer makes no checkable claim", details={"claims": []})
        rows = _support_rows("claim", claims, data.context, ratio)
        supported = sum(row["supported"] for row in rows)
        return Grade(
            supported / len(claims),
            f"{supported} of {len(claims)} answer sentences have >= {ratio:.0%} of their content "
            "words in one passage",
            details={"claims": rows[:_MAX_ITEMS], "ratio": ratio},
        )

    def _contextual_recall(self, data: JudgeInput, options: StageOptions) -> Grade:
        wanted = [s for s in sentences(data.reference or "") if terms(s)]
        if not wanted:
            return Grade(0.0, "the reference has no content words to look for")
        rows = _support_rows("sentence", wanted, data.context, SUPPORT_RATIO)
        supported = sum(row["supported"] for row in rows)
        return Grade(
            supported / len(wanted),
            f"{supported} of {len(wanted)} reference sentences are supported by one passage "
            f"(>= {SUPPORT_RATIO:.0%} of their content words)",
            details={"sentences": rows[:_MAX_ITEMS]},
        )

    def _contextual_precision(self, data: JudgeInput, options: StageOptions) -> Grade:
        reference = set(terms(data.reference or ""))
        if not reference or not data.context:
            return Grade(0.0, "no reference content words or no passages")
        shares = [len(reference & set(terms(p))) / len(reference) for p in data.context]
        relevant = [share >= PRECISION_RATIO for share in shares]
        hits, precision_sum = 0, 0.0
        for rank, is_relevant in enumerate(relevant, start=1):
            if is_relevant:
                hits += 1
                precision_sum += hits / rank
        score = precision_sum / hits if hits else 0.0
        return Grade(
            score,
            f"{hits} of {len(relevant)} passages hold >= {PRECISION_RATIO:.0%} of the reference's "
            "content words; score is their rank-weighted precision",
            details={
                "passages": [
                    {"rank": i, "overlap": round(s, 3), "relevant": r}
                    for i, (s, r) in enumerate(zip(shares, relevant, strict=True), start=1)
                ][:_MAX_ITEMS]
            },
        )

    def _contextual_relevancy(self, data: JudgeInput, options: StageOptions) -> Grade:
        question = set(terms(data.input))
        if not data.context:
            return Grade(0.0, "no passages")
        relevant = [bool(question & set(terms(p))) for p in data.context]
        count = sum(relevant)
        return Grade(
            count / len(relevant),
            f"{count} of {len(relevant)} passages share a content word with the input",
            details={"relevant": relevant[:_MAX_ITEMS]},
        )

    def _answer_relevancy(self, data: JudgeInput, options: StageOptions) -> Grade:
        question = set(terms(data.input))
        said = [s for s in sentences(data.answer) if terms(s)]
        if not said:
            return Grade(0.0, "the answer has no sentence with content words")
        relevant = [bool(question & set(terms(s))) for s in said]
        count = sum(relevant)
        return Grade(
            count / len(said),
            f"{count} of {len(said)} answer sentences share a content word with the input",
            details={"relevant": relevant[:_MAX_ITEMS]},
        )

    def _correctness(self, data: JudgeInput, options: StageOptions) -> Grade:
        answer = Counter(content_words(data.answer))
        reference = Counter(content_words(data.reference or ""))
        common = sum((answer & reference).values())
        if not common:
            return Grade(
                0.0,
                "the answer shares no content word with the reference",
                details={"precision": 0.0, "recall": 0.0},
            )
        precision = common / sum(answer.values())
        recall = common / sum(reference.values())
        f1 = 2 * precision * recall / (precision + recall)
        return Grade(
            f1,
            f"token F1 {f1:.2f} (precision {precision:.2f}, recall {recall:.2f}) of answer vs "
            "reference content words",
            details={"precision": round(precision, 4), "recall": round(recall, 4)},
        )

    def _context_completeness(self, data: JudgeInput, options: StageOptions) -> Grade:
        wanted = terms(data.reference or "")
        available: set[str] = set()
        for passage in data.context:
            available |= set(terms(passage))
        present = [word for key, word in wanted.items() if key in available]
        missing = [word for key, word in wanted.items() if key not in available]
        coverage = len(present) / len(wanted) if wanted else 1.0
        if coverage >= COMPLETE_RATIO:
            label = "COMPLETE"
        elif coverage >= PARTIAL_RATIO:
            label = "PARTIAL"
        else:
            label = "INSUFFICIENT"
        return Grade(
            COMPLETENESS_SCORES[label],
            f"{len(present)} of {len(wanted)} reference content words are in the context "
            f"({coverage:.0%}; COMPLETE >= {COMPLETE_RATIO:.0%}, PARTIAL >= {PARTIAL_RATIO:.0%})",
            label,
            {
                "present_elements": present[:_MAX_ITEMS],
                "missing_elements": missing[:_MAX_ITEMS],
                "coverage": round(coverage, 4),
            },
        )

    def _rubric(self, data: JudgeInput, options: StageOptions) -> Grade:
        said = set(terms(data.answer))
        graded = []
        for text, weight in data.rubric:
            wanted = {
                key: word for key, word in terms(text).items() if key not in RUBRIC_META_WORDS
            }
            if not wanted:
                graded.append((text, weight, 0.0, "the item has no content words to look for"))
                continue
            missing = [word for key, word in wanted.items() if key not in said]
            share = 1 - len(missing) / len(wanted)
            why = f"the answer holds {share:.0%} of the item's content words" + (
                f" (missing: {', '.join(missing[:_MAX_ITEMS])})" if missing else ""
            )
            graded.append((text, weight, _rubric_item_grade(share, options.rubric_scale), why))
        return rubric_grade(graded, options.rubric_scale)

    def _answer_accuracy(self, data: JudgeInput, options: StageOptions) -> Grade:
        abstains = is_abstention(data.answer)
        if data.unanswerable:
            label = "CORRECT" if abstains else "WRONG"
            why = (
                "the answer says the information is not available"
                if abstains
                else "the case is unanswerable but the answer does not abstain"
            )
            return Grade(
                ACCURACY_SCORES[label], why, label, {"unanswerable": True, "abstention": abstains}
            )
        if abstains:
            return Grade(
                0.0,
                "the answer abstains although the reference has an answer",
                "WRONG",
                {"unanswerable": False, "abstention": True},
            )
        wanted = terms(data.reference or "")
        said = set(terms(data.answer))
        missing = [word for key, word in wanted.items() if key not in said]
        coverage = 1 - len(missing) / len(wanted) if wanted else 1.0
        label = "CORRECT" if coverage >= ACCURACY_RATIO else "WRONG"
        return Grade(
            ACCURACY_SCORES[label],
            f"the answer holds {coverage:.0%} of the reference's content words "
            f"(CORRECT needs >= {ACCURACY_RATIO:.0%})",
            label,
            {
                "unanswerable": False,
                "abstention": False,
                "coverage": round(coverage, 4),
                "missing": missing[:_MAX_ITEMS],
            },
        )
