"""Our own grader prompts (context completeness, answer accuracy, rubric items) and the schemas
they answer in.

The judge model is called as `generate(prompt, schema=Model)`, like deepeval's metrics do, so one
model object serves both. Bump PROMPTS_REVISION whenever a prompt or schema here changes: it is
part of the judge version (`judges.judge_version`), so verdicts recorded under an older prompt
become stale.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

from .errors import JudgeError

# A prompt added for a new option (the half rubric scale) leaves this as it is: no verdict was
# recorded under it, and the others' prompts did not change.
PROMPTS_REVISION = 1


class ContextCompletenessGrade(BaseModel):
    present_elements: list[str] = Field(default_factory=list)
    missing_elements: list[str] = Field(default_factory=list)
    reason: str = ""
    label: Literal["COMPLETE", "PARTIAL", "INSUFFICIENT"]

    @field_validator("label", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.strip().upper() if isinstance(value, str) else value


class AnswerAccuracyGrade(BaseModel):
    reason: str = ""
    label: Literal["CORRECT", "WRONG"]

    @field_validator("label", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.strip().upper() if isinstance(value, str) else value


class RubricItemGrade(BaseModel):
    reason: str = ""
    met: bool


class RubricItemHalfGrade(BaseModel):
    """A rubric item on the half scale: 0, 0.5 or 1, nothing else (0.7 does not fit, so the
    request is retried and, if the judge insists, fails: never rounded into a grade)."""

    reason: str = ""
    grade: float

    @field_validator("grade", mode="before")
    @classmethod
    def _on_the_scale(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.strip()
            try:
                value = float(value)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"grade must be 0, 0.5 or 1, not {value!r}")
        if value not in (0, 0.5, 1):
            raise ValueError(f"grade must be 0, 0.5 or 1, not {value!r}")
        return float(value)


def check_grader_reply(judge_id: str, stage: str, reply: BaseModel) -> None:
    """JudgeError when one of our graders' replies is empty where its label needs content: a
    reason (every prompt asks for one), and for context completeness the elements a label
    claims (COMPLETE and PARTIAL name what is present; PARTIAL also what is missing).
    INSUFFICIENT may list nothing: it fails the stage either way."""

    def filled(text: object) -> bool:
        return bool(text and str(text).strip())

    def refused(what: str) -> JudgeError:
        return JudgeError(
            f"{judge_id}: the judge returned {what} ({stage}); an empty judgement is a judge "
            "error, never a score"
        )

    if not filled(getattr(reply, "reason", None)):
        raise refused("an empty reason")
    if isinstance(reply, ContextCompletenessGrade):
        present = [e for e in reply.present_elements if filled(e)]
        missing = [e for e in reply.missing_elements if filled(e)]
        if reply.label in ("COMPLETE", "PARTIAL") and not present:
            raise refused(f"{reply.label} with no present element")
        if reply.label == "PARTIAL" and not missing:
            raise refused("PARTIAL with no missing element")


def _passages(context: list[str]) -> str:
    if not context:
        return "(no passages were retrieved)"
    return "\n".join(f"[{i}] {passage.strip()}" for i, passage in enumerate(context, start=1))


def context_completeness_prompt(question: str, reference: str, context: list[str]) -> str:
    return f"""Task: grade context completeness.

You are judging whether the CONTEXT that a retrieval system returned contains the information
needed to answer the QUESTION. The GOLDEN ANSWER defines what information is needed.
You are not evaluating an answer: no answer is shown to you, only the retrieved context.

Steps:
1. Break the golden answer into its essential elements: the facts, entities, numbers, dates and
   relations someone would need in order to give that answer.
2. For each element, decide whether the context states it. Paraphrases, synonyms and aliases
   count as present. Information you know but the context does not state counts as missing.
3. Choose the label:
   COMPLETE: every essential element is present in the context.
   PARTIAL: some essential elements are present and at least one is missing.
   INSUFFICIENT: no essential element is present, or the context is empty or off-topic.

