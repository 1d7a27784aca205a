"""Scoring one case: every stage on the recorded trace, then the first failing gating stage."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.schema import Case
from ..core.suite_schema import Suite
from .stages import StageResult, skipped
from .stages.declared import stage_of
from .stages.shown import stage_details
from .turns import turn_units, verdict_name

if TYPE_CHECKING:
    from .context import SuiteContext


@dataclass(slots=True)
class CaseScores:
    results: list[tuple[str, StageResult, bool]]  # (stage, result, gating) in suite order
    first_failure: tuple[str, StageResult] | None
    # A conversation case: each scored turn's own scores, and the turn of first_failure.
    turns: list[tuple[int, CaseScores]] | None = None
    failure_turn: int | None = None
    # What was scored: a failure shows what its stage compared (a conversation: each turn's
    # scores hold that turn's case and trace).
    case: Case | None = None
    trace: dict[str, Any] | None = None
    suite: Suite | None = None


def score_case(
    suite: Suite,
    case: Case,
    trace: dict[str, Any],
    verdicts: Mapping[str, Any],
    gating: Sequence[str],
    report_only: Sequence[str],
) -> CaseScores:
    """Every stage is scored (so the table is complete); only gating stages can fail the case."""
    if case.turns is not None:
        return score_conversation(suite, case, trace, verdicts, gating, report_only)
    results = []
    first_failure = None
    for names, is_gating in ((gating, True), (report_only, False)):
        for name in names:
            result = stage_of(suite, name).score(case, trace, suite, verdicts.get(name))
            results.append((name, result, is_gating))
            # A report-only stage fails the case only when its own code could not score it.
            if (
                result.passed is False
                and first_failure is None
                and (is_gating or result.stage_error)
            ):
                first_failure = (name, result)
    return CaseScores(results, first_failure, case=case, trace=trace, suite=suite)


def score_runs(
    suite: Suite,
    case: Case,
    runs: Sequence[tuple[dict[str, Any], Mapping[str, Any]]],
    gating: Sequence[str],
    report_only: Sequence[str],
) -> tuple[CaseScores, dict[str, Any]]:
    """A case recorded with --eval-runs: every run scored. Returns the scores shown (the first
    failing run's, else run 1's) and the result's `runs` block: per run whether it passed, and
    per stage whether it passed in each run (None: it did not apply, or its judge failed)."""
    scored = [
        score_case(suite, case, trace, verdicts, gating, report_only) for trace, verdicts in runs
    ]
    return runs_summary(scored)


def runs_summary(scored: Sequence[CaseScores]) -> tuple[CaseScores, dict[str, Any]]:
    """Runs scored one by one (run 1 first): the scores shown (the first failing run's, else
    run 1's) and the result's `runs` block."""
    shown = next((s for s in scored if s.first_failure is not None), scored[0])
    passed = [s.first_failure is None for s in scored]
    stages: dict[str, list[bool | None]] = {}
    for scores in scored:
        for name, result, _ in scores.results:
            stages.setdefault(name, []).append(None if result.judge_error else result.passed)
    info = {
        "k": len(scored),
        "passed_runs": sum(passed),
        "passed": passed,
        "shown_run": scored.index(shown) + 1,
        "stages": stages,
    }
    return shown, info


def score_recording(
    ctx: SuiteContext,
    case: Case,
    trace: dict[str, Any],
    verdicts: Mapping[str, Any],
    later_runs: Sequence[Mapping[str, Any]] | None = None,
) -> tuple[CaseScores, dict[str, Any] | None]:
    """How the suite scores a case's recording, the one way every caller scores it: the item,
    a live batch's stop rule, and the description of a re-recording. With later runs
    (--eval-runs) every run is scored: the scores shown and the result's `runs` block."""
    if later_runs:
        runs = [(trace, verdicts)]
        runs += [(run["trace"], run.get("verdicts") or {}) for run in later_runs]
        scored = score_each_run(ctx, case, runs)
        return scored.shown, scored.runs
    return score_case(ctx.suite, case, trace, verdicts, ctx.gating, ctx.report_only), None


@dataclass(slots=True)
class RecordingScores:
    """A recording as the suite scores it: the scores shown, the result's `runs` block
    (--eval-runs; None for one run) and each run's own scores, run 1 first."""

    shown: CaseScores
    runs: dict[str, Any] | None
    each_run: list[CaseScores]


def score_each_run(
    ctx: SuiteContext,
    case: Case,
    runs: Sequence[tuple[dict[str, Any], Mapping[str, Any]]],
) -> RecordingScores:
    """`score_recording` of a recording given as its runs, (trace, verdicts) with run 1 first,
    keeping each run's scores (what a re-recording's changes compare)."""
    each = [
        score_case(ctx.suite, case, trace, verdicts, ctx.gating, ctx.report_only)
        for trace, verdicts in runs
    ]
    if len(each) == 1:
        return RecordingScores(each[0], None, each)
    shown, info = runs_summary(each)
    return RecordingScores(shown, info, each)


def runs_failure_message(scores: CaseScores, runs: Mapping[str, Any], whole: bool = False) -> str:
    """A failing --eval-runs case: how many runs passed, and the first failing run's table."""
    return (
        f"{runs['passed_runs']}/{runs['k']} runs passed (pass^k needs all); run "
        f"{runs['shown_run']}: " + failure_message(scores, whole)
    )


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def stage_table(scores: CaseScores) -> list[str]:
    """The per-stage table shown under a failing case (a conversation: one row a turn and
    stage)."""
    rows = [("stage", "score", "threshold", "pass", "reason")]
    parts = (
        [("", scores)]
        if scores.turns is None
        else [(f"turn {number} ", turn) for number, turn in scores.turns]
    )
    for prefix, part in parts:
        for name, result, gating in part.results:
            verdict = "-" if result.passed is None else "pass" if result.passed else "FAIL"
            if result.judge_error:
                verdict = "JUDGE ERROR"
            elif result.stage_error:
                verdict = "ERROR"
            elif result.unstable:
                verdict = "UNSTABLE"
            label = prefix + (name if gating else f"{name} (report only)")
            rows.append(
                (label, _cell(result.score), _cell(result.threshold), verdict, result.reason)
            )
    widths = [max(len(row[col]) for row in rows) for col in range(4)]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True))
        + "  "
        + row[4]
        for row in rows
    ]


