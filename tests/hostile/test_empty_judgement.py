"""No pass from an empty judgement (issue 21, "What to build" 5): a judge reply that is valid for
its schema but empty where the metric needs content is a judge error (an error verdict, recorded
as pending), never a score, let alone a pass.

Through deepeval's real metric code and our graders against the loopback judge server
(tests/judge_server.py), scripted to answer one kind of prompt emptily. No network beyond
127.0.0.1, no real key.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from evalhelpers import Project, assert_not_aborted, error_block, run_live_openai
from judge_server import (
    Fault,
    JudgeServer,
    judge_maker_fixture,
    judge_server_fixture,
    use_judge_server,
)

from pytest_evalcases.judges import JudgeError, JudgeInput

judge_server = judge_server_fixture()
judges = judge_maker_fixture()

CASE = JudgeInput(
    input="What is the capital of France?",
    answer="Paris is the capital of France. It has many museums.",
    reference="Paris is the capital of France. It is in Europe.",
    context=["Paris is the capital of France.", "France is in Europe."],
    rubric=(("names Paris", 1.0),),
)
EVERY_PROMPT = ""  # a rule phrase found in every prompt


@pytest.fixture
def server(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:
    return use_judge_server(monkeypatch, judge_server)


SYSTEM = """\
def run(case):
    return {"answer": case["say"], "context": ["Paris is the capital of France."]}
"""


def test_a_geval_reply_with_no_evaluation_steps_never_passes_live_or_replayed(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    """Break: a judge that returns a schema-valid GEval reply with an empty `evaluation_steps`
    list scores `correctness` 0.9: 3 of 3 cases PASS (live and replay) when it is the only
    stage."""
    judge_server.rules = [({"geval_steps"}, EVERY_PROMPT, Fault("empty"))]
    cases = [
        {"id": f"c{i}", "input": "Which city?", "say": "Paris.", "reference": "Paris."}
        for i in range(3)
    ]
    project = Project(tmp_path).write_base()
    project.write_text("saying.py", SYSTEM)
    project.write_suite(
        {"name": "judged", "system": "saying:run", "stages": ["correctness"], "cases": cases}
    )

    live = run_live_openai(project, judge_server.base_url)

    assert_not_aborted(live)
    live.assert_outcomes(errors=3)  # not evaluated: errors, never passes
    block = error_block(live, "judged::c0")
    assert "correctness (judge error:" in block and "no evaluation steps" in block, block
    for case in ("c0", "c1", "c2"):
        verdict = project.cassette("judged", case)["verdicts"]["correctness"]
        assert verdict["pending"] is True and verdict["score"] is None, verdict
        assert "no evaluation steps" in verdict["error"]

    replay = project.run()
    assert_not_aborted(replay)
    assert replay.parseoutcomes().get("passed", 0) == 0, replay.outlines[-5:]
    replay.assert_outcomes(errors=3)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("stage", "kind", "fault", "message"),
    [
        pytest.param(
            "correctness",
            "geval_score",
            "blank",
            "the judge returned an empty reason (correctness)",
            id="geval-score-without-reason",
        ),
        pytest.param(
            "faithfulness",
            "faithfulness_verdicts",
            "short",
            "the judge returned 1 verdicts for 2 claims (faithfulness)",
            id="faithfulness-verdicts-short",
        ),
        pytest.param(
            "answer_relevancy",
            "answer_relevancy_verdicts",
            "short",
            "the judge returned 1 verdicts for 2 statements (answer_relevancy)",
            id="answer-relevancy-verdicts-short",
        ),
        pytest.param(
            "contextual_precision",
            "precision_verdicts",
            "short",
            "the judge returned 1 verdicts for 2 passages (contextual_precision)",
            id="precision-verdicts-short",
        ),
        pytest.param(
            "faithfulness",
            "faithfulness_reason",
            "blank",
            "the judge returned an empty reason (faithfulness)",
            id="metric-reason-empty",
        ),
        pytest.param(
            "context_completeness",
            "completeness",
            "empty",
            "the judge returned COMPLETE with no present element (context_completeness)",
            id="complete-with-no-present-element",
        ),
        pytest.param(
            "context_completeness",
            "completeness",
            "blank",
            "the judge returned an empty reason (context_completeness)",
            id="completeness-without-reason",
        ),
        pytest.param(
            "answer_accuracy",
            "accuracy",
            "blank",
            "the judge returned an empty reason (answer_accuracy)",
            id="accuracy-without-reason",
        ),
        pytest.param(
            "rubric",
            "rubric_item",
            "blank",
            "the judge returned an empty reason (rubric)",
            id="rubric-item-without-reason",
        ),
    ],
)
async def test_an_empty_or_short_judged_reply_is_a_judge_error(
    server: JudgeServer, judges: Any, stage: str, kind: str, fault: Any, message: str
) -> None:
    """Break (the audit of every judge parser for the same): a judged reply whose required
    content is empty (a reason, the elements a label claims) or a verdict list shorter than
    the items it judges was recorded as a score (1.0 for the verdicts kept)."""
    server.rules = [({kind}, EVERY_PROMPT, Fault(fault))]
    judge = judges()
    with pytest.raises(JudgeError, match=re.escape(message)):
        await judge.evaluate(stage, CASE, {})
    assert judge.stats.failures == 1
    assert any(r.kind == kind and r.fault == fault for r in server.requests)
