"""engine/live_plan (issue 28): what a live case runs and judges, decided from the case, its old
recording and the mode, without a pytest session, a system or a judge."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_evalcases.core.errors import MissingRecording, StaleRecording
from pytest_evalcases.core.modes import RunMode
from pytest_evalcases.core.schema import Case, validate_case
from pytest_evalcases.domain.context import SuiteContext
from pytest_evalcases.domain.stages.registry import STAGES
from pytest_evalcases.domain.verdicts import verdict_key
from pytest_evalcases.engine.live_plan import (
    DueVerdict,
    OldRecording,
    RecordedRun,
    VerdictPlan,
    apply_outcomes,
    judge_notes,
    plan_runs,
    plan_verdicts,
)
from pytest_evalcases.engine.recording import JudgeBinding
from pytest_evalcases.store.cassette import Cassette, build_cassette

from .geo_suite import JUDGE, JUDGED, KEY, TRACE
from .geo_suite import geo_context as _context
from .geo_suite import verdict as _verdict
from .geo_suite import verdicts as _verdicts


def _cassette(
    ctx: SuiteContext,
    case: Case,
    verdicts: dict[str, Any] | None = None,
    key: dict[str, str] = KEY,
    later_runs: list[dict[str, Any]] | None = None,
) -> Cassette:
    found = _verdicts(ctx, case) if verdicts is None else verdicts
    return build_cassette("geo", case.id, key, TRACE, found, later_runs=later_runs)


def _as_read(doc: Cassette) -> OldRecording:
    """What engine/live reads for --live-stale / --live-judges: the cassette, and the same
    less its hand-edited verdicts to build on."""
    return OldRecording(doc, replace(doc, verdicts=doc.usable_verdicts()))


def _due_names(plan: VerdictPlan) -> list[tuple[int, str]]:
    return [(due.run, due.name) for due in plan.due]


def test_live_stale_reuses_a_current_trace_and_judges_nothing(
    ctx: SuiteContext, case: Case
) -> None:
    doc = _cassette(ctx, case)
    plan = plan_runs(ctx, case, KEY, RunMode.LIVE_STALE, _as_read(doc))
    assert plan.reused is not None and [run.trace for run in plan.reused] == [TRACE]
    assert plan.wanted == 1 and plan.key == KEY
    verdicts = plan_verdicts(ctx, case, JUDGE, RunMode.LIVE_STALE, plan.reused, plan.fallbacks)
    assert verdicts.due == ()
    assert verdicts.kept == (doc.verdicts,)


def test_a_changed_key_runs_the_system_again(ctx: SuiteContext, case: Case) -> None:
    doc = _cassette(ctx, case)
    today = {**KEY, "system": "cccc3333"}
    plan = plan_runs(ctx, case, today, RunMode.LIVE_STALE, _as_read(doc))
    assert plan.reused is None and plan.wanted == 1 and plan.key == today
    assert plan.http is None
    # what a failed judge falls back on: the verdicts recorded before, on the trace they judged
    assert [(kept.verdicts, kept.judged_on) for kept in plan.fallbacks] == [(doc.verdicts, TRACE)]


def test_live_reruns_everything(tmp_path: Path, ctx: SuiteContext, case: Case) -> None:
    # a recording of three runs: --live records one (--eval-runs says otherwise)
    later = [{"trace": TRACE, "verdicts": _verdicts(ctx, case)}] * 2
    doc = _cassette(ctx, case, later_runs=later)
    plan = plan_runs(ctx, case, KEY, RunMode.LIVE, OldRecording(doc, None))
    assert plan.reused is None and plan.wanted == 1
    three = _context(tmp_path, runs=3)
    assert plan_runs(three, case, KEY, RunMode.LIVE, OldRecording(doc, None)).wanted == 3
    # every verdict is judged again, even those that hold; each may fall back on the old one
    run = RecordedRun(dict(TRACE))
    verdicts = plan_verdicts(ctx, case, JUDGE, RunMode.LIVE, [run], plan.fallbacks)
    assert _due_names(verdicts) == [(0, "faithfulness"), (0, "correctness")]
    assert [due.fallback for due in verdicts.due] == [doc.verdicts[name] for name in JUDGED]
    # a run whose verdicts all hold is judged again all the same
    held = RecordedRun(TRACE, doc.verdicts, TRACE)
    again = plan_verdicts(ctx, case, JUDGE, RunMode.LIVE, [held], plan.fallbacks)
    assert _due_names(again) == [(0, "faithfulness"), (0, "correctness")]
    assert plan_verdicts(ctx, case, JUDGE, RunMode.LIVE_STALE, [held], plan.fallbacks).due == ()


def test_live_judges_on_a_stale_key_raises(ctx: SuiteContext, case: Case) -> None:
    doc = _cassette(ctx, case)
    today = {**KEY, "case": "dddd4444"}
    with pytest.raises(StaleRecording) as stale:
        plan_runs(ctx, case, today, RunMode.LIVE_JUDGES, _as_read(doc))
    message = str(stale.value)
    assert message.startswith("stale recording: case changed")
    assert message.endswith("re-record with --live (--live-judges re-judges a current trace)")
    with pytest.raises(MissingRecording, match=r"no recording for geo::capital to re-judge; "):
        plan_runs(ctx, case, KEY, RunMode.LIVE_JUDGES, OldRecording(None, None))


def test_another_count_of_runs(tmp_path: Path, case: Case) -> None:
    three = _context(tmp_path, runs=3)
    doc = _cassette(three, case)
    # --live-stale: the trace is current but there is one run of three: all three run again
    plan = plan_runs(three, case, KEY, RunMode.LIVE_STALE, _as_read(doc))
    assert plan.reused is None and plan.wanted == 3
    # --live-judges runs no system: it says so
    with pytest.raises(StaleRecording, match=r"runs changed \(1 -> 3\); re-record with --live$"):
        plan_runs(three, case, KEY, RunMode.LIVE_JUDGES, _as_read(doc))
    # without --eval-runs, the count the recording holds is kept, and every run reused
    later = [{"trace": {**TRACE, "answer": "Paris."}, "verdicts": {}}]
    two = _cassette(three, case, later_runs=later)
    plan = plan_runs(_context(tmp_path), case, KEY, RunMode.LIVE_STALE, _as_read(two))
    assert plan.reused is not None and [run.trace["answer"] for run in plan.reused] == [
        "Paris",
        "Paris.",
    ]


def test_which_verdicts_are_due(ctx: SuiteContext, case: Case) -> None:
    verdicts = _verdicts(ctx, case)
    verdicts["faithfulness"] = {**verdicts["faithfulness"], "pending": True, "score": None}
    del verdicts["correctness"]  # missing
    plan = plan_runs(ctx, case, KEY, RunMode.LIVE_STALE, _as_read(_cassette(ctx, case, verdicts)))
    assert plan.reused is not None
    due = plan_verdicts(ctx, case, JUDGE, RunMode.LIVE_STALE, plan.reused, plan.fallbacks)
    assert _due_names(due) == [(0, "faithfulness"), (0, "correctness")]
    # a pending verdict is never kept in place of a new one; a missing one has nothing to keep
    assert [d.fallback for d in due.due] == [None, None]


def test_an_edited_verdict_is_due_and_never_kept(ctx: SuiteContext, case: Case) -> None:
    doc = _cassette(ctx, case)
    doc.verdicts["correctness"]["score"] = 0.0  # edited by hand: its hash no longer matches
    plan = plan_runs(ctx, case, KEY, RunMode.LIVE_STALE, _as_read(doc))
    assert plan.reused is not None
    due = plan_verdicts(ctx, case, JUDGE, RunMode.LIVE_STALE, plan.reused, plan.fallbacks)
    assert _due_names(due) == [(0, "correctness")]
    assert due.due[0].fallback is None
    assert due.kept == ({"faithfulness": doc.verdicts["faithfulness"]},)
    # nor does a new trace fall back on it (the system ran again: another key)
    plan = plan_runs(ctx, case, {**KEY, "system": "ffff6666"}, RunMode.LIVE_STALE, _as_read(doc))
    due = plan_verdicts(ctx, case, JUDGE, RunMode.LIVE_STALE, [RecordedRun(TRACE)], plan.fallbacks)
    assert [(d.name, d.fallback) for d in due.due] == [
        ("faithfulness", doc.verdicts["faithfulness"]),
        ("correctness", None),
    ]


def test_a_verdict_of_another_judge_is_due_and_falls_back(ctx: SuiteContext, case: Case) -> None:
    doc = _cassette(ctx, case)
    plan = plan_runs(ctx, case, KEY, RunMode.LIVE_STALE, _as_read(doc))
    assert plan.reused is not None
    other = JudgeBinding("openai:gpt-4o-mini", "2")
    due = plan_verdicts(ctx, case, other, RunMode.LIVE_STALE, plan.reused, plan.fallbacks)
    assert _due_names(due) == [(0, "faithfulness"), (0, "correctness")]
    # made under today's key; the verdict of the other judge still holds for the trace
    assert due.due[0].key == verdict_key(
        STAGES["faithfulness"], case, ctx.judge_options, other.id, other.version
    )
    assert [d.fallback for d in due.due] == [doc.verdicts[name] for name in JUDGED]


def test_another_answer_or_context_leaves_no_fallback(ctx: SuiteContext, case: Case) -> None:
    doc = _cassette(ctx, case)
    plan = plan_runs(ctx, case, {**KEY, "system": "eeee5555"}, RunMode.LIVE_STALE, _as_read(doc))
    new_answer = RecordedRun({**TRACE, "answer": "Lyon"})
    due = plan_verdicts(ctx, case, JUDGE, RunMode.LIVE_STALE, [new_answer], plan.fallbacks)
    assert [(d.name, d.fallback) for d in due.due] == [
        ("faithfulness", None),
        ("correctness", None),
    ]
    # another context: only the stage that reads it loses its fallback
    new_context = RecordedRun({**TRACE, "context": ["Paris is in France."]})
    due = plan_verdicts(ctx, case, JUDGE, RunMode.LIVE_STALE, [new_context], plan.fallbacks)
    assert [(d.name, d.fallback) for d in due.due] == [
        ("faithfulness", None),
        ("correctness", doc.verdicts["correctness"]),
    ]


def test_an_offline_trace_is_judged_where_it_differs(ctx: SuiteContext, case: Case) -> None:
    # --replay-http --live-judges: today's trace from recorded HTTP, whatever the key says
    doc = _cassette(ctx, case)
    today = {**TRACE, "answer": "Paris, France"}
    old = OldRecording(doc, replace(doc, trace=today), judged_on=doc.trace)
    plan = plan_runs(ctx, case, {"other": "key"}, RunMode.LIVE_JUDGES, old)
    assert plan.reused is not None and plan.reused[0].trace == today
    due = plan_verdicts(ctx, case, JUDGE, RunMode.LIVE_JUDGES, plan.reused, plan.fallbacks)
    assert _due_names(due) == [(0, "faithfulness"), (0, "correctness")]
    assert [d.fallback for d in due.due] == [None, None]  # they judged another answer


def test_later_runs_are_planned_run_by_run(ctx: SuiteContext, case: Case) -> None:
    later = [{"trace": TRACE, "verdicts": {"faithfulness": _verdict(ctx, case, "faithfulness")}}]
    plan = plan_runs(
        ctx, case, KEY, RunMode.LIVE_STALE, _as_read(_cassette(ctx, case, None, KEY, later))
    )
    assert plan.reused is not None and len(plan.reused) == 2
    due = plan_verdicts(ctx, case, JUDGE, RunMode.LIVE_STALE, plan.reused, plan.fallbacks)
    assert _due_names(due) == [(1, "correctness")]


def _due(name: str, run: int = 0, fallback: Any = None) -> DueVerdict:
    case = validate_case({"id": "capital", "input": "q", "reference": "r"})
    return DueVerdict(run, name, STAGES[name], case, TRACE, {"judge": "x"}, fallback)


def test_outcomes_fall_back_or_stay_pending() -> None:
    recorded = {"score": 0.9, "key": {"judge": "old"}}
    plan = VerdictPlan(
        ({"exact": 1}, {}),
        (
            _due("faithfulness", 0, fallback=recorded),
            _due("correctness", 0),
            _due("faithfulness", 1),
        ),
    )
    usage = {"usage": {"cost_usd": 0.25}}
    outcomes = [
        {"error": "timeout", **usage},
        {"error": "HTTP 500"},
        {"score": 1.0, **usage},
    ]
    judged = apply_outcomes(plan, outcomes, run_count=2)
    assert judged.verdicts[0] == {
        "exact": 1,
        "faithfulness": recorded,
        "correctness": {"error": "HTTP 500", "pending": True, "score": None},
    }
    assert judged.verdicts[1] == {"faithfulness": {"score": 1.0, **usage}}
    assert plan.kept == ({"exact": 1}, {})  # the plan is left as it was
    assert outcomes[1] == {"error": "HTTP 500"}
    assert judged.not_rejudged == ("faithfulness (run 1): timeout",)
    assert judged.pending == ("correctness (run 1): HTTP 500",)
    assert judged.kept == frozenset({"faithfulness"})
    assert judged.costs == (0.25, 0.0, 0.25)

    notes = judge_notes(judged, dry_run=False)
    assert notes.text == (
        "judge error (correctness (run 1): HTTP 500); the new trace was saved with the verdict "
        "pending: complete it with --live-judges; not re-judged: faithfulness (run 1): timeout; "
        "the verdict recorded before was kept"
    )
    assert (notes.pending, notes.not_rejudged) == (["correctness"], ["faithfulness"])
    dry = judge_notes(judged, dry_run=True)
    assert dry.text.startswith("judge error (correctness (run 1): HTTP 500); not re-judged: ")
    one_run = apply_outcomes(VerdictPlan(({},), (_due("correctness"),)), [{"error": "x"}], 1)
    assert one_run.pending == ("correctness: x",)
    assert judge_notes(apply_outcomes(VerdictPlan(({},), ()), [], 1), False).text == ""


def test_a_turn_judged_after_another_conversation_is_due(tmp_path: Path) -> None:
    # a turn's verdict judged the turns before it: its key does not say so, its input does
    ctx = _context(tmp_path, stages=("correctness",))
    chat = validate_case(
        {"id": "chat", "turns": ["Hi", "Capital of France?"], "reference": "Paris"}
    )
    recorded = {"answer": "Paris", "turns": [{"answer": "Hello"}, {"answer": "Paris"}]}
    key = verdict_key(STAGES["correctness"], chat, ctx.judge_options, JUDGE.id, JUDGE.version)
    verdict = {"score": 1.0, "reason": "holds", "key": key}
    doc = build_cassette("geo", "chat", KEY, recorded, {"turn2.correctness": verdict})

    def due_for(today: dict[str, Any]) -> list[tuple[str, Any]]:
        old = OldRecording(doc, replace(doc, trace=today), judged_on=doc.trace)
        plan = plan_runs(ctx, chat, KEY, RunMode.LIVE_JUDGES, old)
        assert plan.reused is not None
        due = plan_verdicts(ctx, chat, JUDGE, RunMode.LIVE_JUDGES, plan.reused, plan.fallbacks)
        return [(d.name, d.fallback) for d in due.due]

    assert due_for({**recorded, "latency_ms": 12}) == []
    another = {"answer": "Paris", "turns": [{"answer": "Hey you"}, {"answer": "Paris"}]}
    assert due_for(another) == [("turn2.correctness", None)]
