"""The lexical judge: verdicts computed by hand from its word rules, stemming, abstentions,
its params, version and the fields it reads."""

from __future__ import annotations

from typing import Any

import pytest
from judgehelpers import assert_verdict_shape

from pytest_evalcases.judges import (
    JudgeInput,
    judge_version,
    make_judge,
)
from pytest_evalcases.judges.lexical import is_abstention, stem

# ---- lexical judge: hand-computed verdicts -------------------------------------------------------
# Content words (after stop words and stemming):
#   input    {eiffel, tower}
#   answer   s1 {eiffel, tower, paris}  s2 {open, 1889}  s3 {banana, grow, cold, region}
#   passages p1 {banana, grow, tropical, region}  p2 {eiffel, tower, stand, paris, franc}
#            p3 {tower, open, 1889}
#   reference r1 {eiffel, tower, paris, franc}  r2 {330, metr, tall}
LEX = JudgeInput(
    input="Where is the Eiffel Tower?",
    answer="The Eiffel Tower is in Paris. It opened in 1889. Bananas grow in cold regions.",
    reference="The Eiffel Tower is in Paris, France. It is 330 metres tall.",
    context=[
        "Bananas grow in tropical regions.",
        "The Eiffel Tower stands in Paris, France.",
        "The tower opened in 1889.",
    ],
)


async def lexical(stage: str, data: JudgeInput = LEX, **options: Any) -> dict[str, Any]:
    judge = make_judge("lexical")
    verdict = dict(await judge.evaluate(stage, data, options))
    assert_verdict_shape(verdict, judge)
    assert verdict["usage"] is None and verdict["calls"] == 0
    return verdict


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("stage", "options", "score", "label"),
    [
        # s1 3/3 in p2, s2 2/2 in p3, s3 3/4 = 0.75 in p1: all >= 0.6
        ("faithfulness", {}, 1.0, None),
        # strict needs 0.8: s3 (0.75) fails
        ("faithfulness", {"strict": True}, 2 / 3, None),
        # r1 4/4 in p2; r2 0/3
        ("contextual_recall", {}, 0.5, None),
        # reference has 7 words; p1 0/7, p2 4/7 >= 0.5, p3 1/7 -> relevant at rank 2 only: 1/2
        ("contextual_precision", {}, 0.5, None),
        # p1 shares nothing with {eiffel, tower}; p2, p3 do
        ("contextual_relevancy", {}, 2 / 3, None),
        # only s1 shares a word with the input
        ("answer_relevancy", {}, 1 / 3, None),
        # 3 common of 9 answer / 7 reference words: P 1/3, R 3/7, F1 = 6/16
        ("correctness", {}, 0.375, None),
        # 4 of 7 reference words in the context = 57% -> PARTIAL
        ("context_completeness", {}, 0.5, "PARTIAL"),
        # answer holds 3 of 7 reference words = 43% < 80%
        ("answer_accuracy", {}, 0.0, "WRONG"),
    ],
)
async def test_lexical_stage_scores(
    stage: str, options: dict[str, Any], score: float, label: str | None
) -> None:
    verdict = await lexical(stage, **options)
    assert verdict["score"] == pytest.approx(score, abs=1e-6)
    assert verdict["label"] == label


@pytest.mark.asyncio
async def test_lexical_details_and_labels() -> None:
    partial = await lexical("context_completeness")
    assert partial["details"]["present_elements"] == ["eiffel", "tower", "paris", "france"]
    assert partial["details"]["missing_elements"] == ["330", "metres", "tall"]

    short_reference = JudgeInput(
        LEX.input, LEX.answer, "The Eiffel Tower is in Paris, France.", LEX.context
    )
    complete = await lexical("context_completeness", short_reference)
    assert (complete["label"], complete["score"]) == ("COMPLETE", 1.0)
    nothing = JudgeInput(LEX.input, LEX.answer, LEX.reference, ["Bananas grow in the tropics."])
    insufficient = await lexical("context_completeness", nothing)
    assert (insufficient["label"], insufficient["score"]) == ("INSUFFICIENT", 0.0)

    faithful = await lexical("faithfulness", **{"strict": True})
    assert [c["supported"] for c in faithful["details"]["claims"]] == [True, True, False]
    assert faithful["details"]["claims"][2]["support"] == 0.75


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("answer", "label"),
    [
        ("Curie won prizes in physics.", "CORRECT"),  # 4 of 5 reference words = 80%
        ("Curie won prizes.", "WRONG"),  # 3 of 5 = 60%
        ("I don't know.", "WRONG"),  # abstention on an answerable case
        ("Curie won prizes in physics, I don't know about chemistry.", "WRONG"),
    ],
)
async def test_lexical_answer_accuracy(answer: str, label: str) -> None:
    data = JudgeInput(
        "Which prizes did Curie win?", answer, "Curie won prizes in physics and chemistry.", []
    )
    assert (await lexical("answer_accuracy", data))["label"] == label


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("answer", "label"),
    [
        ("The documents do not say.", "CORRECT"),
        ("That information is not available.", "CORRECT"),
        ("The manual doesn\u2019t cover warranty terms.", "CORRECT"),
        ("I don't know.", "CORRECT"),
        ("The warranty lasts two years.", "WRONG"),
    ],
)
async def test_lexical_unanswerable(answer: str, label: str) -> None:
    data = JudgeInput("How long is the warranty?", answer, None, [], unanswerable=True)
    verdict = await lexical("answer_accuracy", data)
    assert verdict["label"] == label
    assert verdict["score"] == (1.0 if label == "CORRECT" else 0.0)


@pytest.mark.asyncio
async def test_lexical_abstention_makes_no_claim() -> None:
    data = JudgeInput("How long is the warranty?", "I don't know.", "Two years.", ["Warranty."])
    assert (await lexical("faithfulness", data))["score"] == 1.0
    assert (await lexical("correctness", data))["score"] == 0.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I do not know the answer.", True),
        ("There is no information about that.", True),
        ("The context does not mention it.", True),
        ("I cannot answer that from the documents.", True),
        ("Not in the documents.", True),
        ("Paris is the capital.", False),
        ("The knowledge base is large.", False),
    ],
)
def test_is_abstention(text: str, expected: bool) -> None:
    assert is_abstention(text) is expected


def test_stem_rules() -> None:
    assert {stem(w) for w in ("release", "released", "releases", "releasing")} == {"releas"}
    assert stem("cities") == "city" and stem("paris") == "paris" and stem("1889") == "1889"
    assert stem("glass") == "glass" and stem("status") == "status"


def test_lexical_params_version_reads() -> None:
    judge = make_judge("lexical")
    assert judge.id == "lexical" and judge_version("lexical") == "lexical-1"
    assert judge.stage_params("faithfulness", {"strict": True}) == {"strict": True}
    assert judge.stage_params("correctness", {"correctness_criteria": "x"}) == {}  # F1 ignores it
    assert judge.stage_params("context_completeness", {"accept_partial": True}) == {}
    assert judge.reads("faithfulness") == ("answer", "context")
    assert judge.reads("contextual_recall") == ("input", "reference", "context")
    assert judge.reads("context_completeness") == ("input", "reference", "context")
    assert judge.reads("answer_accuracy") == ("input", "answer", "reference", "unanswerable")
    assert judge.reads("answer_relevancy") == ("input", "answer")
    assert judge.reads("correctness") == ("input", "answer", "reference")
