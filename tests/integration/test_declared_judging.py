"""The LLM judge grading a suite's own stages against the loopback server: GEval with the
suite's criteria (its given steps, rubric bands and the fields it reads) and the suite's own
deepeval metric classes, with real deepeval code; the lexical judge refuses them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from judge_server import (
    POISON,
    JudgeServer,
    judge_server_fixture,
    use_judge_server,
)
from judgehelpers import assert_verdict_shape, brand_voice_metric

from pytest_evalcases.judges import (
    Judge,
    JudgeConfigError,
    JudgeError,
    JudgeInput,
    RetryPolicy,
    make_judge,
)

judge_server = judge_server_fixture()

DATA = JudgeInput(
    input="Where is my order?",
    answer="It ships tomorrow, sorry for the wait.",
    reference="It ships tomorrow.",
    tool_calls=({"name": "lookup_order", "args": {"id": "A-17"}},),
)


def criteria(**spec: Any) -> dict[str, Any]:
    """Judge options declaring stage `polite` with `spec` over the defaults."""
    own = {"kind": "criteria", "criteria": "Courteous, never blames.", "reads": ["input", "answer"]}
    return {"declared": {"polite": {**own, **spec}}}


@pytest.fixture
def judge(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> Judge:
    use_judge_server(monkeypatch, judge_server)
    return make_judge("openai:gpt-4o-mini", retry=RetryPolicy(base_delay=0.001, max_delay=0.1))


@pytest.mark.asyncio
async def test_geval_grades_the_suites_criteria_on_the_fields_it_reads(
    judge: Judge, judge_server: JudgeServer
) -> None:
    verdict = await judge.evaluate("polite", DATA, criteria())
    assert_verdict_shape(verdict, judge)
    assert verdict["score"] == 0.9 and verdict["details"]["evaluation_steps"]
    steps, score = judge_server.requests
    assert (steps.kind, score.kind) == ("geval_steps", "geval_score")
    assert "Courteous, never blames." in steps.prompt
    assert "Input:\nWhere is my order?" in score.prompt
    assert "Expected Output" not in score.prompt  # not read: never shown to the judge
    bad = JudgeInput("Where is my order?", f"You typed it wrong {POISON}.", None)
    assert (await judge.evaluate("polite", bad, criteria()))["score"] == 0.2
    assert judge_server.kinds()[2:] == ["geval_score"]  # the steps drafted once per criteria
    await judge.aclose()


@pytest.mark.asyncio
async def test_given_steps_rubric_bands_and_tool_calls_reach_geval(
    judge: Judge, judge_server: JudgeServer
) -> None:
    options = criteria(
        steps=["Read the answer.", "Look for blame."],
        rubric=[
            {"score_range": [0, 4], "expected_outcome": "Blames the user."},
            {"score_range": [5, 10], "expected_outcome": "Courteous throughout."},
        ],
        reads=["answer", "tool_calls"],
    )
    verdict = await judge.evaluate("polite", DATA, options)
    assert verdict["details"]["evaluation_steps"] == ["Read the answer.", "Look for blame."]
    (score,) = judge_server.requests  # given steps: none drafted
    assert "1. Read the answer." in score.prompt and "Courteous throughout." in score.prompt
    assert "Tools Called:" in score.prompt and "lookup_order" in score.prompt
    await judge.aclose()


@pytest.mark.asyncio
async def test_the_lexical_judge_refuses_free_criteria() -> None:
    lexical = make_judge("lexical")
    for options in (criteria(), {"declared": {"polite": {"kind": "metric", "class": "m:M"}}}):
        with pytest.raises(JudgeConfigError, match="cannot grade 'polite', a stage of the suite"):
            await lexical.evaluate("polite", DATA, options)


@pytest.fixture
def metrics_module(tmp_path: Path) -> Any:
    (tmp_path / "declared_metrics_mod.py").write_text(brand_voice_metric(cost=0.5))
    yield str(tmp_path)
    sys.modules.pop("declared_metrics_mod", None)


def metric(cls: str, rootdir: str) -> dict[str, Any]:
    spec = {"kind": "metric", "class": f"declared_metrics_mod:{cls}"}
    return {"declared": {"voice": spec}, "rootdir": rootdir}


@pytest.mark.asyncio
async def test_a_suites_metric_class_runs_with_the_judges_model(
    judge: Judge, judge_server: JudgeServer, metrics_module: str
) -> None:
    verdict = await judge.evaluate("voice", DATA, metric("BrandVoice", metrics_module))
    assert_verdict_shape(verdict, judge)
    assert (verdict["score"], verdict["reason"]) == (0.8, "canned: brand voice")
    assert verdict["details"] == {
        "metric": "declared_metrics_mod:BrandVoice",
        "threshold": 0.6,
        "success": True,
    }
    assert verdict["params"] == {"metric": "declared_metrics_mod:BrandVoice"}
    (asked,) = judge_server.requests
    assert asked.kind == "own_metric" and "(tools: lookup_order)" in asked.prompt
    # its own evaluation_cost is the judge's cost too, beside the model's tokens
    assert verdict["usage"]["cost_usd"] >= 0.5 and judge.stats.cost_usd >= 0.5
    assert verdict["usage"]["prompt_tokens"] > 0
    await judge.aclose()


@pytest.mark.asyncio
async def test_any_class_with_measure_score_and_reason_is_a_metric(
    judge: Judge, judge_server: JudgeServer, metrics_module: str
) -> None:
    verdict = await judge.evaluate("voice", DATA, metric("SyncOnly", metrics_module))
    assert (verdict["score"], verdict["reason"]) == (1.0, "expected: It ships tomorrow.")
    assert verdict["details"]["threshold"] == 0.5 and judge_server.requests == []
    with pytest.raises(JudgeError, match=r"metric declared_metrics_mod:NoScore \('voice'\) left "):
        await judge.evaluate("voice", DATA, metric("NoScore", metrics_module))
    with pytest.raises(JudgeConfigError, match="cannot import metric 'declared_metrics_mod:Gone'"):
        await judge.evaluate("voice", DATA, metric("Gone", metrics_module))
    await judge.aclose()
