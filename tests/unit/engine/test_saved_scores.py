"""A live case is scored once (issue 28): the scores of the recording a live run saved are what
the recording changes, the -x / --maxfail count and the item read; a replay scores in the item."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_evalcases.core.schema import Case
from pytest_evalcases.domain import scoring
from pytest_evalcases.domain.context import SuiteContext
from pytest_evalcases.engine import case_scores as case_scores_module
from pytest_evalcases.engine.case_scores import SavedScores, scores_of
from pytest_evalcases.engine.limits import fails_without_judge
from pytest_evalcases.engine.recording import LiveRecording, Recording
from pytest_evalcases.engine.save import stage_scores
from pytest_evalcases.store.cassette import Run, build_cassette

from .geo_suite import KEY, TRACE, verdicts


def test_a_saved_recording_is_scored_once(
    monkeypatch: pytest.MonkeyPatch, ctx: SuiteContext, case: Case
) -> None:
    calls: list[int] = []

    def counted(*args: Any) -> scoring.RecordingScores:
        calls.append(1)
        return scoring.score_each_run(*args)

    monkeypatch.setattr(case_scores_module, "score_each_run", counted)
    later = [{"trace": {**TRACE, "answer": "Lyon"}, "verdicts": verdicts(ctx, case)}]
    doc = build_cassette("geo", case.id, KEY, TRACE, verdicts(ctx, case), later_runs=later)
    saved = SavedScores(ctx, case, doc)
    assert calls == []  # nothing is scored until something asks
    # the recording changes read each run of the new recording from it...
    run_one, run_two = doc.runs
    assert stage_scores(ctx, case, run_one, saved) == stage_scores(ctx, case, run_one)
    assert stage_scores(ctx, case, run_two, saved)["exact_match"] == (False, 0.0)
    assert saved.of_run(run_two) is saved.get().each_run[1]
    # ...the -x count and the item read the same scores
    recording = LiveRecording(
        doc.trace, doc.verdicts, "recorded", later_runs=doc.later_runs_doc, scoring=saved
    )
    shown, runs = scores_of(ctx, case, recording)
    assert calls == [1]
    assert shown is saved.get().shown and runs is not None and runs["passed"] == [True, False]
    assert (shown, runs) == (saved.get().each_run[1], saved.get().runs)
    # as the suite scores it anywhere else
    expected, expected_runs = scoring.score_recording(
        ctx, case, doc.trace, doc.verdicts, doc.later_runs_doc
    )
    assert runs == expected_runs
    assert [r.passed for _, r, _ in shown.results] == [r.passed for _, r, _ in expected.results]
    # another recording's run (the old one, in a diff) is not taken for one of its own
    assert saved.of_run(Run(dict(TRACE), doc.verdicts)) is None
    assert calls == [1]


def test_a_replay_is_scored_in_the_item(ctx: SuiteContext, case: Case) -> None:
    replayed = Recording({**TRACE, "answer": "Lyon"}, verdicts(ctx, case), "replayed")
    shown, runs = scores_of(ctx, case, replayed)
    assert runs is None
    assert shown.first_failure is not None and shown.first_failure[0] == "exact_match"


def test_a_plain_stage_fails_before_the_judge(ctx: SuiteContext, case: Case) -> None:
    # the judged stages have no verdict yet: they are skipped, never counted as failures
    assert not fails_without_judge(ctx, case, dict(TRACE))
    assert fails_without_judge(ctx, case, {**TRACE, "answer": "Lyon"})