def failure_details(scores: CaseScores, whole: bool = False) -> list[tuple[str, str]]:
    """What the first failing stage compared, as (label, text) lines: the calls made beside the
    expected ones, the retrieved ids beside the expected ones, the answer (stages/shown.py). Each
    value cut short unless `whole` (-vv). None for a judge error: the judge, not the system,
    failed."""
    if scores.first_failure is None or scores.first_failure[1].judge_error:
        return []
    unit = scores
    if scores.failure_turn is not None and scores.turns is not None:
        unit = dict(scores.turns)[scores.failure_turn]
    if unit.case is None or unit.trace is None or unit.suite is None:
        return []
    stage = stage_of(unit.suite, scores.first_failure[0])
    shown = scores.first_failure[1].shows  # what a user stage said it compared
    return stage_details(stage, unit.case, unit.trace, unit.suite, whole, shown)


def details_lines(details: Sequence[tuple[str, str]]) -> list[str]:
    """The failure's details as the terminal shows them: indented, the texts aligned."""
    width = max((len(label) for label, _ in details), default=0) + 1
    return [f"  {(label + ':').ljust(width)} {text}" for label, text in details]


def failure_message(scores: CaseScores, whole: bool = False) -> str:
    """What pytest shows for a failing case: its first failing stage and why, what that stage
    compared (cut short; `whole`: -vv), then every stage's row."""
    name, result = scores.first_failure  # type: ignore[misc]
    if scores.failure_turn is not None:
        name = f"turn {scores.failure_turn} {name}"
    details = failure_details(scores, whole)
    heading = f"first failing stage: {name} ({result.reason})"
    if result.stage_error:  # the stage's own code, not the system, failed
        heading = f"stage {name} could not score this case: {result.reason}"
    lines = [heading, *details_lines(details)]
    if not whole and details != failure_details(scores, whole=True):
        lines.append("  (values cut short: -vv shows them whole)")
    return "\n".join([*lines, "", *stage_table(scores)])


def result_stages(scores: CaseScores) -> dict[str, dict[str, Any]]:
    return {name: result.to_dict(gating) for name, result, gating in scores.results}


def score_conversation(
    suite: Suite,
    case: Case,
    trace: dict[str, Any],
    verdicts: Mapping[str, Any],
    gating: Sequence[str],
    report_only: Sequence[str],
) -> CaseScores:
    turns = []
    first_failure = None
    failure_turn = None
    for unit in turn_units(case, trace):
        own = {
            name: verdicts.get(verdict_name(unit.number, name)) for name in (*gating, *report_only)
        }
        scores = score_case(suite, unit.case, unit.trace, own, gating, report_only)
        turns.append((unit.number, scores))
        if first_failure is None and scores.first_failure is not None:
            first_failure, failure_turn = scores.first_failure, unit.number
    results = []
    for position, (name, _, is_gating) in enumerate(turns[0][1].results):
        per_turn = [(number, scores.results[position][1]) for number, scores in turns]
        results.append((name, summed_up(per_turn), is_gating))
    return CaseScores(
        results,
        first_failure,
        turns=turns,
        failure_turn=failure_turn,
        case=case,
        trace=trace,
        suite=suite,
    )


def summed_up(per_turn: list[tuple[int, StageResult]]) -> StageResult:
    """One stage over the turns: failing at its first failing turn, the mean score of the turns
    it applied to, every turn's reason."""
    applied = [(number, result) for number, result in per_turn if result.passed is not None]
    if not applied:
        return skipped(per_turn[-1][1].reason if per_turn else "no turn scored")
    scores = [result.score for _, result in applied if result.score is not None]
    mean = sum(scores) / len(scores) if scores else None
    last = applied[-1][1]
    # --eval-judge-repeats: the stage is unstable when unstable verdicts alone decide it (every
    # failing turn's, or on a pass any turn's), as the summary and the baseline gate read it.
    repeated = [result for _, result in applied if result.repeat_scores is not None]
    failing_turns = [(number, result) for number, result in applied if result.passed is False]
    failing = [result for _, result in failing_turns]
    unstable = bool(repeated) and (
        all(r.unstable for r in failing) if failing else any(r.unstable for r in repeated)
    )
    deciding = failing[0] if failing else next((r for r in repeated if r.unstable), None)
    repeat_scores = (deciding or (repeated[-1] if repeated else last)).repeat_scores
    if failing_turns:
        number, result = failing_turns[0]
        return StageResult(
            mean,
            False,
            f"turn {number}: {result.reason}",
            result.threshold,
            result.label,
            result.metrics,
            result.judge_error,
            repeat_scores,
            unstable,
            result.stage_error,
        )
    reason = "; ".join(f"turn {number}: {result.reason}" for number, result in applied)
    return StageResult(
        mean,
        True,
        reason,
        last.threshold,
        last.label,
        last.metrics,
        repeat_scores=repeat_scores,
        unstable=unstable,
    )
