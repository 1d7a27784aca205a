"""The rubric stage's half scale (`"rubric": {"scale": "half"}`): the LLM judge against the
loopback judge server (0.5 grades scripted, a 0.7 refused), and a suite recorded on the binary
scale, stale once it asks for the half scale, re-judged and replayed with a half grade in
results.json."""

from __future__ import annotations

import json
from typing import Any

import pytest
from evalhelpers import Project, assert_not_aborted, error_block, output
from judge_server import (
    BORDERLINE,
    OFF_SCALE,
    POISON,
    JudgeServer,
    judge_server_fixture,
    use_judge_server,
)
from judgehelpers import RecordingSleep, assert_verdict_shape

from pytest_evalcases.judges import JudgeError, JudgeInput, RetryPolicy, make_judge

judge_server = judge_server_fixture()

HALF = {"rubric_scale": "half"}


@pytest.fixture
def openai_env(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:
    return use_judge_server(monkeypatch, judge_server)


def llm_judge() -> Any:
    retry = RetryPolicy(base_delay=0.001, max_delay=0.01, sleep=RecordingSleep())
    return make_judge("openai:gpt-4o-mini", retry=retry)


def rubric_input(*items: tuple[str, float]) -> JudgeInput:
    return JudgeInput(
        input="What is the capital of France?",
        answer="Paris is the capital of France.",
        reference=None,
        rubric=items,
    )


@pytest.mark.asyncio
async def test_llm_judge_grades_each_item_0_half_or_1(openai_env: JudgeServer) -> None:
    judge = llm_judge()
    data = rubric_input(
        ("names Paris as the capital", 1.0),
        (f"gives the population {BORDERLINE}", 2.0),
        (f"describes the moon {POISON}", 1.0),
    )
    verdict = await judge.evaluate("rubric", data, HALF)
    await judge.aclose()

    assert_verdict_shape(verdict, judge)
    assert [item["grade"] for item in verdict["details"]["items"]] == [1.0, 0.5, 0.0]
    assert verdict["score"] == 0.5  # (1*1 + 2*0.5 + 1*0) / 4
    assert verdict["params"] == {"scale": "half"}
    assert verdict["reason"].startswith("1.5 of 3 rubric items' credit; 0.5 partly: gives the")
    assert openai_env.kinds() == ["rubric_item_half"] * 3  # one request per item
    prompt = openai_env.requests[0].prompt
    assert '"grade": 0 or 0.5 or 1' in prompt and "0.5: the answer partly meets" in prompt


@pytest.mark.asyncio
async def test_llm_judge_refuses_a_grade_off_the_scale(openai_env: JudgeServer) -> None:
    judge = llm_judge()
    data = rubric_input(("names Paris as the capital", 1.0), (f"gives a figure {OFF_SCALE}", 1.0))
    with pytest.raises(JudgeError, match="grade must be 0, 0.5 or 1, not 0.7"):
        await judge.evaluate("rubric", data, HALF)
    await judge.aclose()
    assert judge.stats.failures == 1


@pytest.mark.asyncio
async def test_llm_judge_binary_scale_sends_the_binary_prompt(openai_env: JudgeServer) -> None:
    judge = llm_judge()
    verdict = await judge.evaluate("rubric", rubric_input(("names Paris", 1.0)), {})
    await judge.aclose()
    assert openai_env.kinds() == ["rubric_item"] and verdict["params"] == {}
    assert verdict["details"]["items"][0]["met"] is True


SYSTEM = """\
def run(case):
    return {"answer": "Paris is the capital of France; about two million people live there."}
"""

# Content words ("states", "gives": meta words): item 1 paris, capital (all present: 1); item 2
# population, paris, million, 2024 (paris and million: half, 0.5 on the half scale, unmet on the
# binary one)
RUBRIC = [
    "states Paris is the capital",
    {"item": "gives the population of Paris in millions for 2024", "weight": 3},
]


def suite(**fields: Any) -> dict[str, Any]:
    return {
        "name": "geo",
        "system": "geosys:run",
        "judge": "lexical",
        "stages": ["rubric"],
        "threshold": 0.6,
        "cases": [{"id": "paris", "input": "Tell me about Paris.", "rubric": RUBRIC}],
        **fields,
    }


def test_binary_verdict_stale_on_the_half_scale_then_half_grade_replayed(
    project: Project,
) -> None:
    project.write_text("geosys.py", SYSTEM)
    project.write_suite(suite())
    assert_not_aborted(project.run("--live", "-p", "no:cacheprovider"))
    binary = project.run("-p", "no:cacheprovider")
    binary.assert_outcomes(failed=1)  # 1 of 4 weight met: 0.25
    assert "0.25 < 0.60 (1 of 2 items met); unmet: gives the population" in error_block(
        binary, "paris"
    )

    project.edit_suite("cases/geo.json", lambda doc: doc.update(rubric={"scale": "half"}))
    stale = project.run("-p", "no:cacheprovider")
    assert "rubric.scale added (- -> half)" in output(stale)
    assert "stale" in error_block(stale, "paris").lower()

    assert_not_aborted(project.run("--live-judges", "-p", "no:cacheprovider"))
    verdict = project.cassette("geo", "paris")["verdicts"]["rubric"]
    assert [item["grade"] for item in verdict["details"]["items"]] == [1.0, 0.5]
    replayed = project.run("-p", "no:cacheprovider", "--eval-report", "out")
    replayed.assert_outcomes(passed=1)  # (1*1 + 3*0.5) / 4 = 0.625
    assert "replayed" in output(replayed)
    result = json.loads((project.root / "out" / "results.json").read_text())["cases"][0]
    rubric = result["stages"]["rubric"]
    assert rubric["score"] == 0.625 and rubric["passed"] is True
    assert rubric["reason"] == (
        "0.62 >= 0.60 (1 of 2 items met, 1 partly); 0.5 partly: gives the population of Paris "
        "in millions for 2024"
    )

    project.edit_suite("cases/geo.json", lambda doc: doc.pop("rubric"))
    back = project.run("-p", "no:cacheprovider")
    assert "rubric.scale removed (half -> -)" in output(back)
