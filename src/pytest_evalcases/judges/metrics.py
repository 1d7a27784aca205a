"""deepeval's metrics, stage by stage: which metric with which settings (`build_metric`), and
what a measured metric gives a verdict: its score, checked against its scale (`metric_score`),
proof that the judge read the text (`check_extractions`), and the small part of its state the
cassette keeps (`metric_details`, in the clipped form `detail_text` gives every LLM judge detail).

Every metric gets an explicit model object (never deepeval's default, which needs OPENAI_API_KEY
even for metrics that make no call), `async_mode=True` and `eval_mode="llm"` (so a stray
DEEPEVAL_EVAL_MODE cannot route decisions elsewhere). deepeval is imported inside
`build_metric`, which runs only once the judge has loaded it (deepeval_judge.py).
"""

from __future__ import annotations

from typing import Any

from ..domain.verdicts import clipped_text
from .base import JudgeInput, StageOptions
from .errors import JudgeError
from .lexical import is_abstention

_MAX_ITEMS = 20  # items kept per list in a verdict's details
_MAX_CHARS = 300  # characters kept per text in a verdict's details


def build_metric(
    stage: str, model: Any, options: StageOptions, steps: list[str] | None = None
) -> Any:
    """A fresh deepeval metric for `stage`. The threshold is irrelevant: the spine gates.

    `steps`: GEval evaluation steps drafted earlier for the same criteria (None: draft them).
    """
    # deepeval: imported (in the background) by the judge's first verdict; loaded by now
    from deepeval.metrics import (
        AnswerRelevancyMetric,
        ContextualPrecisionMetric,
        ContextualRecallMetric,
        ContextualRelevancyMetric,
        FaithfulnessMetric,
        GEval,
    )
    from deepeval.test_case import SingleTurnParams

    common: dict[str, Any] = {
        "model": model,
        "threshold": 0.5,
        "include_reason": True,
        "async_mode": True,
        "strict_mode": False,
        "verbose_mode": False,
        "eval_mode": "llm",
    }
    if stage == "faithfulness":
        return FaithfulnessMetric(**common, penalize_ambiguous_claims=options.strict)
    if stage == "contextual_recall":
        return ContextualRecallMetric(**common)
    if stage == "contextual_precision":
        return ContextualPrecisionMetric(**common)
    if stage == "contextual_relevancy":
        return ContextualRelevancyMetric(**common)
    if stage == "answer_relevancy":
        return AnswerRelevancyMetric(**common)
    # GEval takes neither include_reason (it always reasons) nor eval_mode (LLM only).
    geval: dict[str, Any] = {
        "model": model,
        "threshold": 0.5,
        "async_mode": True,
        "strict_mode": False,
        "verbose_mode": False,
    }
    if stage == "correctness":
        return GEval(
            name="Correctness",
            criteria=options.correctness_criteria,
            evaluation_steps=steps,
            evaluation_params=[
                SingleTurnParams.INPUT,
                SingleTurnParams.ACTUAL_OUTPUT,
                SingleTurnParams.EXPECTED_OUTPUT,
            ],
            **geval,
        )
    own = options.declared.get(stage)
    if own is not None and own.get("kind") == "criteria":  # a suite's own criteria
        from deepeval.metrics.g_eval import Rubric

        params = {
            "input": SingleTurnParams.INPUT,
            "answer": SingleTurnParams.ACTUAL_OUTPUT,
            "reference": SingleTurnParams.EXPECTED_OUTPUT,
            "context": SingleTurnParams.RETRIEVAL_CONTEXT,
            "tool_calls": SingleTurnParams.TOOLS_CALLED,
        }
        bands = own.get("rubric")
        return GEval(
            name=stage,
            criteria=own["criteria"],
            evaluation_steps=list(own.get("steps") or []) or steps,
            evaluation_params=[params[read] for read in own["reads"]],
            rubric=[Rubric(**band) for band in bands] if bands else None,
            **geval,
        )
    raise JudgeError(f"stage {stage!r} is not a deepeval metric")


