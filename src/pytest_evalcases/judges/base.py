"""The Judge interface, its input and its verdict shape, shared by every judge.

`Judge.evaluate` is a template method: it checks the stage and the input, meters usage, times the
call and builds the verdict dict; subclasses implement `_grade` (the judging itself) and may add
parameters in `stage_params`.
"""

from __future__ import annotations

import hashlib
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from ..domain.stages.declared import METRIC_READS
from ..domain.stages.judged import JUDGE_READS
from ..domain.verdicts import (
    DECLARED_OPTION,
    DEFAULT_CORRECTNESS_CRITERIA,
    REASON_LIMIT,
    clipped_text,
)
from .errors import JudgeConfigError, JudgeError, JudgeInputError
from .usage import JudgeStats, metering

# One table for both sides: the spine keys verdicts on what each stage reads.
STAGE_READS: dict[str, tuple[str, ...]] = JUDGE_READS
JUDGED_STAGES: tuple[str, ...] = tuple(JUDGE_READS)

COMPLETENESS_SCORES: dict[str, float] = {"COMPLETE": 1.0, "PARTIAL": 0.5, "INSUFFICIENT": 0.0}
ACCURACY_SCORES: dict[str, float] = {"CORRECT": 1.0, "WRONG": 0.0}
# The grades a rubric item may get on each scale (the suite's `"rubric": {"scale": ...}`).
RUBRIC_SCALES: dict[str, tuple[float, ...]] = {"binary": (0.0, 1.0), "half": (0.0, 0.5, 1.0)}


@dataclass(frozen=True)
class JudgeInput:
    """What a judge sees of one case: the question, the agent's answer, the golden answer, the
    retrieved passages (in rank order) and whether the case expects an abstention."""

    input: str
    answer: str
    reference: str | None
    context: list[str] = field(default_factory=list)
    unanswerable: bool = False
    rubric: tuple[tuple[str, float], ...] = ()  # (item, weight) pairs, for the rubric stage
    # the trace's tool calls ({"name", "args"}), for a suite's own stages that read them
    tool_calls: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class StageOptions:
    """The suite options a judge honours (`accept_partial` is a gating rule, not the judge's)."""

    strict: bool = False
    correctness_criteria: str = DEFAULT_CORRECTNESS_CRITERIA
    rubric_scale: str = "binary"  # "half": each rubric item graded 0, 0.5 or 1
    # The suite's own judged stages (domain/stages/declared.py): name -> {"kind": "criteria",
    # "criteria", "reads", "steps"?, "rubric"?} or {"kind": "metric", "class": "module:Class"}.
    declared: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, compare=False)
    rootdir: str | None = None  # where a metric's module is imported from

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any] | None) -> StageOptions:
        options = options or {}
        criteria = options.get("correctness_criteria") or DEFAULT_CORRECTNESS_CRITERIA
        scale = str(options.get("rubric_scale") or "binary")
        if scale not in RUBRIC_SCALES:
            raise JudgeInputError(
                f"unknown rubric scale {scale!r}; the scales are: {', '.join(RUBRIC_SCALES)}"
            )
        return cls(
            strict=bool(options.get("strict", False)),
            correctness_criteria=str(criteria),
            rubric_scale=scale,
            declared=options.get(DECLARED_OPTION) or {},
            rootdir=options.get("rootdir"),
        )

    def reads(self, stage: str) -> tuple[str, ...]:
        """What `stage` reads: a built-in stage's fields, or a declared stage's `reads`."""
        own = self.declared.get(stage)
        if own is None:
            return STAGE_READS[stage]
        return tuple(own.get("reads") or METRIC_READS)


@dataclass
class Grade:
    """A judge's raw result before it is wrapped into the verdict dict."""

    score: float
    reason: str
    label: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


class Verdict(TypedDict):
    score: float
    label: str | None
    reason: str
    details: dict[str, Any]
    judge: str
    params: dict[str, Any]
    usage: dict[str, int | float] | None
    latency_ms: float
    calls: int


def criteria_sha(criteria: str) -> str:
    return hashlib.sha256(criteria.encode()).hexdigest()[:16]


