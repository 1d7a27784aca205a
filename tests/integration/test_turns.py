"""Conversation cases end to end: `"turns"`, `run_turn(case, history)` or `run(case)` returning
one trace per turn, per-turn stages and verdicts, the first failing turn, the key over the
whole conversation, and results.json's turns."""

from __future__ import annotations

import json

from evalhelpers import Project, output

BOT = '''\
"""A support bot that must remember the order id of an earlier turn (unless told to forget)."""
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent
ORDER = re.compile(r"A-[0-9]+")


def steer():
    path = ROOT / "behaviour.json"
    return json.loads(path.read_text()) if path.exists() else {}


def log(line):
    with open(ROOT / "calls.log", "a") as handle:
        handle.write(line + "\\n")


def answer(message, history):
    said = [h["content"] for h in history if h["role"] == "user"]
    if steer().get("forget"):
        said = []
    orders = ORDER.findall(message) or [o for text in reversed(said) for o in ORDER.findall(text)]
    calls, outputs = [], []
    if "cancel" in message:
        calls.append({"name": "search_kb", "args": {"query": "cancel"}})
        outputs.append({"tool": "search_kb", "content": "Orders can be cancelled before shipping."})
    if orders:
        calls.append({"name": "get_order", "args": {"order_id": orders[0]}})
        outputs.append({"tool": "get_order", "content": orders[0] + " is processing"})
    text = "; ".join(out["content"] for out in outputs) or "How can I help?"
    return {"answer": text, "tool_calls": calls, "tool_outputs": outputs,
            "usage": {"prompt_tokens": 10, "completion_tokens": 2}}


class TurnBot:
    def run(self, case):
        raise AssertionError("run_turn is preferred for a conversation")

    def run_turn(self, case, history):
        assert history == case.history and case.turns[-1] == case.input
        log(f"turn {case.id} {len(history)} {case.input}")
        return answer(case.input, history)


class ListBot:
    def run(self, case):
        if steer().get("not_a_list"):
            return answer(case.input, [])
        history, traces = [], []
        for message in case.turns:
            trace = answer(message, history)
            traces.append(trace)
            history += [{"role": "user", "content": message},
                        {"role": "assistant", "content": trace["answer"]}]
        return traces


turn_bot = TurnBot()
list_bot = ListBot()
'''

CONVERSATION = {
    "id": "cancel-order",
    "category": "orders",
    "turns": [
        {"input": "Where is my order A-1001?", "expected_tools": ["get_order"]},
        {
            "input": "Can I still cancel it?",
            "expected_tools": ["search_kb", "get_order"],
            "tool_order": "strict",
        },
    ],
}


def write_project(project: Project, system: str = "bot:turn_bot", **suite: object) -> None:
    project.write_text("bot.py", BOT)
    doc = {
        "name": "support",
        "system": system,
        "stages": ["tools", "answer_relevancy"],
        "judge": "lexical",
        "cases": [CONVERSATION],
        **suite,
    }
    project.write_suite(doc)


def test_run_turn_drives_the_conversation_and_the_cassette_keeps_every_turn(
    project: Project,
) -> None:
    write_project(project)

    recorded = project.run("--live")
    replayed = project.run()

    assert recorded.ret == 0, output(recorded)
    assert project.calls() == [
        "turn cancel-order 0 Where is my order A-1001?",
        "turn cancel-order 2 Can I still cancel it?",
    ]
    doc = project.cassette("support", "cancel-order")
    turns = doc["trace"]["turns"]
    assert [t["tool_calls"] for t in turns] == [
        [{"name": "get_order", "args": {"order_id": "A-1001"}}],
        [
            {"name": "search_kb", "args": {"query": "cancel"}},
            {"name": "get_order", "args": {"order_id": "A-1001"}},
        ],
    ]
    assert doc["trace"]["answer"] == turns[1]["answer"]
    assert doc["trace"]["usage"] == {"prompt_tokens": 20, "completion_tokens": 4}
    # both turns have expectations: each gets its own verdict
    assert sorted(doc["verdicts"]) == ["turn1.answer_relevancy", "turn2.answer_relevancy"]
    assert replayed.ret == 0, output(replayed)
    replayed.assert_outcomes(passed=1)


def test_the_case_fails_at_its_first_failing_turn_and_stage(project: Project) -> None:
    write_project(project)
    project.steer(forget=True)

    result = project.run("--live", "--eval-report", "out")

    assert result.ret == 1
    text = output(result)
    assert "first failing stage: turn 2 tools (missing: get_order)" in text
    assert "turn 1 tools" in text and "turn 2 answer_relevancy" in text  # the per-turn table
    assert "turn 2 tools: missing: get_order" in text  # the summary's first-failure column
    case = json.loads((project.root / "out" / "results.json").read_text())["cases"][0]
    assert case["first_failure"] == {
        "stage": "tools",
        "turn": 2,
        "reason": "missing: get_order",
        # what turn 2 called beside what it expected, and turn 2's answer
        "details": [
            ["called", "search_kb(query='cancel')"],
            ["expected", "search_kb, get_order (in this order)"],
            ["answer", "'Orders can be cancelled before shipping.'"],
        ],
    }
    assert [t["turn"] for t in case["turns"]] == [1, 2]
    assert case["turns"][0]["stages"]["tools"]["passed"] is True
    assert case["turns"][1]["stages"]["tools"]["passed"] is False
    assert case["stages"]["tools"]["reason"] == "turn 2: missing: get_order"
    dashboard = (project.root / "out" / "dashboard.html").read_text()
    assert "turn 2 tools" in dashboard and "assistant: A-1001 is processing" in dashboard


