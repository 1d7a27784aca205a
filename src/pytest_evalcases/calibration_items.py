"""Collection of a calibration suite, and its items: one pytest item per judge test case.

An item passes when every repeat of its verdict lands on the expected side of the stage's rule
(its threshold, or its labels); its failure message lists the repeat scores.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import ValidationError

from .collect import EvalItem, SuiteErrorItem
from .core.errors import CaseFileError, EvalCaseError, JudgeFailure, StageFailure
from .core.names import case_ids, shown_name, unsafe_id_reason
from .core.schema import Case, Suite, format_validation_error
from .domain.calibration_schema import CalibrationCase, CalibrationSuite

if TYPE_CHECKING:
    from .engine.calibration import CalibrationRecording
    from .engine.recording import JudgeBinding
    from .session import EvalSession


@dataclass(slots=True)
class CalibrationContext:
    """What the items of one calibration suite share."""

    path: Path
    suite: CalibrationSuite
    cassette_dir: str
    rootdir: Path
    judge_spec: str | None
    judge_from: str | None


@dataclass(slots=True)
class CalibrationTarget:
    """One case with what judging and scoring it need: the case as the judge sees it, the stage
    options it is judged with, and the pass rule (a one-stage Suite) its repeats are held to."""

    case: CalibrationCase
    as_case: Case
    options: dict[str, Any]
    rule: Suite

    @classmethod
    def of(cls, suite: CalibrationSuite, case: CalibrationCase) -> CalibrationTarget:
        from .domain.judging import judge_options

        chosen = suite.options_for(case)
        rule = Suite(
            name=suite.name,
            stages=[case.stage],
            threshold=chosen["threshold"],
            strict=chosen.get("strict", False),
            accept_partial=chosen.get("accept_partial", False),
            correctness_criteria=chosen.get("correctness_criteria"),
            cases=[],
        )
        as_case = Case(
            id=case.id,
            input=case.input,
            reference=case.reference,
            unanswerable=case.unanswerable,
            xfail=case.xfail,
        )
        return cls(case, as_case, judge_options(rule), rule)


def collect_calibration(
    parent: pytest.File, state: EvalSession, raw: dict[str, Any]
) -> Iterator[pytest.Item]:
    """The items of a calibration suite file (`raw`, parsed): a file-level problem is one item
    that errors in setup, a case-level problem errors only that case."""
    nodeid = parent.nodeid
    if isinstance(raw.get("name"), str):
        state.claim_suite_name(raw["name"], nodeid)
    try:
        ctx = _context(parent, state, raw)
    except CaseFileError as exc:
        yield SuiteErrorItem.from_parent(
            parent, name="suite", message=str(exc), suite_name=parent.path.stem, index=-1
        )
        return
    raw_cases, ctx.suite.cases = ctx.suite.cases, []
    state.collected_suites[parent.path] = (ctx.suite.name, case_ids(raw_cases))
    seen: set[str] = set()
    for index, raw_case in enumerate(raw_cases):
        yield _item(parent, ctx, index, raw_case, seen, state)


def _context(parent: pytest.File, state: EvalSession, raw: dict[str, Any]) -> CalibrationContext:
    from .domain.judging import JUDGE_INI, JUDGE_OPTION, JUDGE_SUITE
    from .judges import JudgeConfigError
    from .judges.spec import canonical_judge

    nodeid = parent.nodeid
    try:
        suite = CalibrationSuite.model_validate(raw)
    except ValidationError as exc:
        raise CaseFileError(
            f"{nodeid}: invalid calibration suite\n{format_validation_error(exc)}"
        ) from None
    reason = unsafe_id_reason(suite.name)
    if reason:
        raise CaseFileError(
            f"{nodeid}: suite name {shown_name(suite.name)} cannot name a "
            f"folder: {reason}; rename the suite"
        )
    try:
        suite_judge = canonical_judge(suite.judge) if suite.judge else None
    except JudgeConfigError as exc:
        raise CaseFileError(f'{nodeid}: "judge": {exc}') from None
    judge_from = (
        JUDGE_OPTION
        if state.judge_override
        else JUDGE_SUITE
        if suite_judge
        else JUDGE_INI
        if state.default_judge
        else None
    )
    return CalibrationContext(
        path=parent.path,
        suite=suite,
        cassette_dir=str(state.cassette_root / suite.name),
        rootdir=state.rootdir,
        judge_spec=state.judge_override or suite_judge or state.default_judge,
        judge_from=judge_from,
    )


def _item(
    parent: pytest.File,
    ctx: CalibrationContext,
    index: int,
    raw: Any,
    seen: set[str],
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
    if isinstance(raw_id, str) and raw_id and not unsafe_id_reason(raw_id):
        if raw_id in seen:
            return error(
                f"{raw_id}-duplicate",
                f"duplicate case id {raw_id!r} (cases[{index}]); "
                "the first one runs, rename this one",
            )
        seen.add(raw_id)
    try:
        case = CalibrationCase.model_validate(raw)
    except ValidationError as exc:
        label = raw_id if isinstance(raw_id, str) and raw_id else f"cases[{index}]"
        return error(
            str(label) if not unsafe_id_reason(str(label)) else f"cases[{index}]",
            f"invalid calibration case {label}\n"
            + format_validation_error(exc, prefix=f"cases[{index}]"),
        )
    unsafe = unsafe_id_reason(case.id)
    if unsafe:
        return error(
            f"cases[{index}]",
            f"case id {shown_name(case.id)} (cases[{index}]) cannot "
            f"name a cassette file: {unsafe}; rename it",
        )
    target = CalibrationTarget.of(ctx.suite, case)
    item = CalibrationItem.from_parent(parent, name=case.id, ctx=ctx, target=target, index=index)
    item.add_marker(state.marker("calibration"))
    if case.skip:
        item.add_marker(pytest.mark.skip(reason=case.skip))
    if case.xfail:
        item.add_marker(pytest.mark.xfail(reason=case.xfail, raises=StageFailure))
    return item


class CalibrationItem(EvalItem):
    """One judge test case: setup obtains its verdicts, runtest holds them to `expect`."""

    is_eval_item = True

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
        from .core.modes import REPLAY
        from .session import get_session

        state = get_session(self.config)
        others = state.suite_conflict(self.ctx.suite.name, self.parent.nodeid)  # type: ignore
        if others:
            raise CaseFileError(
                f"{self.parent.nodeid}: suite name {self.ctx.suite.name!r} is also declared by "  # type: ignore
                f"{', '.join(others)}; suite names name the cassette folders, so rename the "
                "suite in one of these files"
            )
        binding = self._judge(state, live=state.mode != REPLAY)
        if state.mode == REPLAY:
            from .engine.calibration import replay

            self.recording = replay(self.ctx, self.target, binding)
        else:
            self.recording = self._record(state, binding)

    def _judge(self, state: EvalSession, live: bool) -> JudgeBinding:
        if live and self.ctx.judge_spec is None:
            raise EvalCaseError(
                f"calibration suite {self.ctx.suite.name!r} has no judge; set --eval-judge, "
                '"judge" in the suite, or eval_judge in the pytest ini'
            )
        return state.judge_binding(self.ctx.judge_spec, live)

    def _record(self, state: EvalSession, binding: JudgeBinding) -> CalibrationRecording:
        """Judge now, in an event loop of this item's own (the judge's clients belong to it)."""
        import asyncio

        from .core.modes import LIVE
        from .engine.calibration import record

        async def judged() -> CalibrationRecording:
            try:
                return await record(
                    self.ctx, self.target, binding, state.mode == LIVE, state.dry_run
                )
            finally:
                if binding.live is not None:
                    await binding.live.aclose()

        return asyncio.run(judged())

    def runtest(self) -> None:
        from .domain.calibration_scoring import RIGHT, case_message, case_status, spread
        from .domain.judging import repeats_of
        from .domain.stages.judged import score_verdict

        assert self.recording is not None
        verdict = self.recording.verdict
        case, stage = self.target.case, self.target.case.stage
        if verdict.get("error"):
            raise JudgeFailure(f"judge error for {stage}: {verdict['error']}")
        repeats = repeats_of(verdict)
        scores = [float(repeat.get("score") or 0.0) for repeat in repeats]
        rule = self.target.rule
        says_fail = [not score_verdict(stage, rule, repeat).passed for repeat in repeats]
        status = case_status(case.expect, says_fail)
        self.scores = {
            "stage": stage,
            "judge": verdict.get("judge"),
            "expect": case.expect,
            "defect": case.defect,
            "scores": scores,
            "labels": [repeat.get("label") for repeat in repeats],
            "status": status,
            "spread": spread(scores),
        }
        if status not in RIGHT:
            raise StageFailure(case_message(stage, scores, status, case.defect))

    def result_for(
        self, outcome: str, with_detail: bool, exc: BaseException | None
    ) -> dict[str, Any]:
        """The per-case result dict (see results.case_result) of a calibration case."""
        from .results import error_summary

        recording = self.recording
        failure = None
        if exc is not None:
            failure = {
                "stage": self.target.case.stage if isinstance(exc, StageFailure) else None,
                "reason": error_summary(exc),
            }
        info: dict[str, Any] = {"status": outcome if outcome in ("stale", "missing") else None}
        if recording is not None:
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
    from .domain.judging import repeats_of

    return {str(v["judge"]) for v in repeats_of(verdict) if isinstance(v, dict) and v.get("judge")}
