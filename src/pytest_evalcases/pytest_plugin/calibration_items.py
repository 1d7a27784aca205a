"""Collection of a calibration suite, and its items: one pytest item per judge test case.

An item passes when every repeat of its verdict lands on the expected side of the stage's rule
(its threshold, or its labels); its failure message lists the repeat scores.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import ValidationError

from ..core.errors import CaseFileError, EvalCaseError, JudgeFailure, StageFailure
from ..core.event_loops import run_interruptible
from ..core.modes import RunMode
from ..core.names import case_ids, shown_name, unsafe_id_reason
from ..core.repeats import repeats_of
from ..core.validation import format_validation_error
from ..domain.calibration_schema import CalibrationCase
from ..domain.calibration_scoring import (
    JUDGE_ERROR,
    RIGHT,
    case_message,
    case_status,
    judged_repeats,
    spread,
)
from ..domain.context import CalibrationContext, CalibrationTarget
from ..engine.calibration import record, replay
from .case_result import error_summary
from .items import EvalItem, SuiteErrorItem
from .session import get_session
from .suite_contexts import calibration_context

if TYPE_CHECKING:
    from ..domain.stages import StageResult
    from ..engine.calibration import CalibrationRecording
    from ..engine.recording import JudgeBinding
    from .session import EvalSession


def collect_calibration(
    parent: pytest.File, state: EvalSession, raw: dict[str, Any]
) -> Iterator[pytest.Item]:
    """The items of a calibration suite file (`raw`, parsed): a file-level problem is one item
    that errors in setup, a case-level problem errors only that case."""
    nodeid = parent.nodeid
    if isinstance(raw.get("name"), str):
        state.claim_suite_name(raw["name"], nodeid)
    try:
        ctx = calibration_context(state, raw, parent.path, parent.nodeid)
    except CaseFileError as exc:
        yield SuiteErrorItem.from_parent(
            parent, name="suite", message=str(exc), suite_name=parent.path.stem, index=-1
        )
        return
    raw_cases, ctx.suite.cases = ctx.suite.cases, []
    state.collected_suites[parent.path] = (ctx.suite.name, case_ids(raw_cases))
    seen: set[str] = set()
    rules: dict[Any, Any] = {}  # the suite's pass rules, one per stage and options
    for index, raw_case in enumerate(raw_cases):
        yield _item(parent, ctx, index, raw_case, seen, rules, state)


def _item(
    parent: pytest.File,
    ctx: CalibrationContext,
    index: int,
    raw: Any,
    seen: set[str],
    rules: dict[Any, Any],
    state: EvalSession,
) -> pytest.Item:
    def error(name: str, message: str) -> SuiteErrorItem:
        return SuiteErrorItem.from_parent(
            parent,
            name=name,
            message=f"{parent.nodeid}: {message}",
            suite_name=ctx.suite.name,
            index=index,
        )

    if not isinstance(raw, dict):
        return error(
            f"cases[{index}]",
            f"cases[{index}] is not an object: a calibration case "
            'is {"id": ..., "stage": ..., "expect": "fail" or "pass", ...}',
        )
    raw_id = raw.get("id")
    unsafe = unsafe_id_reason(raw_id) if isinstance(raw_id, str) else None
    if isinstance(raw_id, str) and raw_id and not unsafe:
        if raw_id in seen:
            return error(
                f"{raw_id}-duplicate",
                f"duplicate case id {raw_id!r} (cases[{index}]); "
                "the first one runs, rename this one",
            )
        seen.add(raw_id)
    try:
        case = CalibrationCase.model_validate(raw, context={"declared": ctx.suite.judged_stages})
    except ValidationError as exc:
        label = raw_id if isinstance(raw_id, str) and raw_id else f"cases[{index}]"
        return error(
            str(label) if not unsafe_id_reason(str(label)) else f"cases[{index}]",
            f"invalid calibration case {label}\n"
            + format_validation_error(exc, prefix=f"cases[{index}]"),
        )
    if unsafe:  # case.id is raw_id, now known to be a valid string
        return error(
            f"cases[{index}]",
            f"case id {shown_name(case.id)} (cases[{index}]) cannot "
            f"name a cassette file: {unsafe}; rename it",
        )
    target = CalibrationTarget.of(ctx.suite, case, rules)
    item = CalibrationItem.from_parent(parent, name=case.id, ctx=ctx, target=target, index=index)
    item.extra_keyword_matches.add(ctx.suite.name)  # -k <suite name> selects its cases
    item.add_marker(state.marker("calibration"))
    if case.skip:
        item.add_marker(pytest.mark.skip(reason=case.skip))
    if case.xfail:
        item.add_marker(pytest.mark.xfail(reason=case.xfail, raises=StageFailure))
    return item


class CalibrationItem(EvalItem):
    """One judge test case: setup obtains its verdicts, runtest holds them to `expect`."""

    is_eval_item = True
    is_calibration = True  # the live batch judges it beside the eval cases

    def __init__(
        self, *, ctx: CalibrationContext, target: CalibrationTarget, index: int, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.ctx = ctx
        self.target = target
        self.case = target.as_case  # what the outcome rules read (`xfail`)
        self.index = index
        self.recording: CalibrationRecording | None = None
        self.scores: dict[str, Any] | None = None  # the `calibration` block of the result

    def setup(self) -> None:

        state = get_session(self.config)
        conflict = self.suite_conflict(state)
        if conflict is not None:
            raise conflict
        live = state.settings.mode != RunMode.REPLAY
        binding = state.calibration_binding(self.ctx, live)
        if not live:
            self.recording = replay(self.ctx, self.target, binding)
            return
        # A live run without xdist judged it in its batch, beside the other cases.
        batch = getattr(state.source, "calibration_for", None)
        self.recording = (batch and batch(self)) or self._record(state, binding)

    def _record(self, state: EvalSession, binding: JudgeBinding) -> CalibrationRecording:
        """Judge now, in an event loop of this item's own (the judge's clients belong to it)."""

        async def judged() -> CalibrationRecording:
            try:
                return await record(
                    self.ctx,
                    self.target,
                    binding,
                    state.settings.mode == RunMode.LIVE,
                    state.settings.dry_run,
                )
            finally:
                if binding.live is not None:
                    await binding.live.aclose()

        return run_interruptible(judged())

    def runtest(self) -> None:

        assert self.recording is not None
        verdict = self.recording.verdict
        case, stage = self.target.case, self.target.case.stage
        if verdict.get("error"):
            self.scores = self._block(verdict, [], [], JUDGE_ERROR)
            raise JudgeFailure(f"judge error for {stage}: {verdict['error']}")
        repeats, results = judged_repeats(stage, self.target.rule, verdict)
        status = case_status(case.expect, [not result.passed for result in results])
        self.scores = self._block(verdict, repeats, results, status)
        scores = self.scores["scores"]
        if status not in RIGHT:
            raise StageFailure(case_message(stage, scores, status, case.defect))

    def _block(
        self,
        verdict: dict[str, Any],
        repeats: list[dict[str, Any]],
        results: list[StageResult],
        status: str,
    ) -> dict[str, Any]:
        """The result's `calibration` block: the call on the item, and what the agreement with
        people reads (its category, the threshold of a score rule, whether every repeat was
        graded, the reason of the first repeat on the wrong side of its label, else of the
        first repeat)."""
        case = self.target.case
        scores = [float(repeat.get("score") or 0.0) for repeat in repeats]
        wrong = next(
            (
                repeat
                for repeat, result in zip(repeats, results, strict=True)
                if result.passed != (case.expect == "pass")
            ),
            None,
        )
        block: dict[str, Any] = {
            "stage": case.stage,
            "judge": verdict.get("judge"),
            "expect": case.expect,
            "defect": case.defect,
            "scores": scores,
            "labels": [repeat.get("label") for repeat in repeats],
            "status": status,
            "spread": spread(scores),
            "category": case.category,
            "threshold": results[0].threshold if results else None,
            "ungraded": status == JUDGE_ERROR or any(result.judge_error for result in results),
            "reason": verdict.get("error") or (wrong or verdict).get("reason") or "",
        }
        stated = getattr(self.ctx.suite, "human_agreement", None)  # set by the importers
        if stated:
            block["human_agreement"] = (
                stated.model_dump() if hasattr(stated, "model_dump") else dict(stated)
            )
        return block

    def result_for(
        self, outcome: str, with_detail: bool, exc: BaseException | None
    ) -> dict[str, Any]:
        """The per-case result dict (see case_result.case_result) of a calibration case."""

        recording = self.recording
        failure = None
        if exc is not None:
            failure = {
                "stage": self.target.case.stage if isinstance(exc, StageFailure) else None,
                "reason": error_summary(exc),
            }
        info: dict[str, Any] = {"status": outcome if outcome in ("stale", "missing") else None}
        if getattr(self, "not_run", None):  # the live batch stopped before judging it
            info = {"status": "not_run", "note": self.not_run}
        elif recording is not None:
            info = {
                "status": recording.status,
                "recorded_at": recording.recorded_at,
                "note": recording.note,
                "judges": sorted(_judges(recording.verdict)),
                "redacted": 0,
            }
            if recording.change is not None:
                info["change"] = recording.change
        return {
            "nodeid": self.nodeid,
            "suite": self.ctx.suite.name,
            "id": self.target.case.id,
            "file": self.nodeid.split("::", 1)[0],
            "index": self.index,
            # a labelled set's category stays in the calibration row (figures per category), out
            # of the eval cases' category tables, whose pass rates it would mix with agreement
            "category": None,
            "group": None,
            "kind": "calibration",
            "outcome": outcome,
            "first_failure": failure,
            "stages": {},
            "recording": info,
            "calibration": self.scores,
        }

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, EvalCaseError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{self.ctx.suite.name}::{self.target.case.id} (calibration)"


def _judges(verdict: dict[str, Any]) -> set[str]:

    return {str(v["judge"]) for v in repeats_of(verdict) if isinstance(v, dict) and v.get("judge")}