def steps_key(stage: str, options: StageOptions) -> tuple[str, ...] | None:
    """What GEval's evaluation steps are drafted from (its steps prompt sees the criteria and
    the fields read, never the case), or None when no steps are drafted (given ones, or no
    GEval): every case judged under one key in a run shares the steps drafted first."""
    if stage == "correctness":
        return ("correctness", options.correctness_criteria)
    own = options.declared.get(stage)
    if own is None or own.get("kind") != "criteria" or own.get("steps"):
        return None
    return ("criteria", str(own["criteria"]), *own["reads"])


def _filled(text: Any) -> bool:
    return bool(text and str(text).strip())


def _filled_items(items: Any) -> list[Any]:
    """The items of a list that say something: a blank claim or step is no claim or step."""
    return [item for item in list(items or []) if _filled(item)]


def check_extractions(judge_id: str, stage: str, metric: Any, data: JudgeInput) -> None:
    """JudgeError when the judge's reply is empty where the metric needs content: deepeval
    scores an empty list of claims or statements as 1.0 (and empty verdicts as 1.0 or 0.0),
    GEval scores without any evaluation step, and a verdict list shorter (or longer) than the
    items it judges scores only the items it kept, so a schema-valid but empty reply would
    otherwise be recorded as a verdict, often a pass.

    Refused: no truths for a non-empty context, no claims or statements for a non-empty answer,
    no verdicts (or a count of verdicts other than the claims, statements or passages judged),
    no evaluation steps (correctness), no reason (every metric is asked for one). One
    exception: an answer that abstains ("the documents do not say") may hold no claim, and is
    then faithful (see docs/judges.md, "Empty replies")."""

    def empty(what: str, source: str) -> JudgeError:
        return JudgeError(
            f"{judge_id}: the judge returned no {what} for a non-empty {source} "
            f"({stage}); an empty extraction is a judge error, never a score"
        )

    def verdicts_for(items: list[Any], name: str) -> None:
        verdicts = list(getattr(metric, "verdicts", None) or [])
        if items and not verdicts:
            raise empty("verdicts", f"list of {len(items)} {name}")
        if items and len(verdicts) != len(items):
            raise JudgeError(
                f"{judge_id}: the judge returned {len(verdicts)} verdicts for {len(items)} "
                f"{name} ({stage}); a verdict list that does not match what it judges is a "
                "judge error, never a score"
            )

    context = any(_filled(passage) for passage in data.context)
    if stage == "faithfulness":
        claims = list(getattr(metric, "claims", None) or [])
        if context and not _filled_items(getattr(metric, "truths", None)):
            raise empty("truths", "context")
        if not _filled_items(claims) and _filled(data.answer) and not is_abstention(data.answer):
            raise empty("claims", "answer")
        verdicts_for(claims, "claims")
    elif stage == "answer_relevancy":
        statements = list(getattr(metric, "statements", None) or [])
        if not _filled_items(statements) and _filled(data.answer):
            raise empty("statements", "answer")
        verdicts_for(statements, "statements")
    elif stage == "contextual_recall":
        if _filled(data.reference) and not getattr(metric, "verdicts", None):
            raise empty("verdicts", "reference")
    elif stage == "contextual_precision":
        if context and not getattr(metric, "verdicts", None):
            raise empty("verdicts", "context")
        if context:  # deepeval judges every passage, in rank order: one verdict each
            verdicts_for(list(data.context), "passages")
    elif stage == "contextual_relevancy":
        groups = list(getattr(metric, "verdicts_list", None) or [])
        for number, passage in enumerate(data.context, start=1):
            group = groups[number - 1] if number <= len(groups) else None
            if _filled(passage) and not getattr(group, "verdicts", None):
                raise empty("verdicts", f"passage ({number} of {len(data.context)})")
    elif hasattr(metric, "score_range") and not _filled_items(
        getattr(metric, "evaluation_steps", None)
    ):
        raise JudgeError(
            f"{judge_id}: the judge returned no evaluation steps for the {stage} criteria; "
            "GEval scored without steps would judge nothing, so this is a judge error, never a "
            "score"
        )
    if not _filled(getattr(metric, "reason", None)):
        raise JudgeError(
            f"{judge_id}: the judge returned an empty reason ({stage}); every verdict is asked "
            "for one, and a reply without it is a judge error, never a score"
        )


