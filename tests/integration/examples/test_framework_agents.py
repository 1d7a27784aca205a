"""The LangGraph and pydantic-ai examples: their recordings replay, a conversation case needs
the agent's memory, and a tool description edit stales the recording by the tool's name."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from evalhelpers import output, run_pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def copy_example(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(
        EXAMPLES / name, target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache")
    )
    return target


@pytest.mark.parametrize("name, cases", [("langgraph-agent", 6), ("pydantic-ai-agent", 5)])
def test_the_example_replays_its_recordings(name: str, cases: int, tmp_path: Path) -> None:
    root = copy_example(name, tmp_path)

    result = run_pytest(root, "-p", "no:cacheprovider")

    assert result.ret == 0, output(result)
    result.assert_outcomes(passed=cases)


def test_a_tool_description_edit_is_named_as_the_tool(tmp_path: Path) -> None:
    root = copy_example("langgraph-agent", tmp_path)
    tools = root / "rental_agent" / "tools.py"
    tools.write_text(
        tools.read_text().replace(
            "Search the Pedalworks help articles", "Search the Pedalworks articles"
        )
    )

    result = run_pytest(root, "-p", "no:cacheprovider", "cases/rentals.json::late-fee")

    assert result.ret == 1
    assert "fingerprint.tool.search_kb changed" in output(result)


def test_the_conversation_fails_at_turn_2_when_the_agent_forgets(tmp_path: Path) -> None:
    """Without the earlier turns, "Can I still renew that loan?" names no loan: no get_loan."""
    root = copy_example("pydantic-ai-agent", tmp_path)
    system = root / "library_agent" / "system.py"
    system.write_text(system.read_text().replace("message_history=earlier", "message_history=[]"))

    result = run_pytest(root, "-p", "no:cacheprovider", "--live", "-k", "renew-overdue")

    assert result.ret == 1
    assert "first failing stage: turn 2 tools (missing: get_loan)" in output(result)