class Judge(ABC):
    """One configured judge. Safe to call concurrently from one event loop."""

    id: str
    uses_model: bool = True  # False: no model calls, the verdict's usage is None
    # False: word overlap and the like, which cannot grade a suite's own criteria or metrics
    grades_free_criteria: bool = True

    def __init__(self, judge_id: str) -> None:
        self.id = judge_id
        self.stats = JudgeStats()

    def stage_params(self, stage: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """JSON-able parameters that change this stage's verdict."""
        opts = StageOptions.from_mapping(options)
        check_stage(stage, opts)
        own = opts.declared.get(stage)
        if own is not None:  # the suite's own: its criteria, or its metric's class
            if own.get("kind") == "metric":
                return {"metric": own.get("class")}
            return {"criteria_sha": criteria_sha(str(own.get("criteria") or ""))}
        if stage == "faithfulness":
            return {"strict": opts.strict}
        if stage == "correctness":
            return {"criteria_sha": criteria_sha(opts.correctness_criteria)}
        if stage == "rubric" and opts.rubric_scale != "binary":
            return {"scale": opts.rubric_scale}
        return {}

    def reads(self, stage: str, options: Mapping[str, Any] | None = None) -> tuple[str, ...]:
        opts = StageOptions.from_mapping(options)
        check_stage(stage, opts)
        return opts.reads(stage)

    async def evaluate(
        self, stage: str, data: JudgeInput, options: Mapping[str, Any] | None = None
    ) -> Verdict:
        """Judge one stage of one case. Raises JudgeError (after retries, or at once on auth)."""
        opts = StageOptions.from_mapping(options)
        check_stage(stage, opts)
        if stage in opts.declared and not self.grades_free_criteria:
            raise JudgeConfigError(
                f"the {self.id} judge cannot grade {stage!r}, a stage of the suite's own "
                '("judged_stages" or "metrics"): it has no model to read free criteria, and '
                'never gives a made-up score; set an LLM judge (e.g. "judge": '
                '"openai:gpt-4o-mini")'
            )
        _check_input(stage, data, opts)
        params = self.stage_params(stage, options)
        started = time.perf_counter()
        with metering() as meter:
            try:
                if "answer" in opts.reads(stage) and not data.answer.strip():
                    # deepeval refuses an empty answer; an empty answer is a real outcome, score 0.
                    grade = _empty_answer_grade(stage, data, opts)
                else:
                    grade = await self._grade(stage, data, opts)
                score = float(grade.score)
                if not 0.0 <= score <= 1.0:  # NaN included; never clamped into a pass
                    raise JudgeError(
                        f"{self.id}: the judge's score for {stage} is {score:g}, outside [0, 1]; "
                        "a score out of its scale is a judge error, never clamped"
                    )
            except JudgeError:
                self.stats.failures += 1
                raise
        return {
            "score": round(score, 6),  # stable in JSON diffs
            "label": grade.label,
            "reason": clipped_text(grade.reason or "", REASON_LIMIT),  # a judge's text: capped
            "details": grade.details,
            "judge": self.id,
            "params": params,
            "usage": meter.usage() if self.uses_model else None,
            "latency_ms": round((time.perf_counter() - started) * 1000, 1),
            "calls": meter.calls,
        }

    @abstractmethod
    async def _grade(self, stage: str, data: JudgeInput, options: StageOptions) -> Grade:
        """Judge one stage; `data` is already checked for the fields the stage needs."""

    def warm_up(self) -> None:  # noqa: B027 - optional hook, most judges need no preparation
        """Verdicts are due soon: start any slow preparation now, in the background."""

    async def aclose(self) -> None:
        """Release network clients. The judge may be used again afterwards (it reconnects)."""
        return None  # nothing to release for judges without a client


def check_stage(stage: str, options: StageOptions | None = None) -> None:
    """Raise JudgeInputError for a name that is neither a judged stage nor one the suite's
    options declare."""
    if stage not in STAGE_READS and (options is None or stage not in options.declared):
        declared = list(options.declared) if options is not None else []
        raise JudgeInputError(
            f"unknown judged stage {stage!r}; judged stages are: "
            f"{', '.join([*JUDGED_STAGES, *declared])}"
        )


def _check_input(stage: str, data: JudgeInput, options: StageOptions) -> None:
    reads = options.reads(stage)
    abstention_expected = stage == "answer_accuracy" and data.unanswerable
    needs_reference = "reference" in reads and not abstention_expected
    if "rubric" in reads and not data.rubric:
        raise JudgeInputError(
            f'stage {stage!r} needs rubric items; add "rubric" to the case or drop the stage '
            "from the suite"
        )
    if needs_reference and not (data.reference or "").strip():
        raise JudgeInputError(
            f'stage {stage!r} needs a reference (golden answer); add "reference" to the case '
            "or drop the stage from the suite"
        )


def _empty_answer_grade(stage: str, data: JudgeInput, options: StageOptions) -> Grade:
    if stage == "rubric":
        return rubric_grade(
            [(text, weight, 0.0, "the answer is empty") for text, weight in data.rubric],
            options.rubric_scale,
        )
    return Grade(0.0, "the answer is empty", "WRONG" if stage == "answer_accuracy" else None)


def grade_word(grade: float) -> str:
    """How a half-scale grade reads in a reason: `1 met`, `0.5 partly`, `0 unmet`."""
    return "1 met" if grade == 1.0 else "0.5 partly" if grade == 0.5 else "0 unmet"


def rubric_grade(graded: list[tuple[str, float, float, str]], scale: str = "binary") -> Grade:
    """A rubric verdict from (item, weight, grade, why) per item: score = the weighted mean of
    the grades. On the binary scale a grade is 0 or 1 and an item records `met`; on the half
    scale 0, 0.5 or 1, recorded as `grade`. A grade off the scale is a JudgeError."""
    allowed = RUBRIC_SCALES[scale]
    for text, _, grade, _ in graded:
        if grade not in allowed:
            raise JudgeError(
                f"rubric item {text!r} graded {grade:g}, not one of "
                f"{', '.join(f'{g:g}' for g in allowed)} ({scale} scale); a grade off the scale "
                "is a judge error, never a score"
            )
    total = sum(weight for _, weight, _, _ in graded)
    score = sum(weight * grade for _, weight, grade, _ in graded) / total
    if scale == "binary":
        unmet = [text for text, _, grade, _ in graded if not grade]
        reason = f"{len(graded) - len(unmet)} of {len(graded)} rubric items met" + (
            "; unmet: " + "; ".join(unmet) if unmet else ""
        )
        items = [
            {"item": text, "met": bool(grade), "reason": why} for text, _, grade, why in graded
        ]
        return Grade(score, reason, details={"items": items})
    short = [f"{grade_word(grade)}: {text}" for text, _, grade, _ in graded if grade < 1.0]
    credit = sum(grade for _, _, grade, _ in graded)
    reason = f"{credit:g} of {len(graded)} rubric items' credit" + (
        "; " + "; ".join(short) if short else ""
    )
    items = [{"item": text, "grade": grade, "reason": why} for text, _, grade, why in graded]
    return Grade(score, reason, details={"items": items, "scale": scale})