def metric_score(judge_id: str, stage: str, metric: Any) -> float:
    """The metric's score; JudgeError when there is none or it is outside its scale (a score
    is never clamped: a judge that answers 1000 on a 0-10 scale is broken, not enthusiastic)."""
    score = metric.score
    if score is None:
        raise JudgeError(f"{judge_id}: the judge returned no score ({stage})")
    score = float(score)
    if hasattr(metric, "score_range"):  # GEval: correctness, or a suite's own criteria
        low, high = metric.score_range
        raw = score * (high - low) + low
        if not low <= raw <= high:
            raise JudgeError(
                f"{judge_id}: the judge returned score {raw:g} for {stage}, outside GEval's "
                f"{low}-{high} scale; a score out of its scale is a judge error, never clamped"
            )
    return score


def detail_text(value: Any) -> str:
    """A reason, claim or step as recorded: its text (None: empty), clipped with a note, new
    lines kept."""
    return clipped_text("" if value is None else str(value), _MAX_CHARS)


def detail_texts(items: Any) -> list[str]:
    return [detail_text(item) for item in list(items or [])[:_MAX_ITEMS]]


def _verdict_rows(verdicts: Any, *fields: str) -> list[dict[str, Any]]:
    rows = []
    for verdict in list(verdicts or [])[:_MAX_ITEMS]:
        value = getattr(verdict, "verdict", None)
        row: dict[str, Any] = {"verdict": str(getattr(value, "value", value))}
        for name in fields:
            row[name] = detail_text(getattr(verdict, name, None))
        rows.append(row)
    return rows


def metric_details(stage: str, metric: Any) -> dict[str, Any]:
    """The small, JSON-able part of a metric's state worth keeping in the cassette."""
    if stage == "faithfulness":
        return {
            "claims": detail_texts(getattr(metric, "claims", [])),
            "verdicts": _verdict_rows(getattr(metric, "verdicts", []), "reason"),
            "truths": len(getattr(metric, "truths", []) or []),
        }
    if stage == "answer_relevancy":
        return {
            "statements": detail_texts(getattr(metric, "statements", [])),
            "verdicts": _verdict_rows(getattr(metric, "verdicts", []), "reason"),
        }
    if stage in ("contextual_recall", "contextual_precision"):
        return {"verdicts": _verdict_rows(getattr(metric, "verdicts", []), "reason")}
    if stage == "contextual_relevancy":
        flat = [v for group in getattr(metric, "verdicts_list", []) or [] for v in group.verdicts]
        return {"verdicts": _verdict_rows(flat, "statement", "reason")}
    if hasattr(metric, "score_range"):  # GEval: correctness, or a suite's own criteria
        return {"evaluation_steps": detail_texts(getattr(metric, "evaluation_steps", []))}
    return {}


def test_case_of(data: JudgeInput) -> Any:
    """The deepeval test case of what a judge sees: input, answer, reference, context and the
    trace's tool calls (each a deepeval ToolCall of its name and arguments)."""
    # deepeval: loaded by now (the judge's model waits for it)
    from deepeval.test_case import LLMTestCase, ToolCall

    return LLMTestCase(
        input=data.input,
        actual_output=data.answer,
        expected_output=data.reference,
        retrieval_context=list(data.context),
        tools_called=[
            ToolCall(name=str(call.get("name", "")), input_parameters=call.get("args") or {})
            for call in data.tool_calls
        ],
    )