<question>
{question.strip()}
</question>

<golden_answer>
{reference.strip()}
</golden_answer>

<context>
{_passages(context)}
</context>

Respond with a JSON object only, no other text, in exactly this form:
{{"present_elements": ["..."], "missing_elements": ["..."], "reason": "one or two sentences",
 "label": "COMPLETE" or "PARTIAL" or "INSUFFICIENT"}}
"""


def answer_accuracy_prompt(question: str, answer: str, reference: str | None) -> str:
    return f"""Task: grade answer accuracy.

You are grading an ANSWER to a QUESTION against the GOLDEN ANSWER.

The answer is CORRECT when it contains all essential information of the golden answer. Aliases,
paraphrases, equivalent formats (dates, units, number formats) and extra detail that does not
contradict the golden answer are fine.
The answer is WRONG when it misses essential information, contradicts the golden answer, or
abstains (for example "I don't know" or "the information is not available").

<question>
{question.strip()}
</question>

<golden_answer>
{(reference or "").strip()}
</golden_answer>

<answer>
{answer.strip()}
</answer>

Respond with a JSON object only, no other text, in exactly this form:
{{"reason": "one or two sentences", "label": "CORRECT" or "WRONG"}}
"""


def unanswerable_accuracy_prompt(question: str, answer: str, reference: str | None) -> str:
    note = ""
    if reference and reference.strip():
        note = f"\n<case_note>\n{reference.strip()}\n</case_note>\n"
    return f"""Task: grade answer accuracy for an unanswerable question.

The QUESTION cannot be answered from the information the system has. The expected behaviour is
to say so.

The answer is CORRECT only when it says that the information is not available (not known, not
in the documents, not covered); it may explain what is missing.
The answer is WRONG when it gives a substantive answer to the question, even a hedged or partial
one.

<question>
{question.strip()}
</question>
{note}
<answer>
{answer.strip()}
</answer>

Respond with a JSON object only, no other text, in exactly this form:
{{"reason": "one or two sentences", "label": "CORRECT" or "WRONG"}}
"""


def _rubric_prompt(
    task: str, instructions: str, reply: str, question: str, answer: str, item: str
) -> str:
    """A rubric item's prompt: the task and how to judge it, the three texts, the reply form."""
    return f"""Task: {task}

{instructions}

<question>
{question.strip()}
</question>

<answer>
{answer.strip()}
</answer>

<rubric_item>
{item.strip()}
</rubric_item>

Respond with a JSON object only, no other text, in exactly this form:
{reply}
"""


RUBRIC_BINARY = """\
You are checking whether an ANSWER to a QUESTION meets one RUBRIC ITEM. Judge this item only,
on what the answer says: paraphrases count, an item the answer only hints at or contradicts is
not met. Other qualities of the answer do not matter here."""
RUBRIC_HALF = """\
You are checking how far an ANSWER to a QUESTION meets one RUBRIC ITEM. Judge this item only,
on what the answer says: paraphrases count. Other qualities of the answer do not matter here.
Grade it:
  1: the answer fully meets the item.
  0.5: the answer partly meets the item (some of what it asks, or only vaguely).
  0: the answer does not meet the item, only hints at it, or contradicts it."""


def rubric_item_prompt(question: str, answer: str, item: str) -> str:
    return _rubric_prompt(
        "grade one rubric item.",
        RUBRIC_BINARY,
        '{"reason": "one sentence", "met": true or false}',
        question,
        answer,
        item,
    )


def rubric_item_half_prompt(question: str, answer: str, item: str) -> str:
    return _rubric_prompt(
        "grade one rubric item on a three-point scale.",
        RUBRIC_HALF,
        '{"reason": "one sentence", "grade": 0 or 0.5 or 1}',
        question,
        answer,
        item,
    )