def test_the_key_covers_the_whole_conversation_and_expectations_stay_out(
    project: Project,
) -> None:
    write_project(project)
    assert project.run("--live").ret == 0

    def reorder(doc: dict) -> None:  # an expectation edit: re-scored, never stale
        doc["cases"][0]["turns"][1]["expected_tools"] = ["get_order", "search_kb"]

    project.edit_suite("cases/support.json", reorder)
    rescored = project.run()
    project.edit_suite(
        "cases/support.json",
        lambda doc: doc["cases"][0]["turns"][1].update(input="Cancel it, please"),
    )
    stale = project.run()

    assert rescored.ret == 1  # strict order: get_order was called second
    assert "turn 2 tools (out of order: search_kb" in output(rescored)
    assert stale.ret == 1 and "stale recording" in output(stale)
    assert "case changed" in output(stale)


def test_run_returning_one_trace_per_turn(project: Project) -> None:
    write_project(project, system="bot:list_bot")
    assert project.run("--live").ret == 0
    assert project.run().ret == 0
    project.steer(not_a_list=True)

    broken = project.run("--live")

    assert broken.ret == 1
    assert (
        "a conversation case of 2 turns needs one trace per turn from run(case), a list "
        "of 2; it returned dict"
    ) in output(broken)


def test_the_last_turn_takes_the_case_expectations(project: Project) -> None:
    case = {
        "id": "remember",
        "turns": ["Where is A-7?", "And can I cancel it?"],
        "expected_tools": ["search_kb", "get_order"],
        "max_tool_calls": {"get_order": 1},
    }
    project.write_text("bot.py", BOT)
    project.write_suite(
        {"name": "support", "system": "bot:turn_bot", "stages": ["tools"], "cases": [case]}
    )

    result = project.run("--live", "--eval-report", "out")

    assert result.ret == 0, output(result)
    results = json.loads((project.root / "out" / "results.json").read_text())["cases"][0]
    assert [t["turn"] for t in results["turns"]] == [2]  # turn 1 has no expectations


BAD_CONVERSATIONS = [
    ({"id": "both", "input": "x", "turns": ["y"]}, 'remove "input"'),
    ({"id": "empty", "turns": []}, "turns: List should have at least 1 item"),
    ({"id": "typo", "turns": [{"input": "x", "expected_tool": ["a"]}]}, "expected_tool"),
]


def test_bad_conversations_are_named_each_on_its_case(project: Project) -> None:
    project.write_text("bot.py", BOT)
    cases = [case for case, _ in BAD_CONVERSATIONS] + [{"id": "fine", "turns": ["Hi"]}]
    project.write_suite(
        {"name": "support", "system": "bot:turn_bot", "stages": ["tools"], "cases": cases}
    )

    result = project.run("--live")

    text = output(result)
    assert result.ret == 1
    result.assert_outcomes(passed=1, errors=3)
    for case, message in BAD_CONVERSATIONS:
        assert message in text, (case, text)


def test_recorded_verdicts_of_each_turn_stay_valid_and_replay_http_runs_the_turns(
    project: Project,
) -> None:
    write_project(project)
    assert project.run("--live").ret == 0
    before = project.cassette("support", "cancel-order")

    judged = project.run("--live-judges")  # every turn's verdict is current: nothing to judge
    offline = project.run("--replay-http")  # today's code, turn by turn

    assert judged.ret == 0 and "1 replayed" in output(judged), output(judged)
    assert project.cassette("support", "cancel-order") == before
    assert offline.ret == 0, output(offline)
    assert project.calls()[-2:] == [
        "turn cancel-order 0 Where is my order A-1001?",
        "turn cancel-order 2 Can I still cancel it?",
    ]


HISTORY_BOT = """\
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent


class Bot:
    def run(self, case):
        raise AssertionError("run_turn is preferred for a conversation")

    def run_turn(self, case, history):
        if history:
            return {"answer": "Yes, you can return it within the window."}
        steer = ROOT / "behaviour.json"
        first = json.loads(steer.read_text())["first"] if steer.exists() else "Thirty days."
        return {"answer": first}


bot = Bot()
"""


def test_replay_http_re_judges_a_turn_whose_earlier_turns_changed(project: Project) -> None:
    """A turn's relevancy verdict was judged with the conversation before it: when today's
    code answers an earlier turn differently, the verdict no longer holds, even though the
    turn's own answer is the same; --replay-http --live-judges judges it again."""
    project.write_text("bot.py", HISTORY_BOT)
    project.write_suite(
        {
            "name": "s",
            "system": "bot:bot",
            "stages": ["answer_relevancy"],
            "judge": "lexical",
            "cases": [{"id": "c", "turns": ["What is the refund window?", "Can I return it?"]}],
        }
    )
    assert project.run("--live").ret == 0
    project.write_text("behaviour.json", json.dumps({"first": "It is sunny today."}))

    offline = project.run("--replay-http")
    assert offline.ret != 0, output(offline)
    assert "needs re-judging: the conversation before it changed" in output(offline)

    judged = project.run("--replay-http", "--live-judges")
    assert judged.ret == 0, output(judged)
    assert project.run("--replay-http").ret == 0
