"""End to end (issue 20, part 3): stale messages people can act on. A long prompt's change and
a tool description's change (through `fingerprint_of`) show the words that changed, from labels
the cassette keeps; the advice offers `--replay-http` only when that can succeed (a code-only
change), never when a fingerprint changed as well."""

from __future__ import annotations

import json

import pytest
from evalhelpers import Project, error_block, make_case, suite_doc

PROMPT = (
    "You are the ShopCo support agent. Use the tools to look things up before you answer. "
    "Answer in one sentence, only from what the tools return. Never guess a number."
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_kb",
            "description": "Search the ShopCo knowledge base for policy articles; returns the "
            "best matching article ids and their text.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    }
]
# A system whose fingerprint is `fingerprint_of(TOOLS, prompt=...)`, both read from files.
AGENT_SOURCE = """\
import json
from pathlib import Path

from pytest_evalcases.adapters import fingerprint_of

from mysys import System

ROOT = Path(__file__).resolve().parent


class Agent(System):
    def fingerprint(self):
        tools = json.loads((ROOT / "tools.json").read_text())
        return fingerprint_of(tools, prompt=(ROOT / "prompt.txt").read_text(), model="echo-1")


system = Agent("agent")
"""


def stale_line(result: pytest.RunResult, case_id: str) -> str:
    block = error_block(result, f"agent::{case_id}")
    return next(line.strip() for line in block.splitlines() if "stale recording" in line)


@pytest.fixture
def agent(project: Project) -> Project:
    project.write_text("agent.py", AGENT_SOURCE)
    project.write_text("prompt.txt", PROMPT)
    project.write_text("tools.json", json.dumps(TOOLS))
    project.write_suite(
        suite_doc("agent", system="agent:system", cases=[make_case("alpha", "alpha beta")])
    )
    project.run("--live").assert_outcomes(passed=1)
    return project


def test_a_long_prompt_change_names_the_words_and_advises_live(agent: Project) -> None:
    labels = agent.cassette("agent", "alpha")["labels"]["key"]
    assert labels["fingerprint.prompt"] == json.dumps(PROMPT)  # the text, for a word diff

    agent.write_text("prompt.txt", PROMPT.replace("one sentence", "two short sentences"))
    result = agent.run()

    result.assert_outcomes(errors=1)
    assert stale_line(result, "alpha") == (
        'stale recording: fingerprint.prompt changed: "…Answer in one sentence, only from…" -> '
        '"…Answer in two short sentences, only from…"; re-record with --live'
    )


def test_a_tool_description_change_names_its_words(agent: Project) -> None:
    edited = json.loads(json.dumps(TOOLS))
    function = edited[0]["function"]
    function["description"] = function["description"].replace("knowledge base", "help center")
    agent.write_text("tools.json", json.dumps(edited))

    result = agent.run()

    result.assert_outcomes(errors=1)
    assert stale_line(result, "alpha") == (
        "stale recording: fingerprint.tool.search_kb changed: description "
        '"…the ShopCo knowledge base for policy…" -> "…the ShopCo help center for policy…"; '
        "re-record with --live"
    )


def test_the_advice_offers_replay_http_only_when_it_can_succeed(agent: Project) -> None:
    source = (agent.root / "agent.py").read_text()
    agent.write_text("agent.py", source.replace('Agent("agent")', 'Agent(name="agent")'))

    code_only = agent.run()

    code_only.assert_outcomes(errors=1)
    line = stale_line(code_only, "alpha")
    assert line.startswith("stale recording: code.agent changed (")
    assert line.endswith("re-record with --live, or check it offline with --replay-http")
    agent.run("--replay-http").assert_outcomes(passed=1)  # the advice holds

    agent.write_text("prompt.txt", PROMPT + " Be kind.")
    both = agent.run()

    both.assert_outcomes(errors=1)
    line = stale_line(both, "alpha")
    assert "code.agent changed (" in line and "fingerprint.prompt changed: " in line
    assert line.endswith("; re-record with --live") and "--replay-http" not in line
    # ... and --replay-http would indeed refuse it, on the fingerprint
    refused = agent.run("--replay-http")
    refused.assert_outcomes(errors=1)
    assert "fingerprint.prompt changed: " in stale_line(refused, "alpha")


def test_a_live_run_adds_missing_labels_and_changes_nothing_else(agent: Project) -> None:
    """A cassette recorded before labels gets them from a --live that changes nothing else: the
    old recording (timings, recorded_at) is kept, so the diff holds the labels alone; a second
    --live leaves it byte for byte."""
    path = agent.cassette_path("agent", "alpha")
    doc = json.loads(path.read_text())
    labels = doc.pop("labels")
    doc["recorded_at"] = "2020-01-01T00:00:00Z"
    doc["trace"]["latency_ms"] = 12345.0  # not in integrity's trace hash: a timing
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")

    relabelled = agent.run("--live")

    relabelled.assert_outcomes(passed=1)
    assert "labels added" in relabelled.stdout.str()
    assert agent.cassette("agent", "alpha") == {**doc, "labels": labels}
    before = path.read_bytes()
    again = agent.run("--live")
    again.assert_outcomes(passed=1)
    assert "1 unchanged, 0 changed" in again.stdout.str() and path.read_bytes() == before
